package netns_test

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// tally counts attack cases and the ones the cluster refused, per kind.
type tally struct {
	t       *testing.T
	mu      sync.Mutex
	cases   int
	refused int
	kinds   []string
	perKind map[string][2]int // cases, refused
}

func newTally(t *testing.T) *tally { return &tally{t: t, perKind: map[string][2]int{}} }

// check records one case; a case that was not refused fails the test with its detail.
func (ty *tally) check(kind, target string, refused bool, detail string) {
	ty.t.Helper()
	ty.mu.Lock()
	defer ty.mu.Unlock()
	k, seen := ty.perKind[kind]
	if !seen {
		ty.kinds = append(ty.kinds, kind)
	}
	k[0]++
	ty.cases++
	if refused {
		k[1]++
		ty.refused++
	} else {
		ty.t.Errorf("attack NOT refused: %s against %s: %s", kind, target, detail)
	}
	ty.perKind[kind] = k
}

func (ty *tally) report() {
	ty.t.Helper()
	for _, kind := range ty.kinds {
		k := ty.perKind[kind]
		ty.t.Logf("  %-58s cases %2d, refused %2d", kind, k[0], k[1])
	}
	ty.t.Logf("attack cases: %d, refused: %d", ty.cases, ty.refused)
}

// The cluster runs with mutual TLS between nodes and HTTPS with client certificates
// required, first alone and then with ACLs on as well. The test plays an
// attacker on the same network as the three "hosts" and counts its attempts and the
// cluster's refusals: plaintext, missing and foreign certificates on both ports, Raft RPCs
// from hashicorp/raft's own transport, a client certificate on the Raft port, membership
// changes and forged headers, a guessed lease ID, and (with ACLs) tokens without the
// rights a request needs. Nothing an attack sent may be applied, and Raft's term and
// leader may not move. Then the happy path runs across the namespaces over TLS: a lock
// through a follower, a waiter handed the lock, kill -9 of the leader with the lock and
// its token intact. Finally no node's log may hold a lease ID or ACL secret issued during
// the test.
//
// Without ACLs, the membership cases meet the TLS rule that a node registers only its own
// HTTP address, proven by its node certificate; with ACLs, they meet the admin right that
// membership needs (an admin may re-register any member, by design).
func TestNetns_AttackSuite(t *testing.T) {
	var cases, refused int
	for _, acl := range []bool{false, true} {
		name := "TLS"
		if acl {
			name = "TLS+ACL"
		}
		t.Run(name, func(t *testing.T) {
			ty := attackSuite(t, acl)
			cases, refused = cases+ty.cases, refused+ty.refused
		})
	}
	t.Logf("attack cases in all: %d, refused: %d", cases, refused)
}

// attackSuite runs the attacks and the happy path on a fresh network and cluster, with
// ACLs on when acl is set, and returns its tally.
func attackSuite(t *testing.T, acl bool) *tally {
	start := time.Now()
	const n = 3
	nw := newNetwork(t, n)
	k := newPKI(t, nw)
	// A longer election timeout than the default keeps a slow -race run (make test runs
	// every package at once on two cores) from holding a spurious election, which the
	// term checks below would take for a successful attack.
	flags := []string{"--election-timeout", "2s", "--pprof-addr", pprofAddr}
	if acl {
		flags = append(flags, "--acl")
		flags = append(flags, tenantFlags()...) // small quotas for cases 31 to 35
	}
	c := startCluster(t, nw, k, flags...)

	sec := newSecrets()
	worker := newClient("https", k.ClientConfig(&k.worker), sec) // the right CA's client certificate, no token yet
	waitReadyz(t, c, worker, 30*time.Second)
	var tok tokens // all empty without ACLs: the requests then carry no token
	if acl {
		tok = setUpACL(t, c, worker)
	}
	admin := worker.withToken(tok.admin)
	leader := waitReady(t, c, admin, 20*time.Second)
	// Followers register their HTTP addresses with the leader a moment after it takes
	// office; the baseline the attacks are compared with must come after that, on every
	// node (the baseline's membership is a follower's, which applies the registrations
	// after the leader).
	testkit.WaitFor(t, 15*time.Second, "every member's HTTP address to be registered, on every node", func() bool {
		for i := range n {
			v, err := admin.view(c.HTTPAddr(i))
			if err != nil || len(v.Nodes) != n {
				return false
			}
			for _, m := range v.Nodes {
				if m.HTTPAddr == "" {
					return false
				}
			}
		}
		return true
	})
	base := snapshot(t, c, admin)
	t.Logf("cluster ready: leader n%d, term %d, members %s (%v)", leader+1, base.term, base.members, time.Since(start).Round(time.Millisecond))

	ty := newTally(t)
	w := worker.withToken(tok.worker) // a legitimate worker's credentials
	lockBody := `{"owner":"mallory","ttl_ms":60000}`

	// 1. Plain HTTP to the HTTPS API.
	plain := newClient("http", nil, sec).withToken(tok.worker)
	for i := 0; i < n; i++ {
		a := plain.do("PUT", c.HTTPAddr(i), "/v1/locks/attack/plain-http", lockBody)
		ty.check("plain HTTP to the API port", c.ID(i), !a.OK(), a.String())
	}

	// 2. Plain TCP bytes to the Raft port.
	for i := 0; i < n; i++ {
		before := refusedPeers(worker, c, i)
		ok, detail := rawBytes(c.RaftAddr(i))
		ty.check("plain TCP bytes to the Raft port", c.ID(i), ok && nodeRefused(worker, c, i, before), detail)
	}

	// 3. and 4. HTTPS with a client certificate of another CA, and with none.
	foreign := newClient("https", k.ClientConfig(&k.foreignCli), sec).withToken(tok.worker)
	noCert := newClient("https", k.ClientConfig(nil), sec).withToken(tok.worker)
	for i := 0; i < n; i++ {
		a, ok := alerted(func() rawhttp.Answer {
			return foreign.do("PUT", c.HTTPAddr(i), "/v1/locks/attack/foreign-ca", lockBody)
		})
		ty.check("HTTPS with a client certificate of another CA: TLS alert", c.ID(i), ok, a.String())
		a, ok = alerted(func() rawhttp.Answer { return noCert.do("PUT", c.HTTPAddr(i), "/v1/locks/attack/no-cert", lockBody) })
		ty.check("HTTPS without a client certificate: TLS alert", c.ID(i), ok, a.String())
	}

	// 5. and 6. Raft RPCs through hashicorp/raft's NetworkTransport: plaintext, a node
	// certificate of another CA, and a client certificate of the cluster's own CA (which
	// opens the API but must never open consensus).
	attackers := []struct {
		kind string
		cert *tls.Certificate
	}{
		{"Raft %s over plaintext TCP (raft.NewTCPTransport)", nil},
		{"Raft %s with a node certificate of another CA", &k.foreignNode},
		{"Raft %s with a client certificate of the cluster CA", &k.worker},
	}
	for _, at := range attackers {
		tr, err := newAttackTransport(at.cert)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			before := refusedPeers(worker, c, i)
			err := sendAppendEntries(tr, c.ID(i), c.RaftAddr(i), base.term)
			ty.check(fmt.Sprintf(at.kind, "AppendEntries"), c.ID(i), err != nil && nodeRefused(worker, c, i, before) && unmoved(t, c, admin, base),
				fmt.Sprintf("error %v, cluster now %v", err, snapshot(t, c, admin)))
			before = refusedPeers(worker, c, i)
			err = sendTimeoutNow(tr, c.ID(i), c.RaftAddr(i))
			ty.check(fmt.Sprintf(at.kind, "TimeoutNow"), c.ID(i), err != nil && nodeRefused(worker, c, i, before) && unmoved(t, c, admin, base),
				fmt.Sprintf("error %v, cluster now %v", err, snapshot(t, c, admin)))
		}
		tr.Close()
	}

	// 7. and 8. Membership: re-pointing a member without "replace" (even with the admin
	// token), and registering n1's HTTP address, where followers send their forwards (and
	// the lease IDs in them), from a client certificate: plainly, and with a forged
	// X-Raftlock-Node header that only a node vouching for a node may send.
	repoint := fmt.Sprintf(`{"id":"n2","raft_addr":"%s:%s","http_addr":"%s:%s"}`, nw.Unused(), raftPort, nw.Unused(), httpPort)
	hijack := fmt.Sprintf(`{"id":"n1","raft_addr":%q,"http_addr":"%s:%s"}`, c.RaftAddr(0), nw.Unused(), httpPort)
	withToken := ""
	if acl {
		withToken = " (admin token)"
	}
	for i := 0; i < n; i++ {
		a := admin.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", repoint)
		ty.check("re-point member n2 without replace"+withToken+": 409", c.ID(i), a.Status == 409 && a.Code() == "conflict", a.String())
		a = w.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", hijack)
		ty.check("register n1's HTTP address with a client certificate: 403", c.ID(i), a.Status == 403 && a.Code() == "permission_denied", a.String())
		a = w.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", hijack, "X-Raftlock-Node", "n1")
		ty.check("same, with a forged X-Raftlock-Node: n1: 403", c.ID(i), a.Status == 403 && a.Code() == "permission_denied", a.String())
	}

	// 9. A forged hop counter on a request a follower would forward: only a member's
	// node certificate may carry it, so the follower drops it and forwards the request
	// as the client's own (X-Raftlock-Leader says it did), taking the lock once.
	for i := 0; i < n; i++ {
		if i == leader {
			continue
		}
		a := w.do("PUT", c.HTTPAddr(i), "/v1/locks/attack/hops", lockBody, "X-Raftlock-Hops", "-1000000")
		ty.check("forged X-Raftlock-Hops: -1000000 on a follower: dropped, forwarded as the client's", c.ID(i),
			(a.Status == 200 || a.Status == 409 && a.Code() == "lock_held") && a.Header.Get("X-Raftlock-Leader") != "", a.String())
		if id, _ := a.Body["lease_id"].(string); a.Status == 200 {
			if r := w.do("POST", c.HTTPAddr(leader), "/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, id)); r.Status != 200 {
				t.Fatalf("revoke the hop case's lease: %v", r)
			}
		}
	}

	// 10. A lease ID guessed at random.
	for i := 0; i < n; i++ {
		a := w.do("POST", c.HTTPAddr(i), "/v1/leases/keepalive", fmt.Sprintf(`{"lease_id":%q}`, randomHex(t, 16)))
		ty.check("keepalive of a random 32-hex lease ID: 404", c.ID(i), a.Status == 404 && a.Code() == "lease_not_found", a.String())
	}

	// 11. ACLs: no token, a read-only token, a token for another prefix, a read token on
	// membership.
	reader, other := worker.withToken(tok.reader), worker.withToken(tok.other)
	addNode := fmt.Sprintf(`{"id":"n9","raft_addr":"%s:%s","http_addr":"%s:%s"}`, nw.Unused(), raftPort, nw.Unused(), httpPort)
	for i := 0; i < n && acl; i++ {
		a := worker.do("PUT", c.HTTPAddr(i), "/v1/locks/netns/acl-none", lockBody)
		ty.check("ACL: acquire without a token: 401", c.ID(i), a.Status == 401 && a.Code() == "unauthenticated", a.String())
		a = worker.do("POST", c.HTTPAddr(i), "/v1/leases", `{"ttl_ms":60000}`)
		ty.check("ACL: create a lease without a token: 401", c.ID(i), a.Status == 401 && a.Code() == "unauthenticated", a.String())
		a = reader.do("PUT", c.HTTPAddr(i), "/v1/locks/netns/acl-read", lockBody)
		ty.check("ACL: acquire with a read-only token: 403", c.ID(i), a.Status == 403 && a.Code() == "permission_denied", a.String())
		a = other.do("PUT", c.HTTPAddr(i), "/v1/locks/netns/acl-other", lockBody)
		ty.check("ACL: acquire with a token for another prefix: 403", c.ID(i), a.Status == 403 && a.Code() == "permission_denied", a.String())
		a = reader.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", addNode)
		ty.check("ACL: add a voter with a read token: 403", c.ID(i), a.Status == 403 && a.Code() == "permission_denied", a.String())
		a = reader.do("DELETE", c.HTTPAddr(i), "/v1/cluster/nodes/n3", "")
		ty.check("ACL: remove a voter with a read token: 403", c.ID(i), a.Status == 403 && a.Code() == "permission_denied", a.String())
	}

	// 12. The confused deputy: a client without a valid token sends a follower a request
	// with a token the follower does not know, which the follower forwards to the leader
	// over its own node-certificate connection. The leader must judge the original caller,
	// not the follower: re-registering the follower's own address, claiming its protocol
	// version and reading the cluster are all refused as the client's (401).
	bogus := worker.withToken("not-a-token-of-this-cluster")
	for i := 0; i < n && acl; i++ {
		if i == leader {
			continue
		}
		self := fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":"%s:%s"}`, c.ID(i), c.RaftAddr(i), nw.Unused(), httpPort)
		a := bogus.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", self)
		ty.check("confused deputy: a follower's own registration, forwarded with an unknown token: 401", c.ID(i),
			a.Status == 401 && a.Code() == "unauthenticated" && unmoved(t, c, admin, base), a.String())
		a = bogus.do("PUT", c.HTTPAddr(i), "/v1/cluster/nodes/"+c.ID(i)+"/version", `{"max_version":1}`)
		ty.check("confused deputy: a follower's version claim, forwarded with an unknown token: 401", c.ID(i),
			a.Status == 401 && a.Code() == "unauthenticated" && unmoved(t, c, admin, base), a.String())
		a = bogus.do("GET", c.HTTPAddr(i), "/v1/cluster", "")
		ty.check("confused deputy: GET /v1/cluster, forwarded with an unknown token: 401", c.ID(i),
			a.Status == 401 && a.Code() == "unauthenticated", a.String())
	}

	// 12b. The same confused deputy without a client certificate: refused at the TLS
	// handshake, before any node could forward it.
	noCertBogus := noCert.withToken("not-a-token-of-this-cluster")
	for i := 0; i < n; i++ {
		if i == leader {
			continue
		}
		self := fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":"%s:%s"}`, c.ID(i), c.RaftAddr(i), nw.Unused(), httpPort)
		a := noCertBogus.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", self)
		ok := tlsRefusal(a.Err)
		if !ok && lostAlert(a.Err) {
			a, ok = alerted(func() rawhttp.Answer { return noCertBogus.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", self) })
		}
		ty.check("confused deputy without a client certificate: TLS alert", c.ID(i), ok && unmoved(t, c, admin, base), a.String())
	}

	// 13.-16. The second round's cases that need ACLs (roundtwo_test.go).
	if acl {
		roundTwo(t, ty, c, base, admin, w, other)
	}

	// 18.-21. Lease ownership and what a revoked token keeps (ownership_test.go).
	if acl {
		leaseOwnership(t, ty, c, base, admin, w, other)
	}

	// 22.-26. The third round's cases at the HTTP edge (roundthree_test.go).
	roundThree(t, ty, c, nw, base, admin, w, worker.withToken(tok.other), worker, acl)

	// 27.-29. A member's certificate speaking for another, /metrics' open counters
	// (isolation_test.go).
	isolation(t, ty, c, nw, k, base, admin, w, worker, acl)

	// 30. Another token's live lease and a made-up ID answered alike, on one path
	// (unknownlease_test.go).
	if acl {
		foreignOrUnknown(t, ty, c, base, admin, w, other)
	}

	// 31.-35. One tenant's flood, leases, bursts and churn beside another tenant
	// (quotas_test.go).
	if acl {
		tenants(t, ty, c, base, admin, worker)
	}

	// 17. A backup saved through the CLI past planted symlinks (symlink_test.go).
	plantedSymlinks(t, ty, c, k, admin.Token)

	// Nothing any attack sent was applied: no lock, no lease, the same members, term and
	// leader.
	if !unmoved(t, c, admin, base) {
		t.Errorf("after the attacks the cluster moved: was %v, now %v", base, snapshot(t, c, admin))
	}
	if a := admin.do("GET", c.HTTPAddr(leader), "/v1/locks?prefix=", ""); a.Status != 200 || !strings.Contains(string(a.Raw), `"locks":[]`) {
		t.Errorf("after the attacks GET /v1/locks: %v, want no lock", a)
	}
	// Each node's gauges, once it has applied the leader's last entry: a follower learns
	// the commit index of the suite's closing revokes with the next append, so it may
	// read one lease and one lock for a heartbeat after the leader reads none.
	for i := 0; i < n; i++ {
		var held []string
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			m := admin.do("GET", c.HTTPAddr(i), "/metrics", "")
			held = held[:0]
			for _, g := range []string{"raftlock_leases", "raftlock_locks_held"} {
				if v := gauge(string(m.Raw), g); v != "0" {
					held = append(held, fmt.Sprintf("%s is %q (%v)", g, v, m.Err))
				}
			}
			if len(held) == 0 || time.Now().After(deadline) {
				break
			}
		}
		for _, h := range held {
			t.Errorf("after the attacks n%d's %s 5 s after the leader's, want 0", i+1, h)
		}
	}
	ty.report()

	happyPath(t, c, w, admin, leader)

	leases, aclKeys := sec.list()
	checkLogs(t, c, leases, aclKeys)
	t.Logf("logs checked: %d lease IDs and %d ACL secrets issued during the test, in %d nodes' logs: none found", len(leases), len(aclKeys), n)
	t.Logf("attack suite took %v", time.Since(start).Round(time.Millisecond))
	return ty
}

// happyPath takes a lock through a follower, hands it to a waiter on release, kills the
// leader with kill -9 and checks that the new leader has the lock held by the waiter with
// its token unchanged. Leases are also created and kept alive through every node, so that
// the log check covers IDs that crossed the network in forwarded requests.
func happyPath(t *testing.T, c *testcluster.Processes, w, admin *client, leader int) {
	t.Helper()
	n := c.N()
	for i := 0; i < n; i++ {
		l := w.do("POST", c.HTTPAddr(i), "/v1/leases", `{"ttl_ms":60000}`)
		if l.Status != 201 {
			t.Fatalf("create a lease through n%d: %v", i+1, l)
		}
		ka := w.do("POST", c.HTTPAddr((i+1)%n), "/v1/leases/keepalive", fmt.Sprintf(`{"lease_id":%q}`, l.Body["lease_id"]))
		if ka.Status != 200 {
			t.Fatalf("keepalive through n%d: %v", (i+1)%n+1, ka)
		}
	}

	f1, f2 := (leader+1)%n, (leader+2)%n
	g := w.do("PUT", c.HTTPAddr(f1), "/v1/locks/netns/happy", `{"owner":"one","ttl_ms":60000}`)
	if g.Status != 200 {
		t.Fatalf("acquire through follower n%d over TLS: %v", f1+1, g)
	}
	waiter := make(chan rawhttp.Answer, 1)
	go func() {
		waiter <- w.do("PUT", c.HTTPAddr(f2), "/v1/locks/netns/happy", `{"owner":"two","ttl_ms":60000,"wait_ms":20000}`)
	}()
	testkit.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool {
		st := w.do("GET", c.HTTPAddr(leader), "/v1/locks/netns/happy", "")
		return st.Status == 200 && st.Body["waiters"] == float64(1)
	})
	rel := w.do("DELETE", c.HTTPAddr(f1), "/v1/locks/netns/happy", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, g.Body["lease_id"], g.Body["token"]))
	if rel.Status != 200 {
		t.Fatalf("release through n%d: %v", f1+1, rel)
	}
	got := <-waiter
	if got.Status != 200 || got.Body["owner"] != "two" || got.Body["token"].(float64) <= g.Body["token"].(float64) {
		t.Fatalf("the waiter through n%d: %v, want the lock with a token above %v", f2+1, got, g.Body["token"])
	}

	before := snapshot(t, c, admin)
	c.Kill(leader)
	var next int
	testkit.WaitFor(t, 20*time.Second, "a new leader after kill -9 of the old one", func() bool {
		ok, l := readyLeader(c, admin)
		next = l
		return ok && l >= 0 && l != leader
	})
	st := w.do("GET", c.HTTPAddr(next), "/v1/locks/netns/happy", "")
	if st.Status != 200 || st.Body["held"] != true || st.Body["owner"] != "two" || st.Body["token"] != got.Body["token"] {
		t.Fatalf("after failover to n%d: %v, want held by two with token %v", next+1, st, got.Body["token"])
	}
	after := snapshot(t, c, admin)
	t.Logf("happy path: acquired via n%d (token %v), waiter via n%d handed the lock (token %v), leader n%d killed (term %d), n%d leads (term %d) with the lock and token intact",
		f1+1, g.Body["token"], f2+1, got.Body["token"], leader+1, before.term, next+1, after.term)
}

// tokens are the ACL secrets the suite works with.
type tokens struct {
	admin  string // the bootstrap (global-management) token
	worker string // lock on netns/ and attack/
	reader string // read on everything
	other  string // lock on other/ only
}

// setUpACL bootstraps ACLs and creates the policies and tokens the suite uses, then waits
// until every node resolves every token.
func setUpACL(t *testing.T, c *testcluster.Processes, cl *client) tokens {
	t.Helper()
	var tok tokens
	var last rawhttp.Answer
	testkit.WaitFor(t, 20*time.Second, "ACL bootstrap to succeed", func() bool {
		last = cl.do("POST", c.HTTPAddr(0), "/v1/acl/bootstrap", "")
		tok.admin, _ = last.Body["secret_id"].(string)
		return last.Status == 200 && tok.admin != ""
	})
	admin := cl.withToken(tok.admin)
	// A node checks a token against its own copy of the ACL state before it forwards, so
	// a follower that has not applied the bootstrap yet answers 401 for a moment.
	testkit.WaitFor(t, 10*time.Second, "every node to know the management token", func() bool {
		for i := range c.N() {
			if a := admin.do("GET", c.HTTPAddr(i), "/v1/acl/token/self", ""); a.Status != 200 {
				return false
			}
		}
		return true
	})
	policies := map[string]string{
		"netns-worker": `{"rules":[{"prefix":"netns/","access":"lock"},{"prefix":"attack/","access":"lock"}]}`,
		"netns-reader": `{"rules":[{"prefix":"","access":"read"}]}`,
		"netns-other":  `{"rules":[{"prefix":"other/","access":"lock"}]}`,
	}
	for name, body := range policies {
		if a := admin.do("PUT", c.HTTPAddr(1), "/v1/acl/policies/"+name, body); a.Status != 200 {
			t.Fatalf("create ACL policy %s: %v", name, a)
		}
	}
	for _, p := range []struct {
		policy string
		secret *string
	}{{"netns-worker", &tok.worker}, {"netns-reader", &tok.reader}, {"netns-other", &tok.other}} {
		a := admin.do("POST", c.HTTPAddr(2), "/v1/acl/tokens", fmt.Sprintf(`{"description":"netns test","policies":[%q]}`, p.policy))
		if a.Status != 200 {
			t.Fatalf("create ACL token for %s: %v", p.policy, a)
		}
		*p.secret, _ = a.Body["secret_id"].(string)
	}
	testkit.WaitFor(t, 10*time.Second, "every node to resolve every token", func() bool {
		for i := range c.N() {
			for _, s := range []string{tok.admin, tok.worker, tok.reader, tok.other} {
				if a := cl.withToken(s).do("GET", c.HTTPAddr(i), "/v1/acl/token/self", ""); a.Status != 200 {
					return false
				}
			}
		}
		return true
	})
	return tok
}

// view is what an attack must not change: who leads, every node's term, the members.
type view struct {
	leader  string
	term    uint64
	terms   []uint64
	members string
}

func (v view) String() string {
	return fmt.Sprintf("leader %s, terms %v, members %s", v.leader, v.terms, v.members)
}

// snapshot reads GET /v1/cluster from every running node.
func snapshot(t *testing.T, c *testcluster.Processes, admin *client) view {
	t.Helper()
	var v view
	for i := range c.N() {
		if !c.Running(i) {
			continue
		}
		cv, err := admin.view(c.HTTPAddr(i))
		if err != nil {
			t.Logf("snapshot: %v", err)
			v.terms = append(v.terms, 0)
			continue
		}
		v.terms = append(v.terms, cv.Term)
		v.term = max(v.term, cv.Term)
		if cv.LeaderID != "" {
			v.leader = cv.LeaderID
		}
		v.members = cv.members()
	}
	return v
}

// unmoved reports whether the cluster's leader, every node's term and the membership are
// what they were in base.
func unmoved(t *testing.T, c *testcluster.Processes, admin *client, base view) bool {
	t.Helper()
	now := snapshot(t, c, admin)
	return now.String() == base.String()
}

// waitReadyz polls every node's /readyz (which needs no token) until all answer 200.
func waitReadyz(t *testing.T, c *testcluster.Processes, cl *client, timeout time.Duration) {
	t.Helper()
	testkit.WaitFor(t, timeout, "every node's /readyz to answer 200", func() bool {
		for i := range c.N() {
			if a := cl.do("GET", c.HTTPAddr(i), "/readyz", ""); a.Status != 200 {
				return false
			}
		}
		return true
	})
}

// refusedPeers reads node i's count of refused Raft peers from its metrics, scraping again
// for up to 5 s when a scrape fails (-1 then). The count, unlike the log, is never rate-limited.
func refusedPeers(m *client, c *testcluster.Processes, i int) int {
	v := -1
	testkit.Poll(5*time.Second, 50*time.Millisecond, func() bool {
		a := m.do("GET", c.HTTPAddr(i), "/metrics", "")
		f, err := strconv.ParseFloat(gauge(string(a.Raw), "raftlock_raft_peers_refused_total"), 64)
		if a.Status != 200 || err != nil {
			return false // a scrape that failed (the suite's own refused connections nearby): again
		}
		v = int(f)
		return true
	})
	return v
}

// nodeRefused waits (a few seconds at most) for node i to count a refused Raft peer beyond
// the before it had: proof that the node, not the attacker, ended the connection.
func nodeRefused(m *client, c *testcluster.Processes, i, before int) bool {
	return before >= 0 && testkit.Poll(5*time.Second, 20*time.Millisecond, func() bool { return refusedPeers(m, c, i) > before })
}

// gauge returns the value of an unlabelled Prometheus metric in text, or "".
func gauge(text, name string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return m[1]
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// tlsRefusal reports an error that is the server's TLS refusal (an alert such as
// "certificate required" or "unknown certificate authority", or the handshake failing on
// it), not some other failure such as a refused connection or a timeout.
func tlsRefusal(err error) bool {
	return err != nil && strings.Contains(err.Error(), "tls:")
}

// alerted sends a request (try) that the node must refuse with a TLS alert and reports
// whether it did. In TLS 1.3 the server checks the client's certificate only after the
// client has finished its side of the handshake, so the alert can reach net/http's read
// loop while its write loop is still sending the request: the call then fails with the
// write's "use of closed network connection" and the alert is lost. Only that answer is
// sent again (3 tries in all): a node that took the request would answer with a status,
// never with that error.
func alerted(try func() rawhttp.Answer) (rawhttp.Answer, bool) {
	a := try()
	for n := 1; n < 3 && lostAlert(a.Err); n++ {
		a = try()
	}
	return a, tlsRefusal(a.Err)
}

// lostAlert reports the error of a request whose connection the node closed while it was
// being written (see alerted).
func lostAlert(err error) bool {
	return errors.Is(err, net.ErrClosed) || err != nil && strings.Contains(err.Error(), "use of closed network connection")
}
