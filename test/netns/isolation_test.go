package netns_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// isolation runs the isolation round's attack cases as the stranger who found them, testing a TLS
// (and a TLS+ACL) cluster from the same network:
//
//   - 27. with one member's node certificate (a follower's, taken from its host), a
//     registration of the leader's HTTP address at another port, sent with
//     X-Raftlock-Hops: 1 and X-Raftlock-Node naming the leader, as a relay of the
//     leader's own call would be: where followers send their forwards, and the lease IDs
//     in them;
//   - 28. with the same certificate and headers, a protocol-version claim for the leader;
//   - 29. with ACLs, /metrics read without a token and with a lock token: the counts of
//     answers by route and status (PUT /v1/locks' 200s are the grants, POST
//     /v1/acl/tokens' the token creations) and of forwards, which the overview's rule
//     withholds from both as it withholds the lease counts.
//
// Each case is sent to every node and must be refused and change nothing (leader, terms,
// members). A registration that was not refused (the code before this round) is put back
// with the leader's own certificate, so that the cases after it meet the cluster as it was.
func isolation(t *testing.T, ty *tally, c *testcluster.Processes, nw *network, k *pki, base view, admin, w, anon *client, acl bool) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }
	victim := -1
	for i := 0; i < n; i++ {
		if c.ID(i) == base.leader {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no leader in the baseline %v", base)
	}
	relay := (victim + 1) % n
	relayCert := k.NodeKeyPair(t, c.ID(relay))
	asRelay := newClient("https", k.ClientConfig(&relayCert), nil)
	victimCert := k.NodeKeyPair(t, c.ID(victim))
	asVictim := newClient("https", k.ClientConfig(&victimCert), nil)
	speaksFor := []string{"X-Raftlock-Hops", "1", "X-Raftlock-Node", c.ID(victim)}
	refused, code := 403, "permission_denied"
	if acl {
		refused, code = 401, "unauthenticated" // the stranger has the certificate, not a token
	}
	const what = "a follower's node certificate speaking for the leader"
	t.Logf("cases 27 and 28: %s's node certificate speaks for the leader %s", c.ID(relay), c.ID(victim))

	// 27. The leader's HTTP address re-pointed at another port of its host.
	hijack := fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":"%s:7002"}`, c.ID(victim), c.RaftAddr(victim), nw.IP(victim))
	own := fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":%q,"registration":true}`, c.ID(victim), c.RaftAddr(victim), c.HTTPAddr(victim))
	for i := 0; i < n; i++ {
		a := asRelay.do("POST", at(i), "/v1/cluster/nodes", hijack, speaksFor...)
		ty.check(fmt.Sprintf("%s: register its HTTP address at port 7002: %d", what, refused), c.ID(i),
			a.Status == refused && a.Code() == code && unmoved(t, c, admin, base), a.String())
		if a.Status != refused {
			putBack(t, c, admin, asVictim, victim, own, base)
		}
	}

	// 28. The leader's protocol version claimed by another member. The claim is the
	// version the cluster speaks, so that one let through changes nothing it could break.
	var proto float64
	if a := admin.do("GET", at(victim), "/v1/cluster", ""); a.Status == 200 {
		proto, _ = a.Body["protocol_version"].(float64)
	}
	if proto < 1 {
		t.Fatalf("no protocol_version in the leader's GET /v1/cluster")
	}
	claim := fmt.Sprintf(`{"max_version":%d}`, int(proto))
	for i := 0; i < n; i++ {
		a := asRelay.do("PUT", at(i), "/v1/cluster/nodes/"+c.ID(victim)+"/version", claim, speaksFor...)
		ty.check(fmt.Sprintf("%s: claim its protocol version: %d", what, refused), c.ID(i),
			a.Status == refused && a.Code() == code && unmoved(t, c, admin, base), a.String())
	}
	if !acl {
		return
	}

	// 29. /metrics' open counters. A legitimate user takes and releases a lock through
	// each node first, so that the node has answered a grant to count.
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("netns/usage-%d", i)
		g := admin.do("PUT", at(i), "/v1/locks/"+name, `{"ttl_ms":60000}`)
		if g.Status != 200 {
			t.Fatalf("acquire %s through %s: %v", name, c.ID(i), g)
		}
		token, _ := g.Body["token"].(float64)
		if r := admin.do("DELETE", at(i), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q,"token":%d}`, g.Body["lease_id"], int64(token))); r.Status != 200 {
			t.Fatalf("release %s: %v", name, r)
		}
		if r := admin.do("POST", at(victim), "/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, g.Body["lease_id"])); r.Status != 200 {
			t.Fatalf("revoke the lease of %s: %v", name, r)
		}
		grants := `raftlock_http_requests_total{code="200",route="PUT /v1/locks/{name...}"}`
		if m := admin.do("GET", at(i), "/metrics", ""); !strings.Contains(string(m.Raw), "\n"+grants+" ") {
			t.Fatalf("%s: the admin's /metrics has no %s: the case below could not fail", c.ID(i), grants)
		}
		for _, who := range []struct {
			what string
			cl   *client
		}{{"no token", anon}, {"a lock token", w}} {
			m := who.cl.do("GET", at(i), "/metrics", "")
			var shown []string
			for _, line := range strings.Split(string(m.Raw), "\n") {
				if strings.HasPrefix(line, "raftlock_http_requests_total") || strings.HasPrefix(line, "raftlock_forwarded_requests_total") {
					shown = append(shown, line)
				}
			}
			if m.Status == 200 && !strings.Contains(string(m.Raw), `raftlock_http_request_duration_seconds_bucket{route="PUT /v1/locks/{name...}"`) {
				t.Errorf("%s: /metrics with %s has no acquire latency histogram, which stays open", c.ID(i), who.what)
			}
			ty.check("/metrics with "+who.what+": no count of answers by route and status, nor of forwards", c.ID(i),
				m.Status == 200 && strings.Contains(string(m.Raw), "raftlock_raft_commit_index") && len(shown) == 0 && unmoved(t, c, admin, base),
				fmt.Sprintf("%d, shows %d lines, e.g. %q", m.Status, len(shown), first(shown)))
		}
	}
}

// putBack registers the victim's own HTTP address again with its own certificate, sent
// to the victim itself (the leader), after a registration case that was not refused: its
// entry follows the hijack's in the log. Then it waits until every node's membership is
// the baseline's again.
func putBack(t *testing.T, c *testcluster.Processes, admin, asVictim *client, victim int, own string, base view) {
	t.Helper()
	var last rawhttp.Answer
	testkit.WaitFor(t, 20*time.Second, "the leader's own HTTP address registered again", func() bool {
		last = asVictim.do("POST", c.HTTPAddr(victim), "/v1/cluster/nodes", own)
		return last.Status == 200
	})
	testkit.WaitFor(t, 20*time.Second, "every node to have the baseline's members again", func() bool {
		for i := range c.N() {
			if v, err := admin.view(c.HTTPAddr(i)); err != nil || v.members() != base.members {
				return false
			}
		}
		return true
	})
	t.Logf("put back %s's HTTP address (%v)", c.ID(victim), last)
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
