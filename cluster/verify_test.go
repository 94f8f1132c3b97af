package cluster_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// The checkpoint's type is one the state machine does not know and may skip: every
// release applies it as a tick. If fsm ever gives the number to a command, this fails.
func TestVerify_CheckpointTypeFree(t *testing.T) {
	if cluster.CheckpointType&fsm.FlagSkippable == 0 {
		t.Fatalf("checkpoint type %#x is not skippable", uint8(cluster.CheckpointType))
	}
	if v := cluster.CheckpointType.Since(); v != 0 {
		t.Fatalf("fsm knows the checkpoint type %#x (since version %d): give checkpoints another number", uint8(cluster.CheckpointType), v)
	}
}

// With verification on, every node verifies the ranges between the leader's checkpoints
// and finds nothing wrong.
func TestVerify_ClusterVerifiesItsLog(t *testing.T) {
	c := clustertest.Start(t, 3, func(_ int, cfg *cluster.Config) { cfg.VerifyInterval = 100 * time.Millisecond })
	acquireMany(t, leaderNode(c), "v", 10)
	c.WaitFor(20*time.Second, "every node to verify a range of its log", func() bool {
		for _, n := range c.Nodes {
			if n.Metrics().LogVerifyRanges == 0 {
				return false
			}
		}
		return true
	})
	for i, n := range c.Nodes {
		if m := n.Metrics(); m.LogVerifyFailures != 0 {
			t.Fatalf("n%d: %d verification failures on an intact log", i+1, m.LogVerifyFailures)
		}
	}
}

// A follower whose log segment is changed on disk after it stored the entries reports the
// corruption at the next checkpoint; the leader and the other follower do not.
func TestVerify_DetectsCorruptFollowerLog(t *testing.T) {
	c := clustertest.Start(t, 3, func(_ int, cfg *cluster.Config) {
		cfg.LogStore = cluster.LogStoreWAL
		cfg.VerifyInterval = time.Hour // checkpoints only when the test writes one
	})
	l := leaderNode(c)
	if err := cluster.WriteCheckpoint(l); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("corrupt-me-%d", time.Now().UnixNano())
	acquireMany(t, l, marker, 3)
	waitSameState(t, c)
	f := c.Follower()
	segs, _ := filepath.Glob(filepath.Join(c.Config(f).DataDir, "wal", "*.wal"))
	flipped := false
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(marker)); i >= 0 {
			fh, err := os.OpenFile(seg, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fh.WriteAt([]byte{b[i] ^ 0x20}, int64(i)); err != nil {
				t.Fatal(err)
			}
			fh.Close()
			flipped = true
			break
		}
	}
	if !flipped {
		t.Fatalf("no segment of n%d holds %q", f+1, marker)
	}
	if err := cluster.WriteCheckpoint(leaderNode(c)); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(20*time.Second, fmt.Sprintf("n%d to report the corruption", f+1), func() bool {
		return c.Nodes[f].Metrics().LogVerifyFailures > 0
	})
	for i, n := range c.Nodes {
		if i != f && n.Metrics().LogVerifyFailures != 0 {
			t.Fatalf("n%d reports a corruption that is n%d's alone", i+1, f+1)
		}
	}
}
