package netns_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// leaseRoute is one request of the API that names a lease by its ID; local marks a stale
// read, which the node it reaches answers itself.
type leaseRoute struct {
	what, method, path, body string
	local                    bool
}

// leaseRoutes are the requests a token with lock rights on other/ can send with lease:
// every route of the API that takes a lease ID.
func leaseRoutes(lease string) []leaseRoute {
	id := fmt.Sprintf(`"lease_id":%q`, lease)
	return []leaseRoute{
		{"keepalive", "POST", "/v1/leases/" + lease + "/keepalive", "", false},
		{"keepalive (body)", "POST", "/v1/leases/keepalive", "{" + id + "}", false},
		{"keepalive (batch)", "POST", "/v1/leases/keepalive", fmt.Sprintf(`{"lease_ids":[%q]}`, lease), false},
		{"lookup", "GET", "/v1/leases/" + lease, "", false},
		{"lookup (body)", "POST", "/v1/leases/lookup", "{" + id + "}", false},
		{"lookup (stale)", "GET", "/v1/leases/" + lease + "?stale=true", "", true},
		{"revoke", "DELETE", "/v1/leases/" + lease, "", false},
		{"revoke (body)", "POST", "/v1/leases/revoke", "{" + id + "}", false},
		{"acquire", "PUT", "/v1/locks/other/probe", "{" + id + "}", false},
		{"release", "DELETE", "/v1/locks/other/probe", "{" + id + `,"token":7}`, false},
		{"lockset", "POST", "/v1/locksets", `{"names":["other/probe-1","other/probe-2"],` + id + "}", false},
		{"lockset release", "DELETE", "/v1/locksets", "{" + id + `,"locks":[{"name":"other/probe-1","token":7}]}`, false},
		{"semaphore", "PUT", "/v1/semaphores/other/probe", `{"limit":2,` + id + "}", false},
		{"semaphore release", "DELETE", "/v1/semaphores/other/probe", "{" + id + `,"token":7}`, false},
		{"campaign", "PUT", "/v1/elections/other/probe", `{"value":"v",` + id + "}", false},
		{"proclaim", "PUT", "/v1/elections/other/probe", `{"value":"v",` + id + `,"token":7}`, false},
		{"resign", "DELETE", "/v1/elections/other/probe", "{" + id + `,"token":7}`, false},
	}
}

// foreignOrUnknown is case 30, as the tenant that found it (a token with lock on other/)
// sent it: "both answer 404 lease_not_found, but a live lease of another token is refused
// in under a millisecond and a made-up ID goes through Raft". It sends every route that
// takes a lease ID, through every node, once with a made-up ID and once with the live
// lease of the netns/ worker, and checks the path, not the clock (the timing is the
// benchmark's, transport.BenchmarkLeaseRefusal):
//
//   - the made-up ID is refused (404 lease_not_found; a batch keepalive: 200 with it in
//     not_found) and adds no entry to the log: the leader's commit index does not move.
//     No lease is live while these are sent, so the leader writes no Tick of its own;
//   - the foreign lease gets the same answer: status, body (the ID aside) and
//     X-Raftlock-Leader, which says whether a follower relayed the leader's answer or
//     answered itself.
//
// Before the lease gate, the made-up ID was proposed on 13 of the 17 routes (through
// every node), and a follower refused the foreign lease itself on every route but the
// stale lookup while it forwarded the made-up one. On the leader the four reads were
// answered alike before too (their difference was a read barrier: timing only).
func foreignOrUnknown(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, w, other *client) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }
	leader := waitReady(t, c, admin, 20*time.Second)
	commit := func() uint64 {
		m := admin.do("GET", at(leader), "/metrics", "")
		v, err := strconv.ParseUint(gauge(string(m.Raw), "raftlock_raft_commit_index"), 10, 64)
		if m.Status != 200 || err != nil {
			t.Fatalf("the leader's commit index: %v (%v)", m, err)
		}
		return v
	}
	// No lease lives (every earlier case revoked its own), so the log comes to rest:
	// unmoved for two tick intervals (1 s each by default), after which the leader's
	// upgrade loop, which looks once a tick interval, has nothing left to write either.
	var rest uint64
	since := time.Now()
	testkit.WaitFor(t, 30*time.Second, "no lease live and the log at rest", func() bool {
		if m := admin.do("GET", at(leader), "/metrics", ""); gauge(string(m.Raw), "raftlock_leases") != "0" {
			since = time.Now()
			return false
		}
		if v := commit(); v != rest {
			rest, since = v, time.Now()
			return false
		}
		return time.Since(since) >= 2*time.Second
	})

	madeUp := randomHex(t, 16)
	type sent struct {
		a     rawhttp.Answer
		added uint64 // log entries added while it was answered
	}
	unknown := make([][]sent, n)
	for i := range n {
		for _, rt := range leaseRoutes(madeUp) {
			before := commit()
			a := other.do(rt.method, at(i), rt.path, rt.body)
			unknown[i] = append(unknown[i], sent{a, commit() - before})
		}
	}

	wl := w.do("POST", at(leader), "/v1/leases", `{"ttl_ms":120000}`)
	foreign, _ := wl.Body["lease_id"].(string)
	if wl.Status != 201 || foreign == "" {
		t.Fatalf("the worker's lease: %v", wl)
	}
	testkit.WaitFor(t, 10*time.Second, "every node to apply the worker's lease", func() bool {
		for i := range n {
			if a := w.do("POST", at(i), "/v1/leases/lookup?stale=true", fmt.Sprintf(`{"lease_id":%q}`, foreign)); a.Status != 200 {
				return false
			}
		}
		return true
	})
	var took [2][]time.Duration
	for i := range n {
		for ri, rt := range leaseRoutes(foreign) {
			f, u := other.do(rt.method, at(i), rt.path, rt.body), unknown[i][ri]
			took[0], took[1] = append(took[0], f.Took), append(took[1], u.a.Took)
			fb := strings.TrimSpace(strings.ReplaceAll(string(f.Raw), foreign, "ID"))
			ub := strings.TrimSpace(strings.ReplaceAll(string(u.a.Raw), madeUp, "ID"))
			fl, ul := f.Header.Get("X-Raftlock-Leader"), u.a.Header.Get("X-Raftlock-Leader")
			refused := u.a.Status == 404 && u.a.Code() == "lease_not_found"
			if rt.what == "keepalive (batch)" {
				refused = u.a.Status == 200 && ub == `{"leases":[],"not_found":["ID"]}`
			}
			relayed := i != leader && !rt.local
			ty.check("lease ID made up or another token's: one answer, no entry: "+rt.what, c.ID(i),
				refused && u.added == 0 && f.Status == u.a.Status && fb == ub && fl == ul && relayed == (fl != "") && unmoved(t, c, admin, base),
				fmt.Sprintf("made-up: %d %s, relayed by %q, %d log entries added; foreign: %d %s, relayed by %q", u.a.Status, ub, ul, u.added, f.Status, fb, fl))
		}
	}
	lv := w.do("POST", at(leader), "/v1/leases/lookup", fmt.Sprintf(`{"lease_id":%q}`, foreign))
	if lv.Status != 200 {
		t.Errorf("the worker's lease after the tenant's requests: %v, want it alive", lv)
	}
	revokeAs(admin, at(leader), foreign)
	t.Logf("case 30 (informative, not asserted): medians over %d requests, foreign %v, made-up %v",
		len(took[0]), medianOf(took[0]), medianOf(took[1]))
}

// medianOf returns the median of ds.
func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
