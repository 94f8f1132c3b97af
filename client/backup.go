package client

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Backup downloads a backup of the cluster's state (GET /v1/backup, which needs the
// admin right) and writes the backup file to w as it arrives: the header, then the state.
// It verifies the file while streaming (magic, header, size, SHA-256) and returns the
// header; on any error, what was written to w must be discarded, so write to a temporary
// file and rename it only on success.
//
// Until an endpoint starts answering, unavailable endpoints and no_leader answers are
// retried on the other endpoints, as other calls are. Once the backup is streaming it is
// not retried: the caller's context bounds it (the client's attempt timeout bounds only
// the wait for the answer to start). The backup holds every lease ID and any ACL token
// hashes: keep it private.
func (c *Client) Backup(ctx context.Context, w io.Writer) (api.BackupHeader, error) {
	const op = "backup"
	backoff := c.minBackoff
	var last error
	for {
		for i := range c.endpoints {
			ep := (c.getPreferred() + i) % len(c.endpoints)
			resp, err := c.startBackup(ctx, ep, "/v1/backup")
			if errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
				// A server of an earlier release knows the route by its older name.
				resp, err = c.startBackup(ctx, ep, "/v1/snapshot")
			}
			if err == nil {
				defer resp.Body.Close()
				return readBackup(resp.Body, w, c.endpoints[ep])
			}
			if !retryable(err) {
				return api.BackupHeader{}, err
			}
			if ctx.Err() != nil {
				return api.BackupHeader{}, c.ctxErr(ctx, op, last)
			}
			last = err
			c.log.Debug("backup: trying the next endpoint", "endpoint", c.endpoints[ep], "error", err)
		}
		if !sleep(ctx, upperHalf(backoff)) {
			return api.BackupHeader{}, c.ctxErr(ctx, op, last)
		}
		backoff = min(2*backoff, c.maxBackoff)
	}
}

// Snapshot is Backup under its older name.
//
// Deprecated: use Backup.
func (c *Client) Snapshot(ctx context.Context, w io.Writer) (api.BackupHeader, error) {
	return c.Backup(ctx, w)
}

// startBackup sends GET path to endpoint ep and returns the response once a 200 has
// started; any other answer is returned as a client error.
func (c *Client) startBackup(ctx context.Context, ep int, path string) (*http.Response, error) {
	base := c.endpoints[ep]
	sctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(c.timeout, cancel) // only until the answer starts
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, base+path, nil)
	if err != nil {
		timer.Stop()
		cancel()
		return nil, wrap(ErrInvalid, err, "backup: building the request")
	}
	req.Header.Set("Accept", api.BackupContentType+", application/json")
	c.authorize(req)
	resp, err := c.hc.Do(req)
	started := timer.Stop()
	if err != nil {
		cancel()
		err = transportCause(err)
		return nil, wrap(ErrUnavailable, err, "backup: %s: %v", base, err)
	}
	if !started {
		resp.Body.Close()
		cancel()
		return nil, wrap(ErrUnavailable, context.DeadlineExceeded, "backup: %s did not start answering within %v", base, c.timeout)
	}
	if leader := resp.Header.Get(leaderHeader); leader != "" {
		c.noteLeader(leader)
	}
	if resp.StatusCode == http.StatusOK {
		resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	defer cancel()
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ae, ok := apiError(data)
	if !ok {
		if resp.StatusCode >= 500 {
			return nil, wrap(ErrUnavailable, nil, "backup: %s answered %s", base, resp.Status)
		}
		return nil, wrap(ErrServer, nil, "backup: %s answered %s: %.200q", base, resp.Status, data)
	}
	return nil, answerError("backup", ae, resp)
}

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// readBackup copies a backup from body to w, verifying it on the way.
func readBackup(body io.Reader, w io.Writer, base string) (api.BackupHeader, error) {
	// Everything read from the body reaches w, in order, whatever bufio reads ahead.
	br := bufio.NewReader(io.TeeReader(body, w))
	h, err := api.ReadBackupHeader(br)
	if err != nil {
		return h, wrap(ErrServer, err, "backup: %s: %v", base, err)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, io.LimitReader(br, h.Size))
	if err != nil {
		return h, wrap(ErrUnavailable, err, "backup: %s: copying the backup failed after %d of %d state bytes: %v", base, n, h.Size, err)
	}
	if n != h.Size {
		return h, wrap(ErrUnavailable, api.ErrBadBackup, "backup: %s: the backup ended after %d of %d state bytes", base, n, h.Size)
	}
	if extra, _ := io.Copy(io.Discard, br); extra != 0 {
		return h, wrap(ErrServer, api.ErrBadBackup, "backup: %s sent %d bytes after the state", base, extra)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != h.SHA256 {
		return h, wrap(ErrServer, api.ErrBadBackup, "backup: %s: checksum mismatch: the state hashes to %s, the header says %s", base, got, h.SHA256)
	}
	return h, nil
}
