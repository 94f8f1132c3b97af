package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/internal/budget"
)

// instantLeader grants and releases at once, stamping the request's budget trace (when it
// has one) with a log index, as cluster.Node does when it proposes. It fakes the two roles
// the lock routes use; methods they do not call are left to the embedded nil interfaces.
type instantLeader struct {
	Routing
	LockService
	index uint64
}

func (n *instantLeader) ID() string     { return "n1" }
func (n *instantLeader) IsLeader() bool { return true }

func (n *instantLeader) Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.Grant, error) {
	n.index++
	budget.FromContext(ctx).Proposed(n.index)
	return cluster.Grant{Granted: cluster.Granted{Name: req.Name, Lease: req.Lease, Token: n.index, TTL: 10_000}}, nil
}

func (n *instantLeader) Release(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error {
	n.index++
	budget.FromContext(ctx).Proposed(n.index)
	return nil
}

const benchLease = "0123456789abcdef0123456789abcdef"

// cycle sends an acquire and a release of one lock straight to h.
func cycle(tb testing.TB, h http.Handler, token string) {
	for _, rq := range []*http.Request{
		apiRequest(http.MethodPut, "/v1/locks/accounts/A", strings.NewReader(`{"lease_id":"`+benchLease+`"}`)),
		apiRequest(http.MethodDelete, "/v1/locks/accounts/A", strings.NewReader(`{"lease_id":"`+benchLease+`","token":`+token+`}`)),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, rq)
		if w.Code != http.StatusOK {
			tb.Fatalf("%s %s: %d %s", rq.Method, rq.URL, w.Code, w.Body)
		}
	}
}

func newBudgetServer(tb testing.TB, rec *budget.Recorder) http.Handler {
	n := &instantLeader{}
	s, err := NewServer(Config{Services: stubRoles(Services{Routing: n, Locks: n}), Logger: hclog.NewNullLogger(), Budget: rec})
	if err != nil {
		tb.Fatal(err)
	}
	return s.Handler()
}

// TestBudget_TracesLockRequests checks that with a recorder every lock request leaves a
// finished trace with its decode time, route and index, and that a forwarded request's
// trace header names its parent.
func TestBudget_TracesLockRequests(t *testing.T) {
	rec := budget.New()
	h := newBudgetServer(t, rec)
	cycle(t, h, "1")
	req := apiRequest(http.MethodPut, "/v1/locks/accounts/B", strings.NewReader(`{"lease_id":"`+benchLease+`"}`))
	req.Header.Set(traceHeader, "42")
	req.Header.Set(budgetTagHeader, "t1")
	h.ServeHTTP(httptest.NewRecorder(), req)

	traces := rec.Traces()
	if len(traces) != 3 {
		t.Fatalf("%d traces, want 3", len(traces))
	}
	for i, tr := range traces {
		if tr.Node != "n1" || tr.Index != uint64(i+1) || tr.Decoded.IsZero() || tr.End.Before(tr.Decoded) || tr.Decoded.Before(tr.Start) {
			t.Errorf("trace %d = %+v", i, tr)
		}
	}
	if got := traces[2]; got.Parent != 42 || got.Tag != "t1" || got.Route != "PUT /v1/locks/{name...}" {
		t.Errorf("forwarded trace: parent %d, tag %q, route %q", got.Parent, got.Tag, got.Route)
	}
}

// TestBudget_OffTracesNothing checks that without a recorder the handlers run with no
// trace in their context.
func TestBudget_OffTracesNothing(t *testing.T) {
	n := &tracingProbe{}
	s, err := NewServer(Config{Services: stubRoles(Services{Routing: n, Locks: n}), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cycle(t, s.Handler(), "1")
	if n.seen {
		t.Fatal("a request carried a budget trace with no recorder configured")
	}
}

type tracingProbe struct {
	instantLeader
	seen bool
}

func (p *tracingProbe) Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.Grant, error) {
	p.seen = p.seen || budget.FromContext(ctx) != nil
	return p.instantLeader.Acquire(ctx, req)
}

// BenchmarkLockCycleHandlers is one acquire + release through the server's whole handler
// chain (metrics, recovery, routing, decoding, encoding) against a node that answers at
// once: what the HTTP layer costs per cycle, without the network and raft. "off" is the
// default server; "on" traces every request for the latency budget.
func BenchmarkLockCycleHandlers(b *testing.B) {
	for _, c := range []struct {
		name string
		rec  *budget.Recorder
	}{{"off", nil}, {"on", budget.New()}} {
		b.Run(c.name, func(b *testing.B) {
			h := newBudgetServer(b, c.rec)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				cycle(b, h, "1")
				if c.rec != nil && i%1000 == 999 {
					c.rec.Reset() // keep the recorder's memory flat
				}
			}
		})
	}
}
