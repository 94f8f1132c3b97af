package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// TestBackup_StreamsVerifiesAndRetries: an endpoint without a leader is skipped, the
// backup is written to w byte for byte, and a backup whose state does not match its
// header's checksum is an error that matches api.ErrBadBackup.
func TestBackup_StreamsVerifiesAndRetries(t *testing.T) {
	state := bytes.Repeat([]byte("state "), 50_000)
	file := append(api.NewBackupHeader(42, 7, 2, "2025-01-01T00:00:00Z", state).Encode(), state...)
	var corrupt atomic.Bool
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/backup" {
			http.NotFound(w, r)
			return
		}
		// The route needs the admin right when ACLs are on: the client's token must go along.
		if got := r.Header.Get(api.AuthorizationHeader); got != "Bearer backup-secret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthenticated","message":"no token"}}`))
			return
		}
		w.Header().Set("Content-Type", api.BackupContentType)
		b := file
		if corrupt.Load() {
			b = append([]byte(nil), file...)
			b[len(b)-10] ^= 1
		}
		w.Write(b)
	}))
	defer good.Close()
	noLeader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":"no_leader","message":"no leader"}}`))
	}))
	defer noLeader.Close()

	c, err := client.New([]string{noLeader.URL, good.URL}, client.WithRetryBackoff(time.Millisecond, 10*time.Millisecond), client.WithToken("backup-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var buf bytes.Buffer
	h, err := c.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if h.Index != 42 || h.Size != int64(len(state)) || !bytes.Equal(buf.Bytes(), file) {
		t.Fatalf("header %+v, %d bytes written, want %d", h, buf.Len(), len(file))
	}

	corrupt.Store(true)
	buf.Reset()
	if _, err := c.Backup(ctx, &buf); !errors.Is(err, api.ErrBadBackup) || !errors.Is(err, client.ErrServer) {
		t.Fatalf("corrupted backup: %v", err)
	}

	// Only no_leader answers: the caller's context ends the retries.
	c2, _ := client.New([]string{noLeader.URL}, client.WithRetryBackoff(time.Millisecond, 10*time.Millisecond))
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if _, err := c2.Backup(short, &buf); !errors.Is(err, client.ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no leader anywhere: %v", err)
	}
}

// A server of an earlier release knows only GET /v1/snapshot and answers the API's 404 for
// GET /v1/backup: the client asks again by the older name, and Snapshot is Backup.
func TestBackup_FallsBackToTheOlderRoute(t *testing.T) {
	state := []byte("state")
	file := append(api.NewBackupHeader(7, 1, 2, "2025-01-01T00:00:00Z", state).Encode(), state...)
	var paths []string
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.URL.Path != "/v1/snapshot" {
			writeAPIError(w, api.CodeNotFound)
			return
		}
		w.Header().Set("Content-Type", api.BackupContentType)
		w.Write(file)
	}))
	defer old.Close()
	c, err := client.New([]string{old.URL})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := c.Snapshot(context.Background(), &buf); err != nil || !bytes.Equal(buf.Bytes(), file) {
		t.Fatalf("backup from an older server: %v, %d bytes", err, buf.Len())
	}
	if strings.Join(paths, " ") != "/v1/backup /v1/snapshot" {
		t.Fatalf("paths asked: %v, want /v1/backup then /v1/snapshot", paths)
	}
}
