package cluster_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/test/testkit"
)

var errInjected = errors.New("injected tick failure")

// A leader whose tick fails retries it while it still leads: expiries keep happening.
// Without the retry, one failed tick would end the leader's clock for the rest of its term,
// and a lease nobody kept alive would never expire.
func TestLeader_FailedTickIsRetried(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	li := c.Leader(15 * time.Second)
	l := c.Nodes[li]
	cluster.InjectTickFaults(l, 3, errInjected)
	g, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "tick/retried", Holder: cluster.Holder{NewLease: true, TTL: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitFor(20*time.Second, "the lease to expire through retried ticks", func() bool {
		_, ok := l.FSM().Lease(g.Lease)
		return !ok
	})
	if c.LeaderIndex() != li {
		t.Fatalf("leadership moved from n%d; a few failed ticks should be retried, not abdicated", li+1)
	}
}

// A leader that cannot commit its clock entries for DutyTimeout hands leadership over,
// and the new leader's clock expires the lease.
func TestLeader_StepsDownWhenItCannotTick(t *testing.T) {
	c := clustertest.Start(t, 3, func(i int, cfg *cluster.Config) { cfg.DutyTimeout = time.Second })
	ctx := clustertest.Ctx(t, 60*time.Second)
	li := c.Leader(15 * time.Second)
	l := c.Nodes[li]
	cluster.InjectTickFaults(l, -1, errInjected)
	g, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "tick/stuck", Holder: cluster.Holder{NewLease: true, TTL: 500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	c.WaitFor(20*time.Second, "another node to lead", func() bool {
		i := c.LeaderIndex()
		return i >= 0 && i != li
	})
	c.WaitFor(20*time.Second, "the new leader to expire the lease", func() bool {
		_, ok := c.Nodes[c.Leader(10*time.Second)].FSM().Lease(g.Lease)
		return !ok
	})
}

// A node that steps down never goes on reporting itself a ready leader, even when it is
// deposed the moment it takes office.
func TestLeader_DeposedNodeIsNotReady(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	for round := 0; round < 8; round++ {
		li := c.Leader(15 * time.Second)
		l := c.Nodes[li]
		if err := l.Raft().LeadershipTransfer().Error(); err != nil {
			t.Logf("round %d: transfer: %v", round, err)
			continue
		}
		c.WaitFor(10*time.Second, "the deposed node to stop reporting ready", func() bool {
			return !l.IsLeader() || l.Raft().State().String() == "Leader"
		})
	}
	for i, n := range c.Nodes {
		if n.IsLeader() && n.Raft().State().String() != "Leader" {
			t.Fatalf("n%d reports a ready leader while raft says %s", i+1, n.Raft().State())
		}
	}
}

// A data directory holds lease IDs: it is private to the node's user, so are its
// snapshots, and a second process cannot open it (it fails at once rather than block).
func TestNode_DataDirPrivateAndExclusive(t *testing.T) {
	c := clustertest.Start(t, 1, nil)
	ctx := clustertest.Ctx(t, 30*time.Second)
	n := c.Nodes[c.Leader(15*time.Second)]
	if _, err := n.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "a", Holder: cluster.Holder{NewLease: true, TTL: 60000 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if err := n.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	dir := c.Config(0).DataDir
	var files int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v; group and others must have no access", path, perm)
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Fatalf("walked %d entries; expected the data dir, the log store and a snapshot", files)
	}

	cfg := c.Config(0)
	cfg.RaftBind, cfg.RaftAdvertise = testkit.FreePort(t), ""
	start := time.Now()
	second, err := cluster.New(cfg)
	if err == nil {
		second.Shutdown()
		t.Fatal("a second node opened a data directory in use")
	}
	if !errors.Is(err, cluster.ErrDataDirInUse) {
		t.Fatalf("second open: %v, want ErrDataDirInUse", err)
	}
	t.Logf("refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// An existing data directory created with a looser mode is tightened when a node opens it.
func TestNode_DataDirTightened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := clustertest.Start(t, 1, func(i int, cfg *cluster.Config) { cfg.DataDir = dir })
	c.Leader(15 * time.Second)
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v, want 0700", info.Mode().Perm())
	}
}

// An acquire without a lease that carries a request ID is idempotent: a retry gets the
// first attempt's grant, and a retried wait holds one place in the queue.
func TestNode_RequestIDMakesImplicitAcquireIdempotent(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := c.Nodes[c.Leader(15*time.Second)]
	req := cluster.AcquireRequest{Name: "rid/a", Holder: cluster.Holder{NewLease: true, TTL: 60000 * time.Millisecond, RequestID: "retry-me-0123456789abcdef"}}
	g1, err := l.Locks().Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := l.Locks().Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if g1 != g2 {
		t.Fatalf("retry got %+v, first attempt %+v", g2, g1)
	}
	if n := l.FSM().LeaseCount(); n != 1 {
		t.Fatalf("%d leases after a retried implicit acquire, want 1", n)
	}
	// Two attempts of one waiting request take one place in the queue.
	wreq := cluster.AcquireRequest{Name: "rid/a", Holder: cluster.Holder{NewLease: true, TTL: 60000 * time.Millisecond, RequestID: "waiter-0123456789abcdef", Wait: 30 * time.Second}}
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { _, err := l.Locks().Acquire(ctx, wreq); done <- err }()
	}
	c.WaitFor(10*time.Second, "the waiter to queue", func() bool { return len(l.FSM().Lock("rid/a").Waiters) > 0 })
	if v := l.FSM().Lock("rid/a"); len(v.Waiters) != 1 || l.FSM().LeaseCount() != 2 {
		t.Fatalf("waiters %d leases %d, want 1 and 2", len(v.Waiters), l.FSM().LeaseCount())
	}
	if err := l.Locks().Release(ctx, "rid/a", g1.Lease, g1.Token); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatalf("attempt of the waiting request: %v", err)
		}
	}
	var _ fsm.LeaseID
}

// A sweep that carries work over is paced: after each tick that leaves work, the tick loop
// waits as long as the tick took (stretched here to the TickInterval cap) before proposing
// the next. A lease holding four entries' worth of locks expires: the tick at its deadline
// and four more sweep it (each ends at most SweepBudget units: a grant is one, the lease
// one more), with a pause after each of the first four, so its locks cannot all be gone
// sooner than four pauses after the first went. Without the pause the ticks follow each
// other as fast as they commit (milliseconds on one node). The cap is asserted too: the pace
// asks for a million times the tick's commit time, and only the cap lets the sweep end
// within the 60 s wait.
func TestLeader_PacesASweepThatCarriesOver(t *testing.T) {
	t.Cleanup(cluster.SetSweepPace(1e6)) // registered first, so it runs after the shutdown
	const tick = 400 * time.Millisecond
	c := clustertest.Start(t, 1, func(i int, cfg *cluster.Config) { cfg.TickInterval = tick })
	ctx := clustertest.Ctx(t, 120*time.Second)
	l := c.Nodes[c.Leader(15*time.Second)]
	const ttl = 2 * time.Second
	first, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "pace/0", Holder: cluster.Holder{NewLease: true, TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	// Kept alive while its locks are taken, however slow the machine.
	stopRenewing := make(chan struct{})
	renewed := make(chan error, 1)
	go func() {
		tk := time.NewTicker(ttl / 5)
		defer tk.Stop()
		for {
			select {
			case <-stopRenewing:
				renewed <- nil
				return
			case <-tk.C:
				if _, err := l.Leases().KeepAlive(ctx, first.Lease); err != nil {
					renewed <- err
					return
				}
			}
		}
	}()
	const locks = 4 * fsm.SweepBudget
	names := make(chan string, locks)
	for i := 1; i < locks; i++ {
		names <- fmt.Sprintf("pace/%d", i)
	}
	close(names)
	errs := make(chan error, 8)
	for w := 0; w < cap(errs); w++ {
		go func() {
			for name := range names {
				if _, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: name, Holder: cluster.Holder{Lease: first.Lease}}); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < cap(errs); w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(stopRenewing)
	if err := <-renewed; err != nil {
		t.Fatalf("keeping the lease alive: %v", err)
	}
	if n := l.FSM().LockCount(); n != locks {
		t.Fatalf("%d locks held before the expiry, want %d", n, locks)
	}
	c.WaitFor(3*ttl+10*time.Second, "the lease's first locks to end", func() bool { return l.FSM().LockCount() < locks })
	started := time.Now() // at most one poll after the first sweep entry
	c.WaitFor(60*time.Second, "the sweep to end every lock of the lease", func() bool { return l.FSM().LockCount() == 0 })
	// One of the four pauses is left as the margin for the poll that saw the first entry.
	if took := time.Since(started); took < 3*tick {
		t.Fatalf("the sweep of %d locks ended %v after its first entry; with a pause of %v after each of its first four ticks it cannot end before %v", locks, took.Round(time.Millisecond), tick, 3*tick)
	}
}
