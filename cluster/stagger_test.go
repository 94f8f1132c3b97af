package cluster_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

// TestSnapshotStagger_NextThresholdKeepsPhase: whatever index the last snapshot was taken
// at, the next one is due at an index of the node's phase (mod the base threshold), at
// least half a threshold and less than one and a half after the last.
func TestSnapshotStagger_NextThresholdKeepsPhase(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	for i := 0; i < 100_000; i++ {
		base := 1 + rng.Uint64N(20_000)
		phase := rng.Uint64N(base)
		last := rng.Uint64N(1 << 40)
		got := cluster.NextSnapshotThreshold(base, phase, last)
		if (last+got)%base != phase || got < base/2 || got >= base+base/2+1 || got == 0 {
			t.Fatalf("base %d phase %d last %d: threshold %d (next snapshot at %d, phase %d)", base, phase, last, got, last+got, (last+got)%base)
		}
	}
}

// TestSnapshotStagger_MembersHaveTheirOwnPhase: the three members of a bootstrap list get
// phases 0, 1/3 and 2/3 of the threshold, whatever order the list is in.
func TestSnapshotStagger_MembersHaveTheirOwnPhase(t *testing.T) {
	peers := []cluster.Peer{{ID: "n3", RaftAddr: "h3:1"}, {ID: "n1", RaftAddr: "h1:1"}, {ID: "n2", RaftAddr: "h2:1"}}
	want := map[string]uint64{"n1": 0, "n2": 8192 / 3, "n3": 2 * 8192 / 3}
	for id, w := range want {
		if got := (cluster.Config{ID: id, Bootstrap: peers}).SnapshotPhase(); got != w {
			t.Errorf("%s: phase %d, want %d", id, got, w)
		}
	}
}

// TestSnapshotStagger_ThreeNodes starts three nodes and checks that raft runs each with a
// threshold of its own, that after each node's snapshots its threshold points at its next
// phase point (one threshold further on the leader, which defers its snapshots), and that
// the deferral follows leadership when it moves.
func TestSnapshotStagger_ThreeNodes(t *testing.T) {
	const base = 60
	c := clustertest.Start(t, 3, func(i int, cfg *cluster.Config) {
		cfg.SnapshotThreshold = base
		cfg.SnapshotInterval = 50 * time.Millisecond
		cfg.TrailingLogs = 10
	})
	seen := map[uint64]string{}
	for i, n := range c.Nodes {
		th, _, _ := cluster.SnapshotThresholdOf(n)
		if other, dup := seen[th]; dup {
			t.Fatalf("%s and %s start with the same snapshot threshold %d", c.Config(i).ID, other, th)
		}
		seen[th] = c.Config(i).ID
	}
	// atPhase waits until node i's threshold points at its next phase point, deferred by one
	// threshold while it leads.
	atPhase := func(i int) {
		t.Helper()
		cfg := c.Config(i)
		phase := cfg.SnapshotPhase()
		var th, last uint64
		var leads bool
		c.WaitFor(10*time.Second, fmt.Sprintf("%s's threshold to point at its phase", cfg.ID), func() bool {
			th, last, leads = cluster.SnapshotThresholdOf(c.Nodes[i])
			want := cluster.NextSnapshotThreshold(base, phase, last)
			if leads {
				want += base
			}
			return th == want
		})
		t.Logf("%s: phase %d, leader %v, last snapshot at %d, next due at %d", cfg.ID, phase, leads, last, last+th)
	}
	acquireMany(t, leaderNode(c), "stagger", 200)
	c.WaitFor(30*time.Second, "a snapshot on every node", func() bool {
		for _, n := range c.Nodes {
			if _, last, _ := cluster.SnapshotThresholdOf(n); last == 0 {
				return false
			}
		}
		return true
	})
	for i := range c.Nodes {
		atPhase(i)
	}

	// Leadership moves: the new leader defers, the old one no longer does.
	old := c.LeaderIndex()
	to := c.Follower()
	if _, err := c.Nodes[old].Members().TransferLeadership(clustertest.Ctx(t, 20*time.Second), c.Config(to).ID); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(10*time.Second, "the new leader", func() bool {
		_, _, leads := cluster.SnapshotThresholdOf(c.Nodes[to])
		return leads
	})
	atPhase(old)
	atPhase(to)
	if th, _, _ := cluster.SnapshotThresholdOf(c.Nodes[to]); th < base+base/2 {
		t.Fatalf("the new leader's threshold %d is not deferred", th)
	}
}
