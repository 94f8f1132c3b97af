package client_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testkit"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A lease ID authorizes keepalive, release and revoke: it appears in no error text and
// no log line, even when the URL that holds it fails or the lease is lost.
func TestLease_IDNotInErrorsOrLogs(t *testing.T) {
	url, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/leases":
			writeJSON(w, http.StatusCreated, api.Lease{LeaseID: fakeLeaseID, TTLMs: 1000})
		default: // keepalive: the lease is gone
			writeAPIError(w, api.CodeLeaseNotFound)
		}
	})
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})
	c := newClient(t, []string{url}, client.WithLogger(logger))
	l, err := c.NewLease(ctxFor(t, 10*time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the lease to be lost", func() bool { return closed(l.Done()) })
	texts := []string{l.Err().Error(), logs.String()}

	// An endpoint that cannot be reached: the failing URL holds the ID.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	c2 := newClient(t, []string{dead.URL}, client.WithLogger(logger))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c2.KeepAlive(ctx, fakeLeaseID)
	if err == nil {
		t.Fatal("keepalive to a closed server succeeded")
	}
	texts = append(texts, err.Error(), logs.String())
	for _, s := range texts {
		if strings.Contains(s, fakeLeaseID) {
			t.Fatalf("the lease ID shows in %q", s)
		}
	}
}
