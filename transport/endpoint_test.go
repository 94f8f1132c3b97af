package transport

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
)

// leaderRouting is a ready leader named n1: the Routing every server needs.
type leaderRouting struct{ Routing }

func (leaderRouting) ID() string     { return "n1" }
func (leaderRouting) IsLeader() bool { return true }

// fakeSemaphores is the only service of TestEndpoint_FakeRole's server: it grants a
// permit, or answers err.
type fakeSemaphores struct {
	SemaphoreService
	err error
	got cluster.SemaphoreRequest
}

func (f *fakeSemaphores) Acquire(_ context.Context, req cluster.SemaphoreRequest) (cluster.SemaphoreGrant, error) {
	f.got = req
	if f.err != nil {
		return cluster.SemaphoreGrant{}, f.err
	}
	g := cluster.SemaphoreGrant{Granted: cluster.Granted{Name: req.Name, Token: 7, Lease: req.Lease, Owner: req.Owner}, Limit: req.Limit}
	g.TTL = fromMs(10_000)
	return g, nil
}

// A route's test fakes only the role the route uses: the semaphore routes need a
// SemaphoreService and nothing else (beside the Routing every server has; stubRoles
// fills in the roles the test does not fake). The reply
// path turns the role's answers and errors into the API's bytes.
func TestEndpoint_FakeRole(t *testing.T) {
	sems := &fakeSemaphores{}
	s, err := NewServer(Config{Services: stubRoles(Services{Routing: leaderRouting{}, Semaphores: sems}), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	lease := strings.Repeat("ab", 16)
	put := func(body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, apiRequest(http.MethodPut, "/v1/semaphores/pool/db", strings.NewReader(body)))
		return w
	}
	cases := []struct {
		name, body string
		err        error
		status     int
		retryAfter string
		want       string
	}{
		{"granted", `{"limit":3,"lease_id":"` + lease + `","owner":"w1"}`, nil, 200, "",
			`{"name":"pool/db","token":7,"lease_id":"` + lease + `","ttl_ms":10000,"owner":"w1","limit":3}`},
		{"full", `{"limit":3,"lease_id":"` + lease + `"}`, cluster.ErrSemaphoreFull, 409, "",
			`{"error":{"code":"semaphore_full","message":"every permit of the semaphore is held; retry later, or ask to wait in its queue (the request's wait: wait_ms in the HTTP API, the wait option of the clients)"}}`},
		{"inactive", `{"limit":3,"lease_id":"` + lease + `"}`, cluster.ErrPrimsInactive, 503, "1", `"code":"no_leader"`},
		{"limit conflict", `{"limit":3,"lease_id":"` + lease + `"}`, &cluster.LimitConflictError{Limit: 5}, 409, "",
			`{"error":{"code":"limit_conflict","message":"the semaphore is in use with limit 5; ask with that limit, or wait until it is not in use to set another"}}`},
		{"bad body", `{"limit":0}`, nil, 400, "", `"code":"invalid_argument"`},
	}
	for _, c := range cases {
		sems.err = c.err
		w := put(c.body)
		if w.Code != c.status || w.Header().Get("Retry-After") != c.retryAfter || w.Header().Get("Content-Type") != "application/json" || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d Retry-After %q %s, want %d %q %s", c.name, w.Code, w.Header().Get("Retry-After"), w.Body, c.status, c.retryAfter, c.want)
		}
	}
	if sems.got.Name != "pool/db" || sems.got.Limit != 3 || sems.got.Wait != 0 {
		t.Errorf("the role was asked %+v", sems.got)
	}
}

// A waiting call takes a held-request slot while it is served, and gives it back.
func TestEndpoint_WaitHoldsASlot(t *testing.T) {
	s, err := NewServer(Config{Services: stubRoles(Services{Routing: leaderRouting{}}), Logger: hclog.NewNullLogger(), MaxHeldRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	var during int64
	h := s.serve(here, func(http.ResponseWriter, *http.Request) (call, error) {
		return call{wait: time.Second, do: func(context.Context) (any, error) {
			during = s.held.held.Load()
			return created{map[string]int{"n": 1}}, nil
		}}, nil
	})
	w := httptest.NewRecorder()
	h(w, apiRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusCreated || strings.TrimSpace(w.Body.String()) != `{"n":1}` || during != 1 || s.held.held.Load() != 0 {
		t.Fatalf("answer %d %s, %d held during the call, %d after", w.Code, w.Body, during, s.held.held.Load())
	}
}
