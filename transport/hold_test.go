package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// okLeader answers every request 200 with body, counting them.
func okLeader(t *testing.T, body string) (addr string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://"), hits
}

// A request that finds no leader is held, and forwarded as soon as one is known: the
// client sees the leader's answer, not a 503. With holding off it would be 503 at once.
func TestHold_NoLeaderHeldUntilOneIsKnown(t *testing.T) {
	addr, hits := okLeader(t, `{"lease_id":"x","ttl_ms":1000}`)
	f := newFollowerNode(addr)
	f.leaderID = "" // an election is running
	ts := newTestServer(t, f.services(), func(c *Config) { c.HoldTimeout = 5 * time.Second })
	// The answer must come after the election: electedAt is stamped before the leader is
	// made known (comparing a.Took with the timer's delay could not tell, since the timer
	// starts before the request does).
	var electedAt atomic.Int64
	time.AfterFunc(300*time.Millisecond, func() { electedAt.Store(time.Now().UnixNano()); f.elect("n1") })
	a := send(t, "POST", ts.URL+keepalivePath, "")
	answered := time.Now().UnixNano()
	if a.Status != 200 || hits.Load() != 1 {
		t.Fatalf("held keepalive: %d %s, leader saw %d requests", a.Status, a.Body, hits.Load())
	}
	if e := electedAt.Load(); e == 0 || e > answered {
		t.Fatalf("answered after %v, before a leader was known", a.Took)
	}
	t.Logf("held %v, then forwarded", a.Took)
}

// The hold is bounded by HoldTimeout: with no leader ever, the answer is 503 no_leader
// after the hold and not before.
func TestHold_BoundedByHoldTimeout(t *testing.T) {
	f := newFollowerNode("127.0.0.1:1")
	f.leaderID = ""
	const hold = 400 * time.Millisecond
	ts := newTestServer(t, f.services(), func(c *Config) { c.HoldTimeout = hold })
	a := send(t, "POST", ts.URL+keepalivePath, "")
	wantError(t, a, 503, api.CodeNoLeader)
	if a.Took < hold || a.Took > hold+time.Second {
		t.Fatalf("answered after %v, want just after the %v hold", a.Took, hold)
	}
}

// flakyLeases is a leader whose first calls end ambiguously (leadership lost while the
// entry was in flight) and whose later calls succeed.
type flakyLeases struct {
	LeaseService
	ambiguous int
	calls     atomic.Int64
}

func (l *flakyLeases) fail() error {
	if int(l.calls.Add(1)) <= l.ambiguous {
		return cluster.ErrUnknownOutcome
	}
	return nil
}

// Creator says every lease exists, made without ACLs: the lease gate lets every call
// go on to the flaky operation.
func (l *flakyLeases) Creator(cluster.LeaseID) (string, bool) { return "", true }

func (l *flakyLeases) KeepAlive(context.Context, cluster.LeaseID) (time.Duration, error) {
	return time.Second, l.fail()
}

func (l *flakyLeases) Create(context.Context, time.Duration) (cluster.LeaseID, error) {
	return cluster.LeaseID{}, l.fail()
}

// readyLeader is the Routing of a ready leader.
type readyLeader struct{ Routing }

func (readyLeader) ID() string                             { return "n1" }
func (readyLeader) IsLeader() bool                         { return true }
func (readyLeader) Serving() string                        { return cluster.ServingLeader }
func (readyLeader) LeaderWatch() (string, <-chan struct{}) { return "n1", nil }

// An idempotent call (a keepalive) whose outcome was ambiguous is made again within the
// hold, and answers as the repetition does; a call that is not (a lease created without
// request_id) still answers unknown_outcome, made once.
func TestHold_IdempotentRetriedAfterAmbiguousOutcome(t *testing.T) {
	leases := &flakyLeases{ambiguous: 1}
	ts := newTestServer(t, Services{Routing: readyLeader{}, Leases: leases}, func(c *Config) { c.HoldTimeout = 5 * time.Second })
	if a := send(t, "POST", ts.URL+keepalivePath, ""); a.Status != 200 || leases.calls.Load() != 2 {
		t.Fatalf("keepalive after an ambiguous outcome: %d %s after %d calls, want 200 after 2", a.Status, a.Body, leases.calls.Load())
	}
	leases.calls.Store(0)
	a := send(t, "POST", ts.URL+"/v1/leases", `{"ttl_ms":1000}`)
	wantError(t, a, 503, api.CodeUnknownOutcome)
	if leases.calls.Load() != 1 {
		t.Fatalf("a lease create without request_id was made %d times, want once", leases.calls.Load())
	}
}

// A node forwarded to that has no leader either marks its answer holdable; the node the
// client chose holds the request and tries again rather than pass the 503 on.
func TestHold_RelayedNoLeaderIsHeld(t *testing.T) {
	var hits atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if hits.Add(1) == 1 {
			w.Header().Set(holdableHeader, "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"no_leader","message":"no leader"}}`))
			return
		}
		w.Write([]byte(`{"lease_id":"x","ttl_ms":1000}`))
	}))
	t.Cleanup(leader.Close)
	f := newFollowerNode(strings.TrimPrefix(leader.URL, "http://"))
	ts := newTestServer(t, f.services(), func(c *Config) { c.HoldTimeout = 5 * time.Second })
	go func() { time.Sleep(100 * time.Millisecond); f.elect("n3") }()
	if a := send(t, "POST", ts.URL+keepalivePath, ""); a.Status != 200 || hits.Load() != 2 {
		t.Fatalf("relayed holdable 503: %d %s after %d forwards, want 200 after 2", a.Status, a.Body, hits.Load())
	}
}

// Only the node the client chose holds: a forwarded request that finds no leader is
// answered at once, marked holdable.
func TestHold_ForwardedRequestIsNotHeldButMarked(t *testing.T) {
	f := newFollowerNode("127.0.0.1:1")
	f.leaderID = ""
	ts := newTestServer(t, f.services(), func(c *Config) { c.HoldTimeout = 5 * time.Second })
	a := send(t, "POST", ts.URL+keepalivePath, "", hopHeader, "1")
	wantError(t, a, 503, api.CodeNoLeader)
	if a.Took > 2*time.Second || a.Header.Get(holdableHeader) == "" {
		t.Fatalf("forwarded request: answered after %v, holdable header %q", a.Took, a.Header.Get(holdableHeader))
	}
}

func (l *flakyLeases) Revoke(context.Context, cluster.LeaseID) ([]string, error) {
	if err := l.fail(); err != nil {
		return nil, err
	}
	return nil, cluster.ErrLeaseNotFound // the first attempt revoked it
}

// A repeat that meets the first attempt's own effect (the revoke it repeats already
// removed the lease) must not answer that nothing happened: it answers the first
// attempt's unknown_outcome, at once.
func TestHold_RepeatDenyingTheFirstEffectAnswersUnknownOutcome(t *testing.T) {
	leases := &flakyLeases{ambiguous: 1}
	ts := newTestServer(t, Services{Routing: readyLeader{}, Leases: leases}, func(c *Config) { c.HoldTimeout = 5 * time.Second })
	a := send(t, "DELETE", ts.URL+"/v1/leases/00112233445566778899aabbccddeeff", "")
	wantError(t, a, 503, api.CodeUnknownOutcome)
	if leases.calls.Load() != 2 || a.Took > 2*time.Second {
		t.Fatalf("revoke repeated %d times, answered after %v; want one repeat and an answer at once", leases.calls.Load()-1, a.Took)
	}
}

// The same through a forward: the leader's not_holder to a repeated release is kept, and
// the client gets unknown_outcome.
func TestHold_ForwardedRepeatDenyingTheFirstEffect(t *testing.T) {
	var hits atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if hits.Add(1) == 1 {
			// The first attempt is applied, but its answer is lost: the connection drops.
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":{"code":"not_holder","message":"not the holder"}}`))
	}))
	t.Cleanup(leader.Close)
	f := newFollowerNode(strings.TrimPrefix(leader.URL, "http://"))
	f.LockService = forwardingLocks{}
	ts := newTestServer(t, f.services(), func(c *Config) { c.HoldTimeout = 5 * time.Second })
	a := send(t, "DELETE", ts.URL+"/v1/locks/a", `{"lease_id":"00112233445566778899aabbccddeeff","token":7}`)
	wantError(t, a, 503, api.CodeUnknownOutcome)
	if hits.Load() != 2 {
		t.Fatalf("the leader saw %d attempts, want 2", hits.Load())
	}
}

// forwardingLocks is a follower's LockService: every call goes to the leader.
type forwardingLocks struct{ LockService }

func (forwardingLocks) Release(context.Context, string, cluster.LeaseID, uint64) error {
	return cluster.ErrNotLeader
}
