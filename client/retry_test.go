package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testkit"
)

// These tests use fake nodes (httptest servers) to pin down the retry rules and the
// timing of SafeUntil without a cluster.

const fakeLeaseID = "0123456789abcdef0123456789abcdef"

func fakeNode(t *testing.T, h http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		// Read the body first, as the real server does: net/http notices a client that
		// gave up (and cancels r.Context) only once the body has been read.
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeAPIError(w http.ResponseWriter, code string) {
	writeJSON(w, api.Status(code), api.Errorf(code, "fake %s", code).Body())
}

func noLeader(w http.ResponseWriter, r *http.Request) { writeAPIError(w, api.CodeNoLeader) }

func clusterOK(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.Cluster{LeaderID: "n2", Term: 7, Nodes: []api.Node{}})
}

func TestClient_NoLeaderTriesNextEndpoint(t *testing.T) {
	a, hitsA := fakeNode(t, noLeader)
	b, hitsB := fakeNode(t, clusterOK)
	c := newClient(t, []string{a, b})
	info, err := c.Cluster(ctxFor(t, 5*time.Second))
	if err != nil || info.Term != 7 {
		t.Fatalf("Cluster = %+v, %v", info, err)
	}
	if hitsA.Load() != 1 || hitsB.Load() != 1 {
		t.Fatalf("hits a=%d b=%d; want 1 and 1", hitsA.Load(), hitsB.Load())
	}
	// The endpoint that answered is preferred from then on.
	if _, err := c.Cluster(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if hitsA.Load() != 1 {
		t.Fatalf("the failing endpoint was tried again first")
	}
}

func TestClient_NoLeaderEverywhereGivesUpWithContext(t *testing.T) {
	a, hitsA := fakeNode(t, noLeader)
	b, _ := fakeNode(t, noLeader)
	c := newClient(t, []string{a, b}, client.WithRetryBackoff(10*time.Millisecond, 40*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Cluster(ctx)
	if !errors.Is(err, client.ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want ErrNoLeader and DeadlineExceeded", err)
	}
	if !strings.HasPrefix(err.Error(), "client: ") {
		t.Fatalf("error %q lacks the package prefix", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("gave up after %v; the context allowed 300 ms", d)
	}
	if n := hitsA.Load(); n < 3 {
		t.Fatalf("only %d rounds in 300 ms with a 10-40 ms backoff", n)
	}
}

func TestClient_APIErrorIsNotRetried(t *testing.T) {
	a, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, api.CodeLockHeld) })
	b, hitsB := fakeNode(t, clusterOK)
	c := newClient(t, []string{a, b})
	_, err := c.Acquire(ctxFor(t, 5*time.Second), "x", client.AcquireOptions{})
	if !errors.Is(err, client.ErrLockHeld) || !errors.Is(err, &api.Error{Code: api.CodeLockHeld}) {
		t.Fatalf("err = %v; want ErrLockHeld", err)
	}
	if hitsB.Load() != 0 {
		t.Fatal("a definite answer was retried on another endpoint")
	}
}

// A code the client does not know (a newer server's), even with a status it retries
// other codes of, is ErrServer: not retried, its code and message kept.
func TestClient_UnknownCodeIsAServerErrorNotRetried(t *testing.T) {
	a, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, api.Errorf("leader_busy", "a newer server's code").Body())
	})
	b, hitsB := fakeNode(t, clusterOK)
	c := newClient(t, []string{a, b})
	_, err := c.Acquire(ctxFor(t, 5*time.Second), "x", client.AcquireOptions{})
	var ae *api.Error
	if !errors.Is(err, client.ErrServer) || !errors.As(err, &ae) || ae.Code != "leader_busy" || ae.Message != "a newer server's code" {
		t.Fatalf("err = %v; want ErrServer holding the answer's code and message", err)
	}
	if hitsB.Load() != 0 {
		t.Fatal("an unknown code was retried on another endpoint")
	}
}

func TestClient_HungEndpointCostsOneAttemptTimeout(t *testing.T) {
	a, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	b, _ := fakeNode(t, clusterOK)
	c := newClient(t, []string{a, b}, client.WithTimeout(200*time.Millisecond))
	start := time.Now()
	if _, err := c.Cluster(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v with a 200 ms attempt timeout", d)
	}
}

func TestClient_RetriedRevokeThatFindsNoLeaseSucceeds(t *testing.T) {
	// a takes the revoke and drops the connection without answering; b has no such lease
	// (as if a had revoked it before dying).
	a, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	b, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, api.CodeLeaseNotFound) })
	c := newClient(t, []string{a, b})
	if _, err := c.Revoke(ctxFor(t, 5*time.Second), fakeLeaseID); err != nil {
		t.Fatalf("Revoke = %v; want success", err)
	}
	// Without an earlier attempt, not found is an error.
	c2 := newClient(t, []string{b})
	if _, err := c2.Revoke(ctxFor(t, 5*time.Second), fakeLeaseID); !errors.Is(err, client.ErrLeaseNotFound) {
		t.Fatalf("Revoke = %v; want ErrLeaseNotFound", err)
	}
}

// TestLease_SafeUntilCountsFromSendTime: the create is answered 300 ms after it was sent;
// SafeUntil must count from the send time, not from the answer.
func TestLease_SafeUntilCountsFromSendTime(t *testing.T) {
	const delay = 300 * time.Millisecond
	var keepalives atomic.Int64
	u, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/leases":
			time.Sleep(delay) // the fake server is slow to answer; not a wait for a condition
			writeJSON(w, http.StatusCreated, api.Lease{LeaseID: fakeLeaseID, TTLMs: 2000})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/leases/"+fakeLeaseID+"/keepalive":
			keepalives.Add(1)
			writeJSON(w, http.StatusOK, api.Lease{LeaseID: fakeLeaseID, TTLMs: 2000})
		case r.Method == http.MethodDelete:
			writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: fakeLeaseID, Released: []string{}})
		default:
			writeAPIError(w, api.CodeNotFound)
		}
	})
	c := newClient(t, []string{u})
	before := time.Now()
	l, err := c.NewLease(ctxFor(t, 5*time.Second), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	after := time.Now()
	drift := l.DriftMargin()
	if drift != 200*time.Millisecond {
		t.Fatalf("default drift margin for 2 s = %v; want 200 ms", drift)
	}
	safe := l.SafeUntil()
	lo, hi := before.Add(2*time.Second-drift), after.Add(2*time.Second-drift-delay)
	if safe.Before(lo) || safe.After(hi) {
		t.Fatalf("SafeUntil is %v after the call started; want between %v and %v (send time + TTL - drift)",
			safe.Sub(before), lo.Sub(before), hi.Sub(before))
	}
	testkit.WaitFor(t, 5*time.Second, "a keepalive to move SafeUntil", func() bool { return l.SafeUntil().After(safe) })
	if keepalives.Load() == 0 {
		t.Fatal("SafeUntil moved without a keepalive")
	}
}

// TestLease_LateKeepAliveDoesNotRevive: keepalives hang until after SafeUntil; Done must
// close at SafeUntil and stay closed when a late answer arrives.
func TestLease_LateKeepAliveDoesNotRevive(t *testing.T) {
	var hang atomic.Bool
	u, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/leases":
			writeJSON(w, http.StatusCreated, api.Lease{LeaseID: fakeLeaseID, TTLMs: 1000})
		case strings.HasSuffix(r.URL.Path, "/keepalive"):
			if hang.Load() {
				<-r.Context().Done()
				return
			}
			writeJSON(w, http.StatusOK, api.Lease{LeaseID: fakeLeaseID, TTLMs: 1000})
		default:
			writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: fakeLeaseID, Released: []string{}})
		}
	})
	c := newClient(t, []string{u}, client.WithTimeout(5*time.Second))
	l, err := c.NewLease(ctxFor(t, 5*time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	hang.Store(true)
	select {
	case <-l.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("Done not closed within 3 s of a 1 s lease whose keepalives hang")
	}
	lostAt := time.Now()
	if late := lostAt.Sub(l.SafeUntil()); late < 0 || late > 250*time.Millisecond {
		t.Fatalf("Done closed %v after SafeUntil", late)
	}
	if !errors.Is(l.Err(), client.ErrLeaseLost) {
		t.Fatalf("Err = %v", l.Err())
	}
	hang.Store(false)
	if _, err := c.KeepAlive(ctxFor(t, 5*time.Second), l.ID()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), client.ErrLeaseLost) {
		t.Fatal("the lease came back to life")
	}
}

func TestNew_RejectsBadEndpoints(t *testing.T) {
	if _, err := client.New(nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
	if _, err := client.New([]string{"ftp://x"}); err == nil {
		t.Fatal("New(ftp://x) succeeded")
	}
	c, err := client.New([]string{" 127.0.0.1:7001/ ", ""})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Endpoints(); len(got) != 1 || got[0] != "http://127.0.0.1:7001" {
		t.Fatalf("Endpoints = %q", got)
	}
}
