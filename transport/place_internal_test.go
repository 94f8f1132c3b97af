package transport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
)

// placeSamples are requests of every route that needs the leader, with the bodies and
// queries that change what a follower must know to hold one (its wait, whether repeating
// it is safe). Keyed by route pattern; each sample is "?query body" or "body".
var placeSamples = map[string][]string{
	"POST /v1/leases":                 {"", `{}`, `{"ttl_ms":5000}`},
	"POST /v1/leases/{id}/keepalive":  {""},
	"POST /v1/leases/keepalive":       {`{"lease_id":"` + sampleLease + `"}`, `{"lease_ids":["` + sampleLease + `"]}`},
	"POST /v1/leases/lookup":          {`{"lease_id":"` + sampleLease + `"}`, `?stale {"lease_id":"` + sampleLease + `"}`},
	"POST /v1/leases/revoke":          {`{"lease_id":"` + sampleLease + `"}`},
	"GET /v1/leases/{id}":             {"", "?stale"},
	"DELETE /v1/leases/{id}":          {""},
	"PUT /v1/locks/{name...}":         append(holderSamples(""), `{"mode":"shared","request_id":"`+sampleRequest+`"}`, `{"max_hold_ms":1000,"lease_id":"`+sampleLease+`"}`),
	"DELETE /v1/locks/{name...}":      {`{"lease_id":"` + sampleLease + `","token":3}`},
	"GET /v1/locks/{name...}":         {"", "?wait_index=3&wait_ms=1500", "?stale", "?stale=0&wait_ms=20", "?stale=false", "?stale=1"},
	"GET /v1/locks":                   {"", "?limit=10&prefix=a", "?stale"},
	"POST /v1/locksets":               holderSamples(`"names":["a","b"],`),
	"DELETE /v1/locksets":             {`{"lease_id":"` + sampleLease + `","locks":[{"name":"a","token":2}]}`},
	"PUT /v1/semaphores/{name...}":    holderSamples(`"limit":2,`),
	"DELETE /v1/semaphores/{name...}": {`{"lease_id":"` + sampleLease + `","token":2}`},
	"GET /v1/semaphores/{name...}":    {"", "?wait_index=1&wait_ms=100", "?stale"},
	"PUT /v1/elections/{name...}":     append(holderSamples(`"value":"v",`), `{"value":"v","lease_id":"`+sampleLease+`","token":5}`),
	"DELETE /v1/elections/{name...}":  {`{"lease_id":"` + sampleLease + `","token":2}`},
	"GET /v1/elections/{name...}":     {"", "?wait_ms=100&wait_index=1", "?stale"},
	"GET /v1/history/{name...}":       {"", "?stale"},
}

const (
	sampleLease   = "00112233445566778899aabbccddeeff"
	sampleRequest = "req-0123456789abcdef"
)

// holderSamples are the bodies of a holder (an acquire) whose own fields start with own.
func holderSamples(own string) []string {
	out := []string{`{` + strings.TrimSuffix(own, ",") + `}`}
	for _, f := range []string{
		`"owner":"w"`, `"lease_id":"` + sampleLease + `"`, `"request_id":"` + sampleRequest + `"`, `"wait_ms":1500`,
		`"lease_id":"` + sampleLease + `","wait_ms":2000`, `"request_id":"` + sampleRequest + `","wait_ms":2000,"ttl_ms":3000`,
		`"LEASE_ID":"` + sampleLease + `"`, `"Request_Id":"` + sampleRequest + `"`, `"lease_id":""`, `"request_id":"","WAIT_MS":7`,
	} {
		out = append(out, `{`+own+f+`}`)
	}
	if own == "" {
		out = append(out, "") // a lock's acquire takes an empty body
	}
	return out
}

// A follower forwards a request that needs the leader before decoding it, and holds it
// by what it reads from the route, the query and holderHints: for every route and every
// sample the leader would take, what it reads must be what the decoded call says (its
// wait, whether a repetition is safe, its trace mark). A follower that took a request for
// idempotent when it is not would repeat it after an ambiguous outcome (a second lease);
// one that missed its wait would cut a waiting acquire off. And a request routes to the
// leader exactly when its route needs the leader and it does not ask for a stale read.
func TestPlace_FollowerReadsWhatTheDecodedCallSays(t *testing.T) {
	svc := newFollowerNode("127.0.0.1:9").services()
	svc.Semaphores, svc.Elections = unusedSemaphores{}, unusedElections{} // endpoints only decode here
	s, err := NewServer(Config{Services: stubRoles(svc), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, rt := range s.apiRoutes() {
		if !rt.place.leader {
			if rt.place != here {
				t.Errorf("%s: a place served here with fields set: %+v", rt.pattern, rt.place)
			}
			continue
		}
		samples, ok := placeSamples[rt.pattern]
		if !ok {
			t.Errorf("%s needs the leader and has no sample in placeSamples", rt.pattern)
			continue
		}
		for _, sample := range samples {
			method, path, _ := strings.Cut(rt.pattern, " ")
			path = strings.ReplaceAll(strings.ReplaceAll(path, "{name...}", "a/b"), "{id}", sampleLease)
			body := sample
			if q, rest, ok := strings.Cut(sample, " "); ok && strings.HasPrefix(q, "?") {
				path, body = path+q, rest
			} else if strings.HasPrefix(sample, "?") {
				path, body = path+sample, ""
			}
			newReq := func() *http.Request {
				r := apiRequest(method, path, strings.NewReader(body))
				r.SetPathValue("name", "a/b")
				r.SetPathValue("id", sampleLease)
				return r
			}
			r := newReq()
			stale := strings.Contains(path, "stale") && !strings.Contains(path, "stale=0") && !strings.Contains(path, "stale=false")
			if got, want := s.routesToLeader(rt.place, r), !(rt.place.staleHere && stale); got != want {
				t.Errorf("%s %s: routed to the leader %v, want %v", method, path, got, want)
			}
			raw, _ := io.ReadAll(r.Body)
			u := undecoded(rt.place, r, raw)
			c, err := rt.ep(httptest.NewRecorder(), newReq())
			if err != nil {
				continue // refused: the leader answers 4xx, and nothing is held
			}
			checked++
			idem := func(c call) bool { return c.idempotent || method == http.MethodGet }
			if idem(u) != idem(c) || u.wait != c.wait || u.slow != c.slow || u.traced != c.traced || string(u.body) != string(c.body) && c.body != nil {
				t.Errorf("%s %s %s: the follower reads idempotent %v, wait %v, slow %v, traced %v; the decoded call says %v, %v, %v, %v",
					method, path, body, idem(u), u.wait, u.slow, u.traced, idem(c), c.wait, c.slow, c.traced)
			}
		}
	}
	for p := range placeSamples {
		found := false
		for _, rt := range s.apiRoutes() {
			found = found || rt.pattern == p && rt.place.leader
		}
		if !found {
			t.Errorf("placeSamples has %s, which is no route that needs the leader", p)
		}
	}
	if checked < 60 {
		t.Fatalf("only %d samples decoded; the table is not being exercised", checked)
	}
	t.Logf("%d samples decoded and compared", checked)
}

// unusedSemaphores and unusedElections stand for roles whose methods a test never calls:
// their endpoints take method values of them.
type unusedSemaphores struct{ SemaphoreService }

func (unusedSemaphores) Release(context.Context, string, cluster.LeaseID, uint64) error { return nil }
func (unusedSemaphores) Status(context.Context, string, cluster.Query) (cluster.SemaphoreView, error) {
	return cluster.SemaphoreView{}, nil
}

type unusedElections struct{ ElectionService }

func (unusedElections) Resign(context.Context, string, cluster.LeaseID, uint64) error { return nil }
func (unusedElections) Status(context.Context, string, cluster.Query) (cluster.ElectionView, error) {
	return cluster.ElectionView{}, nil
}
