package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// v3Leader is v2Leader waiting for protocol version 3.
func v3Leader(t testing.TB, c *clustertest.Cluster) *cluster.Node {
	t.Helper()
	return versionLeader(t, c, 3)
}

// A lockset of free locks is granted by one commit; a waiting set is granted whole by the
// release of its last held lock; two leases asking for each other's lock get one
// deadlock at once; a maximum hold ends a grant kept alive and hands the lock over.
func TestNode_LockSetsDeadlocksAndMaxHold(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := v3Leader(t, c)
	locks := l.Locks()

	g, err := locks.AcquireSet(ctx, cluster.LockSetRequest{Names: []string{"c", "a", "b"}, Holder: cluster.Holder{NewLease: true, TTL: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Locks) != 3 || g.Locks[0].Name != "a" || g.Locks[0].Token != g.Locks[1].Token || g.Locks[1].Token != g.Locks[2].Token {
		t.Fatalf("set grant %+v", g)
	}
	// One held name: nothing taken.
	var ne *cluster.NamesError
	if _, err := locks.AcquireSet(ctx, cluster.LockSetRequest{Names: []string{"a", "z"}, Holder: cluster.Holder{NewLease: true, TTL: 10 * time.Second}}); !errors.As(err, &ne) || !errors.Is(err, cluster.ErrLockHeld) || len(ne.Names) != 1 || ne.Names[0] != "a" {
		t.Fatalf("held set: %v", err)
	}
	if l.FSM().Lock("z").Held {
		t.Fatal("a refused set took z")
	}
	// A waiting set, granted when the first set is released.
	done := inBackground(t, "waiting set", func() (cluster.LockSetGrant, error) {
		return locks.AcquireSet(ctx, cluster.LockSetRequest{Names: []string{"a", "z"}, Holder: cluster.Holder{NewLease: true, TTL: 10 * time.Second, Wait: 30 * time.Second}})
	})
	c.WaitFor(10*time.Second, "the set queued", func() bool { return len(l.FSM().Lock("a").Waiters) == 1 })
	if err := locks.ReleaseSet(ctx, g.Lease, g.Locks); err != nil {
		t.Fatal(err)
	}
	g2 := <-done
	if len(g2.Locks) != 2 || g2.Locks[0].Token <= g.Locks[0].Token || g2.Locks[0].Token != g2.Locks[1].Token {
		t.Fatalf("waited set %+v after %+v", g2, g)
	}

	// Deadlock: A holds x and waits for y; B holds y and asks for x.
	ga, err := locks.Acquire(ctx, cluster.AcquireRequest{Name: "x", Holder: cluster.Holder{NewLease: true, TTL: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	gb, err := locks.Acquire(ctx, cluster.AcquireRequest{Name: "y", Holder: cluster.Holder{NewLease: true, TTL: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	waitA := make(chan error, 1)
	go func() {
		_, err := locks.Acquire(ctx, cluster.AcquireRequest{Name: "y", Holder: cluster.Holder{Lease: ga.Lease, Wait: 20 * time.Second}})
		waitA <- err
	}()
	c.WaitFor(10*time.Second, "A queued for y", func() bool { return len(l.FSM().Lock("y").Waiters) == 1 })
	start := time.Now()
	_, err = locks.Acquire(ctx, cluster.AcquireRequest{Name: "x", Holder: cluster.Holder{Lease: gb.Lease, Wait: 20 * time.Second}})
	var de *cluster.DeadlockError
	if !errors.As(err, &de) || len(de.Cycle) != 2 || de.Cycle[0].Lease != fsm.LeaseFingerprint(gb.Lease) {
		t.Fatalf("deadlock: %v", err)
	}
	t.Logf("deadlock answered after %v: %v", time.Since(start), err)
	if err := locks.Release(ctx, "y", gb.Lease, gb.Token); err != nil {
		t.Fatal(err)
	}
	if err := <-waitA; err != nil {
		t.Fatalf("A's wait: %v", err)
	}

	// Maximum hold: kept alive, still ended, handed to the waiter with a higher token.
	gm, err := locks.Acquire(ctx, cluster.AcquireRequest{Name: "m", Holder: cluster.Holder{NewLease: true, TTL: 3 * time.Second}, MaxHold: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go func() {
		tk := time.NewTicker(300 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				_, _ = l.Leases().KeepAlive(ctx, gm.Lease)
			}
		}
	}()
	defer close(stop)
	start = time.Now()
	gw, err := locks.Acquire(ctx, cluster.AcquireRequest{Name: "m", Holder: cluster.Holder{NewLease: true, TTL: 10 * time.Second, Wait: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("waiter granted %v after the maximum-hold grant", time.Since(start))
	if gw.Token <= gm.Token {
		t.Fatalf("token %d after %d", gw.Token, gm.Token)
	}
	if err := locks.Release(ctx, "m", gm.Lease, gm.Token); !errors.Is(err, cluster.ErrNotHolder) {
		t.Fatalf("old holder's release: %v", err)
	}
}
