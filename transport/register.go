package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
)

// registerLoop makes sure the state machine knows this node's HTTP address and the
// protocol version it speaks, so that other nodes can forward to it when it leads and the
// leader can raise the cluster's version. The leader registers itself when it takes
// office; a follower asks the leader (PUT /v1/cluster/nodes/{id}/version, then
// POST /v1/cluster/nodes). While something is left to register it asks again soon (from
// 10 ms, doubling up to RegisterInterval, and at once when the leader changes): the first
// leader of a fresh cluster waits for the versions before it serves.
func (s *Server) registerLoop(ctx context.Context) {
	members, routing := s.svc.Registrar, s.svc.Routing
	const firstRetry = 10 * time.Millisecond
	retry := firstRetry
	for {
		_, changed := routing.LeaderWatch()
		pending := false
		leader := routing.LeaderHTTPAddr()
		self := members.Self()
		asLeader := routing.IsLeader() || leader == "" || leader == self.HTTPAddr
		// The version first: an HTTP registration refused (ACLs without TLS) must not
		// hold it back, and the leader of a fresh cluster is waiting for it.
		if members.NeedsVersionRegistration() && !routing.IsLeader() {
			pending = true
			if !asLeader {
				err := putJSON(ctx, s.fwd, s.cfg.NodeToken, s.scheme()+leader+"/v1/cluster/nodes/"+url.PathEscape(self.ID)+"/version", api.NodeVersionRequest{MaxVersion: members.MaxVersion()})
				if err != nil {
					s.log.Debug("registering the protocol version with the leader failed; will retry", "leader", leader, "error", err)
				} else {
					s.log.Info("registered protocol version with the leader", "max_version", members.MaxVersion())
				}
			}
		}
		if members.NeedsRegistration() && !routing.IsLeader() {
			pending = true
			if !asLeader {
				err := postNode(ctx, s.fwd, s.cfg.NodeToken, s.scheme()+leader, api.AddNodeRequest{ID: self.ID, RaftAddr: self.RaftAddr, HTTPAddr: self.HTTPAddr, Registration: true})
				if err != nil {
					s.log.Debug("registering with the leader failed; will retry", "leader", leader, "error", err)
				} else {
					s.log.Info("registered HTTP address with the leader", "http_addr", self.HTTPAddr)
				}
			}
		}
		wait := s.cfg.RegisterInterval
		if pending {
			wait = min(retry, wait)
			retry = min(2*retry, s.cfg.RegisterInterval)
		} else {
			retry = firstRetry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-changed:
			retry = firstRetry
		case <-t.C:
		}
		t.Stop()
	}
}

func postNode(ctx context.Context, c *http.Client, token, base string, req api.AddNodeRequest) error {
	return sendJSON(ctx, c, token, http.MethodPost, strings.TrimRight(base, "/")+"/v1/cluster/nodes", req)
}

func putJSON(ctx context.Context, c *http.Client, token, url string, v any) error {
	return sendJSON(ctx, c, token, http.MethodPut, url, v)
}

// sendJSON sends v to url and turns any non-200 answer into an error naming its code.
func sendJSON(ctx context.Context, c *http.Client, token, method, url string, v any) error {
	body, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	if token != "" {
		hr.Header.Set(api.AuthorizationHeader, "Bearer "+token)
	}
	resp, err := c.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		return fmt.Errorf("transport: %s %s answered %d %s: %s", method, hr.URL.Redacted(), resp.StatusCode, eb.Error.Code, eb.Error.Message)
	}
	return nil
}

// Join asks an existing cluster, through any of its nodes at joinURL, to add this node as
// a voter. It retries with backoff until it succeeds or ctx ends, logging each attempt.
// With tlsCfg (the node's peer client configuration) it speaks HTTPS with its node
// certificate.
func Join(ctx context.Context, joinURL string, req api.AddNodeRequest, tlsCfg *tls.Config, token string, log hclog.Logger) error {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := postNode(ctx, c, token, joinURL, req)
		if err == nil {
			log.Info("joined the cluster", "via", joinURL, "attempts", attempt)
			return nil
		}
		log.Warn("join attempt failed; retrying", "via", joinURL, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("transport: joining via %s: %w (last error: %v)", joinURL, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
