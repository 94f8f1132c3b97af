package transport_test

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/transport"
)

// leaseIDRoute is one request that names a lease by its ID; local marks one that the
// node it reaches answers itself (a stale read), which a follower does not forward.
type leaseIDRoute struct {
	what, method, path, body string
	local                    bool
}

// leaseIDRoutes are the requests that take a lease ID, each naming lease: with ACLs on,
// every one answers another token's lease as it answers an ID that names no lease.
func leaseIDRoutes(lease string) []leaseIDRoute {
	id := `"lease_id":"` + lease + `"`
	return []leaseIDRoute{
		{"keepalive", "POST", "/v1/leases/" + lease + "/keepalive", ``, false},
		{"keepalive (body)", "POST", "/v1/leases/keepalive", `{` + id + `}`, false},
		{"keepalive (batch)", "POST", "/v1/leases/keepalive", `{"lease_ids":["` + lease + `"]}`, false},
		{"lookup", "GET", "/v1/leases/" + lease, ``, false},
		{"lookup (body)", "POST", "/v1/leases/lookup", `{` + id + `}`, false},
		{"lookup (stale)", "GET", "/v1/leases/" + lease + "?stale=true", ``, true},
		{"revoke", "DELETE", "/v1/leases/" + lease, ``, false},
		{"revoke (body)", "POST", "/v1/leases/revoke", `{` + id + `}`, false},
		{"acquire", "PUT", "/v1/locks/jobs/gate", `{` + id + `}`, false},
		{"release", "DELETE", "/v1/locks/jobs/gate", `{` + id + `,"token":7}`, false},
		{"lockset", "POST", "/v1/locksets", `{"names":["jobs/gate-1","jobs/gate-2"],` + id + `}`, false},
		{"lockset release", "DELETE", "/v1/locksets", `{` + id + `,"locks":[{"name":"jobs/gate-1","token":7}]}`, false},
		{"semaphore", "PUT", "/v1/semaphores/jobs/gate", `{"limit":2,` + id + `}`, false},
		{"semaphore release", "DELETE", "/v1/semaphores/jobs/gate", `{` + id + `,"token":7}`, false},
		{"campaign", "PUT", "/v1/elections/jobs/gate", `{"value":"v",` + id + `}`, false},
		{"proclaim", "PUT", "/v1/elections/jobs/gate", `{"value":"v",` + id + `,"token":7}`, false},
		{"resign", "DELETE", "/v1/elections/jobs/gate", `{` + id + `,"token":7}`, false},
	}
}

// refusedLease reports whether a answers a request of route what as one on a lease that
// does not exist: 404 lease_not_found, or for a batch keepalive 200 with the lease in
// not_found.
func refusedLease(what string, a rawhttp.Answer, lease string) bool {
	if what == "keepalive (batch)" {
		var b api.KeepAliveBatch
		return a.Status == 200 && a.Decode(&b) == nil && len(b.Leases) == 0 && slices.Equal(b.NotFound, []string{lease})
	}
	return a.Status == 404 && a.Code() == api.CodeLeaseNotFound
}

// madeUpLeaseID draws a lease ID that names no lease.
func madeUpLeaseID(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// leaseGateCluster starts three in-process nodes with ACLs on, at the newest protocol
// version, with tick (zero: the default) as their TickInterval; it returns the management
// token and two tokens a and b with the same rights (lock on jobs/).
func leaseGateCluster(t testing.TB, tick time.Duration) (c *testcluster.InProcess, mgmt, a, b string) {
	c = testcluster.StartInProcessWith(t, 3, func(_ int, cfg *cluster.Config) { cfg.TickInterval = tick },
		func(_ int, cfg *transport.Config) { cfg.ACL = true })
	waitVersion(c, c.Nodes[0].FSM().MaxVersion())
	pol := `{"rules":[{"prefix":"jobs/","access":"lock"}]}`
	mgmt, toks := aclSetup(t, c, map[string]string{"a": pol, "b": pol})
	return c, mgmt, toks["a"], toks["b"]
}

// createLease creates a lease with an hour's TTL through node i as token, waits until
// every node has applied it, and returns it.
func createLease(t testing.TB, c *testcluster.InProcess, token string, i int) string {
	t.Helper()
	var l api.Lease
	if st, code := callAs(t, token, "POST", c.URL(i)+"/v1/leases", `{"ttl_ms":3600000}`, &l); st != 201 {
		t.Fatalf("create a lease: %d %s", st, code)
	}
	id, err := cluster.ParseLeaseID(l.LeaseID)
	if err != nil {
		t.Fatal(err)
	}
	c.WaitFor(10*time.Second, "every node to apply the new lease", func() bool {
		for _, n := range c.Nodes {
			if _, ok := n.FSM().Lease(id); !ok {
				return false
			}
		}
		return true
	})
	return l.LeaseID
}

// logAtRest waits until node i's log has not grown for two tick intervals, and returns
// its last index. With no lease live the leader proposes nothing of its own (no Tick; its
// upgrade loop, which looks once a tick interval, has nothing left to write once two have
// passed without an entry), so from then on every entry is a request's.
func logAtRest(t testing.TB, c *testcluster.InProcess, i int, tick time.Duration) uint64 {
	t.Helper()
	var last uint64
	since := time.Now()
	c.WaitFor(30*time.Second, "the log to rest for two tick intervals", func() bool {
		_, idx, err := c.Nodes[i].LogBounds()
		if err != nil || idx != last {
			last, since = idx, time.Now()
			return false
		}
		return time.Since(since) >= 2*tick
	})
	return last
}

// With ACLs on, token b's request with token a's live lease and with an ID that names no
// lease take one path, on every route that takes a lease ID, through the leader and
// through a follower: the same answer (status, body, and whether the leader relayed it:
// a follower forwards both), and neither proposes anything (a made-up ID adds no log
// entry; a keepalive of the foreign lease no Renew entry). a's own use of its lease is
// untouched.
//
// Before the lease gate, a made-up ID was proposed (a Renew, Revoke, Acquire, ...
// entry: 13 entries for the 17 routes through each node, 26 in all) and a foreign lease
// was refused by a follower itself, without the X-Raftlock-Leader of a relayed answer.
func TestACL_ForeignAndUnknownLeasesTakeOnePath(t *testing.T) {
	const tick = 250 * time.Millisecond
	c, _, ta, tb := leaseGateCluster(t, tick)
	li, fi := c.Leader(10*time.Second), c.Follower()
	nodes := []int{li, fi}
	madeUp := madeUpLeaseID(t)

	// 1. No lease lives yet, so the leader writes nothing of its own.
	before := logAtRest(t, c, li, tick)
	unknown := map[int][]rawhttp.Answer{}
	for _, i := range nodes {
		for _, rt := range leaseIDRoutes(madeUp) {
			a := rawhttp.Client{Token: tb}.Do(rt.method, c.URL(i)+rt.path, rt.body)
			if !refusedLease(rt.what, a, madeUp) {
				t.Errorf("n%d: %s with a made-up lease: %v, want it not found", i+1, rt.what, a)
			}
			unknown[i] = append(unknown[i], a)
		}
	}
	if _, after, err := c.Nodes[li].LogBounds(); err != nil || after != before {
		t.Errorf("the made-up lease's requests added %d log entries (%v), want none", after-before, err)
	}

	// 2. a's live lease, which b may not use.
	lease := createLease(t, c, ta, li)
	renews := c.Nodes[li].FSM().RenewEntries()
	for _, i := range nodes {
		for ri, rt := range leaseIDRoutes(lease) {
			f, u := rawhttp.Client{Token: tb}.Do(rt.method, c.URL(i)+rt.path, rt.body), unknown[i][ri]
			fb, ub := strings.ReplaceAll(string(f.Raw), lease, "ID"), strings.ReplaceAll(string(u.Raw), madeUp, "ID")
			fl, ul := f.Header.Get("X-Raftlock-Leader"), u.Header.Get("X-Raftlock-Leader")
			if f.Status != u.Status || fb != ub || fl != ul || (i == fi && !rt.local) != (fl != "") {
				t.Errorf("n%d: %s: a's lease answers %d %s (relayed by %q); a made-up one %d %s (relayed by %q); want the same, relayed by the leader on a follower only (but a stale read)",
					i+1, rt.what, f.Status, fb, fl, u.Status, ub, ul)
			}
		}
	}
	if n := c.Nodes[li].FSM().RenewEntries(); n != renews {
		t.Errorf("b's keepalives of a's lease proposed %d Renew entries, want none", n-renews)
	}
	// a's lease is as it was, and a still uses it through either node.
	for _, i := range nodes {
		if st, code := callAs(t, ta, "POST", c.URL(i)+"/v1/leases/"+lease+"/keepalive", "", nil); st != 200 {
			t.Errorf("n%d: a's keepalive of its own lease: %d %s", i+1, st, code)
		}
	}
}

// Without ACLs a made-up lease ID is refused on the leader's edge as well, through any
// node: no route proposes anything for it.
func TestLeaseGate_MadeUpIDProposesNothing(t *testing.T) {
	const tick = 250 * time.Millisecond
	c := testcluster.StartInProcess(t, 3, func(_ int, cfg *cluster.Config) { cfg.TickInterval = tick })
	waitVersion(c, c.Nodes[0].FSM().MaxVersion())
	li := c.Leader(10 * time.Second)
	madeUp := madeUpLeaseID(t)
	before := logAtRest(t, c, li, tick)
	for _, i := range []int{li, c.Follower()} {
		for _, rt := range leaseIDRoutes(madeUp) {
			if a := (rawhttp.Client{}).Do(rt.method, c.URL(i)+rt.path, rt.body); !refusedLease(rt.what, a, madeUp) {
				t.Errorf("n%d: %s with a made-up lease: %v, want it not found", i+1, rt.what, a)
			}
		}
	}
	if _, after, err := c.Nodes[li].LogBounds(); err != nil || after != before {
		t.Errorf("the made-up lease's requests added %d log entries (%v), want none", after-before, err)
	}
}

// A caller without a token (ACLs on, an anonymous policy with lock rights) uses the
// leases it made, which record the anonymous caller from protocol version 4 on; a token's
// lease is foreign to it, and its leases to a token.
func TestACL_AnonymousUsesItsOwnLeases(t *testing.T) {
	c, m, ta, _ := leaseGateCluster(t, 0)
	if st, code := callAs(t, m, "PUT", c.URL(c.Follower())+"/v1/acl/policies/anonymous", `{"rules":[{"prefix":"jobs/","access":"lock"}]}`, nil); st != 200 {
		t.Fatalf("the anonymous policy: %d %s", st, code)
	}
	li := c.Leader(10 * time.Second)
	c.WaitFor(10*time.Second, "every node to apply the anonymous policy", func() bool {
		for _, n := range c.Nodes {
			if _, ok := n.FSM().ACLPolicy("anonymous"); !ok {
				return false
			}
		}
		return true
	})
	mine := createLease(t, c, "", li)
	theirs := createLease(t, c, ta, li)
	for _, i := range []int{li, c.Follower()} {
		for _, rt := range leaseIDRoutes(mine)[:6] { // keepalives and lookups
			if a := (rawhttp.Client{}).Do(rt.method, c.URL(i)+rt.path, rt.body); a.Status != 200 || refusedLease(rt.what, a, mine) {
				t.Errorf("n%d: the anonymous caller's %s of its own lease: %v", i+1, rt.what, a)
			}
		}
		for _, x := range []struct{ token, lease, whose string }{{"", theirs, "a's lease by the anonymous caller"}, {ta, mine, "the anonymous lease by a"}} {
			if a := (rawhttp.Client{Token: x.token}).Do("POST", c.URL(i)+"/v1/leases/keepalive", `{"lease_id":"`+x.lease+`"}`); !refusedLease("keepalive", a, x.lease) {
				t.Errorf("n%d: keepalive of %s: %v, want it not found", i+1, x.whose, a)
			}
		}
	}
	if st, code := callAs(t, "", "DELETE", c.URL(li)+"/v1/leases/"+mine, "", nil); st != 200 {
		t.Errorf("the anonymous caller revokes its own lease: %d %s", st, code)
	}
}
