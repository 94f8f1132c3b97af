package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

func TestNode_AcquireConflictAndHandover(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 30*time.Second)
	l := c.Nodes[c.Leader(10*time.Second)]

	a, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/1", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond, Owner: "A"}})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/1", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); !errors.Is(err, cluster.ErrLockHeld) {
		t.Fatalf("second acquire without wait: %v, want ErrLockHeld", err)
	}
	// A follower refuses with ErrNotLeader. On a loaded machine an election may move the
	// leadership between picking a follower and asking it (a CI run beside three test runs
	// saw the picked node become a candidate and answer ErrNoLeader): ask a follower again
	// while the answer is that no leader is ready, never accepting anything else.
	c.WaitFor(20*time.Second, "a follower to refuse with ErrNotLeader", func() bool {
		follower := c.Nodes[c.Follower()]
		_, err := follower.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "x", Holder: cluster.Holder{NewLease: true, TTL: 1000 * time.Millisecond}})
		if err != nil && !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNoLeader) {
			t.Fatalf("acquire on a follower: %v, want ErrNotLeader", err)
		}
		return errors.Is(err, cluster.ErrNotLeader)
	})
	l = c.Nodes[c.Leader(10*time.Second)]

	got := make(chan cluster.Grant, 1)
	errc := make(chan error, 1)
	go func() {
		g, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/1", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond, Wait: 20 * time.Second, Owner: "B"}})
		got <- g
		errc <- err
	}()
	c.WaitFor(10*time.Second, "B queued", func() bool { return len(l.FSM().Lock("card/1").Waiters) == 1 })
	if err := l.Locks().Release(ctx, "card/1", a.Lease, a.Token+1); !errors.Is(err, cluster.ErrNotHolder) {
		t.Fatalf("release with a wrong token: %v", err)
	}
	if err := l.Locks().Release(ctx, "card/1", a.Lease, a.Token); err != nil {
		t.Fatalf("release: %v", err)
	}
	b := <-got
	if err := <-errc; err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	v := l.FSM().Lock("card/1")
	if b.Token <= a.Token || v.Token != b.Token || v.Holder != b.Lease || b.Owner != "B" {
		t.Fatalf("handover: a=%+v b=%+v state=%+v", a, b, v)
	}
}

// A blocking query on a free lock wakes when the lock is taken, not at its timeout.
func TestNode_BlockingQueryOnFreeLockWakes(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 30*time.Second)
	l := c.Nodes[c.Leader(10*time.Second)]
	v, err := l.Locks().Status(ctx, "free", cluster.Query{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		l.Locks().Status(ctx, "free", cluster.Query{WaitIndex: v.ModifyIndex, Wait: 20 * time.Second})
		got <- time.Since(start)
	}()
	c.WaitFor(5*time.Second, "the query to register", func() bool { return l.Events().Watches() > 0 })
	if _, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "free", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		t.Logf("blocking query woke %v after it started", d)
	case <-time.After(15 * time.Second):
		t.Fatal("blocking query on a free lock did not wake when the lock was taken")
	}
}

// A release repeated by the lease that made it (a retry after an ambiguous answer)
// answers as the first did, from the lock's history; the same token from another lease,
// or a token this lease never released, is still refused, and nothing changes.
func TestNode_RepeatedReleaseAnswersAsTheFirst(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 30*time.Second)
	l := v2Leader(t, c) // lock histories are kept from protocol version 2
	a, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/2", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Locks().Release(ctx, "card/2", a.Lease, a.Token); err != nil {
		t.Fatal(err)
	}
	b, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/2", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Locks().Release(ctx, "card/2", a.Lease, a.Token); err != nil {
		t.Fatalf("repeated release by the releasing lease: %v, want nil", err)
	}
	if err := l.Locks().Release(ctx, "card/2", b.Lease, a.Token); !errors.Is(err, cluster.ErrNotHolder) {
		t.Fatalf("release of another lease's released grant: %v, want ErrNotHolder", err)
	}
	if err := l.Locks().Release(ctx, "card/2", a.Lease, b.Token); !errors.Is(err, cluster.ErrNotHolder) {
		t.Fatalf("release of a grant the lease never held: %v, want ErrNotHolder", err)
	}
	if v := l.FSM().Lock("card/2"); v.Holder != b.Lease || v.Token != b.Token {
		t.Fatalf("a refused or repeated release changed the lock: %+v", v)
	}
}
