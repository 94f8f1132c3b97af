package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

func TestRestoreIndex(t *testing.T) {
	for _, tc := range []struct{ s, gap, floor, want uint64 }{
		{100, cluster.DefaultTokenGap, 0, 100 + cluster.DefaultTokenGap},
		{100, 0, 0, 100},
		{100, 10, 5000, 5000},
		{100, 10, 50, 110},
	} {
		if got, err := cluster.RestoreIndex(tc.s, tc.gap, tc.floor); err != nil || got != tc.want {
			t.Errorf("RestoreIndex(%d, %d, %d) = %d, %v; want %d", tc.s, tc.gap, tc.floor, got, err, tc.want)
		}
	}
	if _, err := cluster.RestoreIndex(10, ^uint64(0)-5, 0); !errors.Is(err, cluster.ErrRestoreIndex) {
		t.Errorf("overflow: %v", err)
	}
}

// A backup read from a live cluster, prepared at R and written into three fresh data
// directories, starts a cluster whose log continues above R: its first grant's token is
// above R, and everything else the backup held (time, version) is there.
func TestCluster_BackupRestoreStartsAboveIndex(t *testing.T) {
	old := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := leaderNode(old)
	// Let the cluster activate protocol version 2, so that the backup carries the
	// replicated node-version table the restore must drop.
	// (Followers register through their HTTP servers, which this test has none of.)
	for _, id := range []string{"n1", "n2", "n3"} {
		if err := l.Members().RegisterVersion(ctx, id, fsm.Version); err != nil {
			t.Fatal(err)
		}
	}
	old.WaitFor(15*time.Second, "protocol version 2", func() bool { return l.FSM().Version() == fsm.Version })
	g, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "accounts/A", Holder: cluster.Holder{NewLease: true, TTL: 60_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.Nodes[(old.Leader(5*time.Second)+1)%3].Backup(ctx); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("backup on a follower: %v, want ErrNotLeader", err)
	}
	state, sum, err := l.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Index < g.Token || sum.Locks != 1 || sum.Leases != 1 {
		t.Fatalf("backup summary %+v after a grant at %d", sum, g.Token)
	}
	old.Shutdown()

	const gap = 1000
	r, err := cluster.RestoreIndex(sum.Index, gap, 0)
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := fsm.PrepareRestore(state, r)
	if err != nil {
		t.Fatal(err)
	}
	// A data directory with state is refused and left alone.
	used := t.TempDir()
	if err := cluster.RestoreDataDir(used, prepared, r, []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:1"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cluster.RestoreDataDir(used, prepared, r, []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:1"}}, nil); !errors.Is(err, cluster.ErrExistingState) {
		t.Fatalf("second restore into the same directory: %v, want ErrExistingState", err)
	}
	if fi, err := os.Stat(used); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("restored data dir mode %v %v", fi.Mode(), err)
	}
	err = filepath.WalkDir(used, func(p string, d os.DirEntry, err error) error {
		if fi, _ := d.Info(); err == nil && !d.IsDir() && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", p, fi.Mode())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.RestoreDataDir(t.TempDir(), prepared, r+1, []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:1"}}, nil); !errors.Is(err, cluster.ErrRestoreIndex) {
		t.Fatalf("index that does not match the state: %v", err)
	}

	c := clustertest.Start(t, 3, func(i int, cfg *cluster.Config) {
		if err := cluster.RestoreDataDir(cfg.DataDir, prepared, r, cfg.Bootstrap, nil); err != nil {
			t.Fatal(err)
		}
	})
	l = leaderNode(c)
	g2, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "accounts/A", Holder: cluster.Holder{NewLease: true, TTL: 60_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if g2.Token <= r {
		t.Fatalf("first grant after restore has token %d, not above the restore index %d", g2.Token, r)
	}
	if l.FSM().Time() < sum.ClusterTimeMs || l.FSM().Version() != sum.ProtocolVersion {
		t.Fatalf("restored time %d (backup %d), version %d (backup %d)", l.FSM().Time(), sum.ClusterTimeMs, l.FSM().Version(), sum.ProtocolVersion)
	}
	// The restore dropped the old node-version table; the leader registers itself again.
	c.WaitFor(15*time.Second, "the leader to register its version", func() bool {
		_, ok := l.FSM().NodeVersion(l.ID())
		return ok
	})
	t.Logf("token before backup %d, backup index %d (protocol version %d), restore index %d, first token after %d", g.Token, sum.Index, sum.ProtocolVersion, r, g2.Token)
}
