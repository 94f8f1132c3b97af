package netns_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// isolation runs issue 43's attack cases as the stranger who found them, testing a TLS
// (and a TLS+ACL) cluster from the same network:
//
//   - 27. with one member's node certificate (a follower's, taken from its host), a
//     registration of the leader's HTTP address at another port, sent with
//     X-Raftlock-Hops: 1 and X-Raftlock-Node naming the leader, as a relay of the
//     leader's own call would be: where followers send their forwards, and the lease IDs
//     in them;
//   - 28. with the same certificate and headers, a protocol-version claim for the leader.
//
// Each case is sent to every node and must be refused and change nothing (leader, terms,
// members). A registration that was not refused (the code before issue 43) is put back
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
