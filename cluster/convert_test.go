package cluster_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

// The way back from raft-wal, and forth: a stopped node's data directory converted
// offline (ConvertLogStore) holds the same log, term and vote in the other store; the node
// started on it with the default setting keeps every grant and issues tokens above them.
// A single node, so nothing could be caught up from elsewhere; its log compacted, so the
// copy starts after a snapshot. A running node's directory is refused (its lock).
func TestConvertLogStore_WALToBoltDBAndBack(t *testing.T) {
	c := clustertest.Start(t, 1, func(_ int, cfg *cluster.Config) {
		cfg.LogStore = "" // auto: a new directory gets raft-wal
		cfg.SnapshotThreshold = 40
		cfg.SnapshotInterval = 100 * time.Millisecond
		cfg.TrailingLogs = 10
	})
	dir := c.Config(0).DataDir
	gs := acquireMany(t, leaderNode(c), "conv", 100)
	c.WaitFor(30*time.Second, "a snapshot that compacts the log", func() bool {
		first, _, err := leaderNode(c).LogBounds()
		return err == nil && first > 1
	})
	ctx := context.Background()
	if err := cluster.ConvertLogStore(ctx, dir, cluster.LogStoreBoltDB, nil, nil); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("converting a running node's directory: %v, want a refusal", err)
	}
	for round, to := range []cluster.LogStoreKind{cluster.LogStoreBoltDB, cluster.LogStoreWAL} {
		_, before, err := leaderNode(c).LogBounds()
		if err != nil {
			t.Fatal(err)
		}
		c.Stop(0)
		var steps []string
		if err := cluster.ConvertLogStore(ctx, dir, to, clustertest.Logger(t, "convert"), func(s string) { steps = append(steps, s) }); err != nil {
			t.Fatal(err)
		}
		t.Logf("to %s: %s", to, strings.Join(steps, " | "))
		mustHaveStore(t, dir, to)
		if aside, _ := filepath.Glob(filepath.Join(dir, "*.before-"+to.String()+"-*")); len(aside) != 1 {
			t.Fatalf("the old store was not moved aside: %v", aside)
		}
		c.Restart(0)
		_, after, err := leaderNode(c).LogBounds()
		if err != nil || after < before {
			t.Fatalf("after converting to %s the log ends at %d (%v), before at %d", to, after, err, before)
		}
		mustHold(t, leaderNode(c), gs)
		g := acquireMany(t, leaderNode(c), "round"+string(rune('a'+round)), 1)[0]
		if g.Token <= gs[len(gs)-1].Token {
			t.Fatalf("token %d after converting to %s is not above %d", g.Token, to, gs[len(gs)-1].Token)
		}
		gs = append(gs, g)
	}
	if err := cluster.ConvertLogStore(ctx, t.TempDir(), cluster.LogStoreBoltDB, nil, nil); err == nil {
		t.Fatal("converting an empty directory succeeded")
	}
}
