package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

// diskFaults injects errors into one data directory's WAL segment operations.
type diskFaults struct {
	mu  sync.Mutex
	dir string
	ops map[string]error
}

func (d *diskFaults) set(dir string, ops map[string]error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dir, d.ops = dir, ops
}

func (d *diskFaults) fault(dir, op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if dir != d.dir {
		return nil
	}
	return d.ops[op]
}

// grantSomewhere takes lock name on whichever node leads, retrying while the cluster
// elects (a leader whose disk fails steps down), until the deadline.
func grantSomewhere(t *testing.T, c *clustertest.Cluster, name string, deadline time.Duration) cluster.Grant {
	t.Helper()
	var g cluster.Grant
	try := 0
	c.WaitFor(deadline, "a grant of "+name, func() bool {
		i := c.LeaderIndex()
		if i < 0 || c.Nodes[i] == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		// Each try takes a lock of its own: a try that failed may still have been
		// committed (a leader whose own write fails has sent the entry to the followers
		// already, and the next leader commits it; the answer was unknown_outcome), and
		// then its fresh lease holds the lock.
		try++
		g, err = c.Nodes[i].Locks().Acquire(ctx, cluster.AcquireRequest{Name: fmt.Sprintf("%s/try%d", name, try), Holder: cluster.Holder{NewLease: true, TTL: 120 * time.Second, Owner: "w"}})
		return err == nil
	})
	return g
}

// A raft-wal node whose disk is full (every segment write and file creation fails with
// ENOSPC) stops serving and says so; the others go on (it led, and stepped down); when
// space returns it appends again, catches up and serves again, with no restart and no
// acknowledged grant lost. Appending again after a failed write is raft-wal's own since
// v0.4.1 ("Fix behaviour on write failures": the failed append is rolled back), which this
// tests; on v0.4.0 raftlock reopened the WAL for it. A failed segment rotation still needs
// that reopen: TestWALStore_AppendsAgainAfterAFailedRotation.
func TestWALStore_FullDiskStopsWritesThenRecovers(t *testing.T) {
	var faults diskFaults
	t.Cleanup(cluster.SetWALFaults(faults.fault))
	c := clustertest.Start(t, 3, withStore(cluster.LogStoreWAL))
	gs := acquireMany(t, leaderNode(c), "before", 5)
	waitSameState(t, c)
	full := c.Leader(15 * time.Second)
	faults.set(c.Config(full).DataDir, map[string]error{"write": syscall.ENOSPC, "create": syscall.ENOSPC})
	// Bounded by time, not attempts: raft backs its replication to a node that rejects
	// appends off to 10.24 s.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		gs = append(gs, grantSomewhere(t, c, fmt.Sprintf("full/%d", i), 30*time.Second))
		if err := c.Nodes[full].StorageErr(); err != nil && c.LeaderIndex() != full {
			if !errors.Is(err, cluster.ErrStorage) || !strings.Contains(err.Error(), "free space") || c.Nodes[full].Ready() {
				t.Fatalf("n%d with a full disk: ready %v, %v", full+1, c.Nodes[full].Ready(), err)
			}
			t.Logf("n%d says: %v", full+1, err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n%d never reported its full disk", full+1)
		}
	}
	faults.set("", nil)
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		gs = append(gs, grantSomewhere(t, c, fmt.Sprintf("after/%d", i), 30*time.Second))
		if c.Nodes[full].StorageErr() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n%d did not recover once space returned: %v", full+1, c.Nodes[full].StorageErr())
		}
	}
	waitSameState(t, c)
	mustHold(t, leaderNode(c), gs)
	last := gs[len(gs)-1]
	if g := acquireMany(t, leaderNode(c), "end", 1)[0]; g.Token <= last.Token {
		t.Fatalf("token %d after recovery is not above %d", g.Token, last.Token)
	}
}

// A raft-wal node whose fsync fails (EIO) stops for good: it refuses every write even
// once the disk works again, StorageFailed closes (serve then exits for its supervisor),
// and started again it recovers from its disk and catches up, with no acknowledged grant
// lost and tokens still rising.
func TestWALStore_FsyncFailureStopsTheNodeForGood(t *testing.T) {
	var faults diskFaults
	t.Cleanup(cluster.SetWALFaults(faults.fault))
	c := clustertest.Start(t, 3, withStore(cluster.LogStoreWAL))
	gs := acquireMany(t, leaderNode(c), "before", 5)
	waitSameState(t, c)
	f := c.Follower()
	faults.set(c.Config(f).DataDir, map[string]error{"sync": syscall.EIO})
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		gs = append(gs, grantSomewhere(t, c, fmt.Sprintf("eio/%d", i), 30*time.Second))
		select {
		case <-c.Nodes[f].StorageFailed():
		default:
			if time.Now().After(deadline) {
				t.Fatalf("n%d's storage never failed for good", f+1)
			}
			continue
		}
		break
	}
	faults.set("", nil)
	gs = append(gs, acquireMany(t, leaderNode(c), "healed", 5)...)
	err := c.Nodes[f].StorageErr()
	if !errors.Is(err, cluster.ErrStorageFailed) || !errors.Is(err, cluster.ErrStorage) || c.Nodes[f].Ready() {
		t.Fatalf("n%d after its fsync failed and the disk healed: ready %v, %v; want ErrStorageFailed for good", f+1, c.Nodes[f].Ready(), err)
	}
	t.Logf("n%d says: %v", f+1, err)
	c.Restart(f)
	waitSameState(t, c)
	mustHold(t, leaderNode(c), gs)
	if g := acquireMany(t, leaderNode(c), "end", 1)[0]; g.Token <= gs[len(gs)-1].Token {
		t.Fatalf("token %d after the restart is not above %d", g.Token, gs[len(gs)-1].Token)
	}
}
