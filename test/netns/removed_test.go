package netns_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testkit"
)

// A removed node's certificate stays valid for its whole lifetime (there is no
// revocation), so it must prove nothing once the node is out of the membership: on the
// Raft port its AppendEntries with a higher term is refused by every member, and on the API
// it no longer speaks for a node (reading the cluster, claiming a version, re-registering
// itself need the right token). Nothing moves: members, registrations, term and leader.
func TestNetns_RemovedNodeCertificateIsRefused(t *testing.T) {
	const n = 3
	nw := newNetwork(t, n)
	k := newPKI(t, nw)
	c := startCluster(t, nw, k, "--election-timeout", "2s", "--acl")
	sec := newSecrets()
	worker := newClient("https", k.ClientConfig(&k.worker), sec)
	waitReadyz(t, c, worker, 30*time.Second)
	tok := setUpACL(t, c, worker)
	admin := worker.withToken(tok.admin)
	leader := waitReady(t, c, admin, 20*time.Second)

	// Remove a follower, and stop it: its certificate is all that is left of it.
	gone := (leader + 1) % n
	if a := admin.do("DELETE", c.HTTPAddr(leader), "/v1/cluster/nodes/"+c.ID(gone), ""); a.Status != 200 {
		t.Fatalf("remove %s: %v", c.ID(gone), a)
	}
	c.Kill(gone)
	var live []int
	for i := 0; i < n; i++ {
		if i != gone {
			live = append(live, i)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "the removal to reach every member", func() bool {
		for _, i := range live {
			v, err := admin.view(c.HTTPAddr(i))
			if err != nil || len(v.Nodes) != n-1 {
				return false
			}
		}
		return true
	})
	base := snapshot(t, c, admin)
	ty := newTally(t)
	cert := k.NodeKeyPair(t, c.ID(gone))

	tr, err := newAttackTransport(&cert)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, i := range live {
		before := refusedPeers(admin, c, i)
		err := sendAppendEntries(tr, c.ID(i), c.RaftAddr(i), base.term)
		ty.check("removed node's certificate: Raft AppendEntries with a higher term", c.ID(i),
			err != nil && nodeRefused(admin, c, i, before) && unmoved(t, c, admin, base), fmt.Sprintf("error %v, cluster now %v", err, snapshot(t, c, admin)))
	}
	asGone := newClient("https", k.ClientConfig(&cert), sec)
	self := fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":"%s:%s"}`, c.ID(gone), c.RaftAddr(gone), nw.Unused(), httpPort)
	for _, i := range live {
		a := asGone.do("GET", c.HTTPAddr(i), "/v1/cluster", "")
		ty.check("removed node's certificate: GET /v1/cluster without a token: 401", c.ID(i), a.Status == 401 && a.Code() == "unauthenticated", a.String())
		a = asGone.do("PUT", c.HTTPAddr(i), "/v1/cluster/nodes/"+c.ID(gone)+"/version", `{"max_version":1}`)
		ty.check("removed node's certificate: its version claim without a token: 401", c.ID(i), a.Status == 401 && a.Code() == "unauthenticated", a.String())
		a = asGone.do("POST", c.HTTPAddr(i), "/v1/cluster/nodes", self)
		ty.check("removed node's certificate: re-adding itself without a token: 401", c.ID(i),
			a.Status == 401 && a.Code() == "unauthenticated" && unmoved(t, c, admin, base), a.String())
	}
	if !unmoved(t, c, admin, base) {
		t.Errorf("after the attacks the cluster moved: was %v, now %v", base, snapshot(t, c, admin))
	}
	ty.report()
}
