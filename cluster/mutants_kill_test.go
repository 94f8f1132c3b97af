package cluster_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// Invariants 3 and 8: a keepalive or a release is answered only after its entry commits.
// The leader holds a lock for a lease, then is cut off from both followers; a keepalive
// and a release sent to it are appended to its log but can never commit, so neither may be
// answered as done (seen failing with the mutants keepalive-before-commit and
// release-before-commit, which answer once the entry is appended). After a new leader is
// elected and the network heals, the lease still holds the lock with its token: the
// release that was never committed released nothing. The test checks its precondition (the
// Renew and the Release are in the cut-off leader's log, above its commit index) and the
// kind of each answer, ErrUnknownOutcome (seen failing when Renew and Release are refused
// before raft.Apply, and when raft's ErrLeadershipLost is mapped to ErrNoLeader).
func TestCluster_NoKeepaliveOrReleaseWithoutMajority(t *testing.T) {
	c, links := startLinked(t)
	ctx := clustertest.Ctx(t, 60*time.Second)
	old := c.Leader(15 * time.Second)
	oldNode := c.Nodes[old]
	g, err := oldNode.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/2", Holder: cluster.Holder{NewLease: true, TTL: 60_000 * time.Millisecond, Owner: "holder"}})
	if err != nil {
		t.Fatal(err)
	}

	links.Isolate(old)
	cut := time.Now()
	if !oldNode.IsLeader() {
		t.Fatalf("precondition: %s stepped down %v after the cut, before the requests were sent", oldNode.ID(), time.Since(cut))
	}
	_, lastAtCut, err := oldNode.LogBounds()
	if err != nil {
		t.Fatal(err)
	}
	kerr, rerr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := oldNode.Leases().KeepAlive(ctx, g.Lease); kerr <- err }()
	go func() { rerr <- oldNode.Locks().Release(ctx, g.Name, g.Lease, g.Token) }()
	// Both entries were appended, so raft took them and a later leader could still commit
	// them had a follower stored them: the only right answer is "outcome unknown" (raft's
	// ErrLeadershipLost once the cut-off leader steps down), not "not leader" or "no
	// leader", which say nothing was proposed and invite a forward.
	kErr, rErr := <-kerr, <-rerr
	t.Logf("answers on the cut-off leader: keepalive %v; release %v", kErr, rErr)
	if err := kErr; err == nil {
		t.Errorf("the cut-off leader answered a keepalive (%v after the cut), though no follower could have stored its Renew entry", time.Since(cut))
	} else if !errors.Is(err, cluster.ErrUnknownOutcome) {
		t.Errorf("keepalive on the cut-off leader: %v, want ErrUnknownOutcome", err)
	}
	if err := rErr; err == nil {
		t.Errorf("the cut-off leader answered a release (%v after the cut), though no follower could have stored it", time.Since(cut))
	} else if !errors.Is(err, cluster.ErrUnknownOutcome) {
		t.Errorf("release on the cut-off leader: %v, want ErrUnknownOutcome", err)
	}
	// The precondition that makes the answers meaningful: the Renew and the Release reached
	// the old leader's log (past its commit index) and were never committed there.
	commit := oldNode.Raft().CommitIndex()
	logged, err := cluster.LoggedCommands(oldNode, lastAtCut)
	if err != nil {
		t.Fatal(err)
	}
	var renewAt, releaseAt uint64
	for _, e := range logged {
		switch {
		case e.Type == fsm.TypeRenew && slices.Contains(e.Leases, g.Lease):
			renewAt = e.Index
		case e.Type == fsm.TypeRelease && e.Lease == g.Lease && e.Token == g.Token:
			releaseAt = e.Index
		}
	}
	_, last, _ := oldNode.LogBounds()
	t.Logf("old leader after the answers: log %d..%d since the cut, commit index %d; Renew at %d, Release at %d", lastAtCut, last, commit, renewAt, releaseAt)
	if renewAt == 0 || releaseAt == 0 {
		t.Fatalf("precondition: the Renew (index %d) and the Release (index %d) were not both appended to the cut-off leader's log (%d entries since the cut)", renewAt, releaseAt, len(logged))
	}
	if renewAt <= commit || releaseAt <= commit {
		t.Fatalf("precondition: the Renew (index %d) or the Release (index %d) is at or below the cut-off leader's commit index %d", renewAt, releaseAt, commit)
	}

	next := (old + 1) % 3
	campaignNow(t, c, links, next)
	c.WaitFor(10*time.Second, c.Nodes[next].ID()+" to lead", c.Nodes[next].IsLeader)
	links.Heal()
	if v, err := c.Nodes[next].Locks().Status(ctx, g.Name, cluster.Query{}); err != nil || !v.Held || v.Token != g.Token {
		t.Fatalf("after healing: %+v %v, want still held with token %d", v, err, g.Token)
	}
}

// Invariant 0, step 1: a new leader's clock starts from the newest cluster time in its log,
// read after a barrier has applied every earlier commit. A single node runs a lease until
// cluster time passes 2 s, and restarts: raft re-applies its log only once the node leads
// again and commits, so a clock started without the barrier (mutant no-barrier), or from
// anything but the applied state (clock-own-base), starts near zero, and cluster time
// stands still until that clock has caught up. Here it must resume at once: an entry
// written shortly after the restart moves cluster time past its old value.
func TestCluster_RestartResumesClusterTime(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	n := c.Nodes[c.Leader(15*time.Second)]
	if _, err := n.Leases().Create(ctx, 60_000*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	clusterTime := func(n *cluster.Node) float64 { return float64(n.Metrics().ClusterTime.Milliseconds()) }
	c.WaitFor(10*time.Second, "cluster time to pass 2 s", func() bool { return clusterTime(n) >= 2000 })
	if _, err := n.Leases().Create(ctx, 60_000*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := clusterTime(n)

	n = c.Restart(0)
	c.WaitFor(15*time.Second, "the restarted node to lead", n.IsLeader)
	time.Sleep(300 * time.Millisecond) // real time for the new term's clock to count
	if _, err := n.Leases().Create(ctx, 60_000*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if after := clusterTime(n); after < before+200 {
		t.Fatalf("cluster time %v ms before the restart, %v ms at an entry written 300 ms after the restarted node led: the new term's clock did not start from the log's newest time", before, after)
	}
}
