package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testkit"
)

// followerNode is a follower that knows a leader at leaderAddr: every operation answers
// ErrNotLeader, so the server forwards it. It fakes the role forwarding uses (Routing)
// and the two the tests send (leases, locks); methods a test does not need are left to
// the embedded nil interfaces (calling them panics, which fails the test).
type followerNode struct {
	Routing
	LeaseService
	LockService
	leaderAddr string
	self       string // its own HTTP address; "" for 127.0.0.1:1
	mu         sync.Mutex
	leaderID   string
	changed    chan struct{}
	acquire    func(ctx context.Context) error
}

func newFollowerNode(leaderAddr string) *followerNode {
	return &followerNode{leaderAddr: leaderAddr, leaderID: "n1", changed: make(chan struct{})}
}

// services returns the roles the follower fakes.
func (f *followerNode) services() Services {
	return Services{Routing: f, Leases: f, Locks: f}
}

func (f *followerNode) ID() string { return "n2" }
func (f *followerNode) HTTPAddr() string {
	if f.self != "" {
		return f.self
	}
	return "127.0.0.1:1"
}
func (f *followerNode) LeaderHTTPAddr() string         { return f.leaderAddr }
func (f *followerNode) ElectionTimeout() time.Duration { return 100 * time.Millisecond }
func (f *followerNode) IsLeader() bool                 { return false }
func (f *followerNode) StorageErr() error              { return nil }
func (f *followerNode) Serving() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leaderID == "" {
		return ""
	}
	return cluster.ServingForward
}
func (f *followerNode) LeaderWatch() (string, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaderID, f.changed
}

// elect makes another node the leader, as raft's observation would.
func (f *followerNode) elect(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaderID = id
	close(f.changed)
	f.changed = make(chan struct{})
}

// Creator says every lease exists, made without ACLs: the lease gate lets every call
// go on to the operation, which answers ErrNotLeader.
func (f *followerNode) Creator(cluster.LeaseID) (string, bool) { return "", true }

func (f *followerNode) KeepAlive(context.Context, cluster.LeaseID) (time.Duration, error) {
	return 0, cluster.ErrNotLeader
}

func (f *followerNode) Acquire(ctx context.Context, _ cluster.AcquireRequest) (cluster.Grant, error) {
	if f.acquire != nil {
		return cluster.Grant{}, f.acquire(ctx)
	}
	return cluster.Grant{}, cluster.ErrNotLeader
}

func newTestServer(t *testing.T, svc Services, tune func(*Config)) *httptest.Server {
	t.Helper()
	// The forward's own answers are what these tests check: no hold unless a test asks.
	cfg := Config{Services: stubRoles(svc), Logger: hclog.NewNullLogger(), ForwardMargin: 200 * time.Millisecond, RegisterInterval: time.Hour, HoldTimeout: -1}
	if tune != nil {
		tune(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// hungLeader accepts requests and never answers, like a leader stopped by SIGSTOP after
// its kernel accepted the connection.
func hungLeader(t *testing.T) (addr string, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); ts.Close() })
	return strings.TrimPrefix(ts.URL, "http://"), hits
}

// A node never forwards to its own HTTP address (Routing.HTTPAddr): raft may name a
// leader whose registered address is still this node's (a stale registration after an
// address moved), and the forward would come back to it. It answers no_leader instead.
func TestForward_NeverToItsOwnAddress(t *testing.T) {
	addr, hits := hungLeader(t)
	f := newFollowerNode(addr)
	f.self = addr
	ts := newTestServer(t, f.services(), nil)
	a := send(t, "POST", ts.URL+keepalivePath, "")
	wantError(t, a, 503, api.CodeNoLeader)
	if n := hits.Load(); n != 0 {
		t.Fatalf("forwarded %d times to its own address", n)
	}
}

// send is a plain client with a long timeout, as a stranger would use; header holds
// name, value pairs.
func send(t *testing.T, method, url, body string, header ...string) rawhttp.Answer {
	t.Helper()
	a := rawhttp.Client{HTTP: &http.Client{Timeout: 20 * time.Second}}.Do(method, url, body, header...)
	if a.Err != nil {
		t.Fatalf("%s %s: %v (after %v)", method, url, a.Err, a.Took)
	}
	return a
}

func wantError(t *testing.T, a rawhttp.Answer, status int, code string) {
	t.Helper()
	if a.Status != status || !strings.Contains(string(a.Raw), `"code":"`+code+`"`) {
		t.Fatalf("answer %d %s, want %d %s", a.Status, a.Raw, status, code)
	}
	if (status == 503 || status == 429) && a.Header.Get("Retry-After") == "" {
		t.Fatalf("%d without Retry-After", status)
	}
}

const keepalivePath = "/v1/leases/00112233445566778899aabbccddeeff/keepalive"

// A forward to a leader that stops answering is abandoned as soon as another node leads.
func TestForward_AbandonedWhenLeadershipMoves(t *testing.T) {
	addr, hits := hungLeader(t)
	node := newFollowerNode(addr)
	ts := newTestServer(t, node.services(), func(c *Config) { c.ForwardMargin = time.Hour })
	go func() {
		for hits.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		node.elect("n3")
	}()
	a := send(t, "POST", ts.URL+keepalivePath, "")
	wantError(t, a, 503, api.CodeUnknownOutcome)
	t.Logf("abandoned %v after the request reached the old leader", a.Took)
}

// With no change of leader seen, a forward still ends after the election timeout plus
// the margin, not when the client gives up.
func TestForward_BoundedWithoutLeaderChange(t *testing.T) {
	addr, _ := hungLeader(t)
	ts := newTestServer(t, newFollowerNode(addr).services(), nil)
	a := send(t, "POST", ts.URL+keepalivePath, "")
	wantError(t, a, 503, api.CodeUnknownOutcome)
	// The bound is the election timeout (100 ms) plus the margin (200 ms); the slack is
	// far below the client's own 20 s timeout, so a missing bound cannot pass.
	const bound = 300 * time.Millisecond
	if a.Took < bound || a.Took > bound+1500*time.Millisecond {
		t.Fatalf("answered after %v, want just after the %v forwarding bound", a.Took, bound)
	}
	t.Logf("bound %v, answered after %v", bound, a.Took)
}

// A waiting request's bound includes its wait.
func TestForward_BoundIncludesWait(t *testing.T) {
	addr, _ := hungLeader(t)
	ts := newTestServer(t, newFollowerNode(addr).services(), nil)
	a := send(t, "PUT", ts.URL+"/v1/locks/a", `{"wait_ms":700}`)
	wantError(t, a, 503, api.CodeUnknownOutcome)
	if a.Took < 700*time.Millisecond {
		t.Fatalf("a waiting acquire was cut off after %v, before its own 700 ms wait", a.Took)
	}
}

// A leader that cannot be dialled certainly received nothing: no_leader.
func TestForward_UnreachableLeaderIsNoLeader(t *testing.T) {
	ts := newTestServer(t, newFollowerNode(testkit.FreePort(t)).services(), nil)
	a := send(t, "POST", ts.URL+keepalivePath, "")
	wantError(t, a, 503, api.CodeNoLeader)
}

// The hop counter is unsigned: a negative value cannot buy unlimited forwarding.
func TestForward_HopHeaderIsUnsigned(t *testing.T) {
	addr, hits := hungLeader(t)
	ts := newTestServer(t, newFollowerNode(addr).services(), nil)
	for _, h := range []string{"-1000000", "-1", "x", "99999999999999999999", "256"} {
		a := send(t, "POST", ts.URL+keepalivePath, "", hopHeader, h)
		wantError(t, a, 400, api.CodeInvalidArgument)
	}
	a := send(t, "POST", ts.URL+keepalivePath, "", hopHeader, "2")
	wantError(t, a, 503, api.CodeNoLeader)
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the leader", n)
	}
}

// The forwarding client relays a redirect instead of following it with the caller's body.
func TestForward_DoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Add(1) }))
	defer elsewhere.Close()
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer leader.Close()
	ts := newTestServer(t, newFollowerNode(strings.TrimPrefix(leader.URL, "http://")).services(), nil)
	a := send(t, "POST", ts.URL+keepalivePath, "")
	if a.Status != http.StatusTemporaryRedirect || followed.Load() != 0 {
		t.Fatalf("status %d, redirect target hit %d times; want the 307 relayed and not followed", a.Status, followed.Load())
	}
}

// Held-open requests beyond MaxHeldRequests are refused with 429, and nothing reaches
// the node for them.
func TestServer_HeldRequestLimit(t *testing.T) {
	node := newFollowerNode("")
	entered := make(chan struct{}, 4)
	var calls atomic.Int64
	node.acquire = func(ctx context.Context) error {
		calls.Add(1)
		entered <- struct{}{}
		<-ctx.Done()
		return cluster.ErrWaitTimeout
	}
	ts := newTestServer(t, node.services(), func(c *Config) { c.MaxHeldRequests = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "PUT", ts.URL+"/v1/locks/a", strings.NewReader(`{"wait_ms":10000}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	a := send(t, "PUT", ts.URL+"/v1/locks/b", `{"wait_ms":10000}`)
	wantError(t, a, 429, api.CodeTooManyRequests)
	if calls.Load() != 1 {
		t.Fatalf("node saw %d acquires, want 1", calls.Load())
	}
}
