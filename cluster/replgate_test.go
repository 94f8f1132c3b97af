package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

// A follower that is down costs the leader's replication to it one failure per outage,
// not one per attempt (cluster/replgate.go): raft, which sleeps 10 ms x 2^(failures-2)
// before each attempt after a failure, up to 10.24 s, then stays at its first step, and
// sends the follower entries as soon as it answers heartbeats again. The follower is down
// for 8 heartbeat timeouts (4 s at the defaults), in which raft alone counts about ten
// failures (10+10+20+...+1280 ms of sleeps); with the gate every leader hands back at most
// two. Then the follower comes back and must catch up.
func TestReplGate_DownFollowerCostsOneFailurePerOutage(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	hb := c.Config(0).HeartbeatTimeout
	if hb == 0 {
		hb = 500 * time.Millisecond // Config's default
	}
	acquireMany(t, leaderNode(c), "before", 3)
	waitSameState(t, c)
	f := c.Follower()
	addr := c.Config(f).RaftBind
	returned := func() (sum uint64) {
		for i, n := range c.Nodes {
			if i != f && n != nil {
				sum += cluster.ReplicationFailuresReturned(n, addr)
			}
		}
		return sum
	}
	before := returned()
	c.Stop(f)
	down := time.Now()
	for i := 0; time.Since(down) < 8*hb; i++ {
		acquireMany(t, leaderNode(c), fmt.Sprintf("down%d", i), 1)
		time.Sleep(hb / 5) // pacing the writes, not waiting for a condition
	}
	if got := returned() - before; got > 2 {
		t.Fatalf("the leader handed raft %d replication failures to the stopped follower in %v; want at most 2 (one per outage)", got, time.Since(down).Round(time.Millisecond))
	} else {
		t.Logf("%d replication failures handed to raft in %v of outage", got, time.Since(down).Round(time.Millisecond))
	}
	c.Restart(f)
	back := time.Now()
	waitSameState(t, c)
	t.Logf("the follower caught up %v after its restart", time.Since(back).Round(time.Millisecond))
}
