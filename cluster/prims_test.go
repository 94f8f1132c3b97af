package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/test/testkit"
)

// v2Leader registers every member's protocol version with the leader (followers do it
// through their HTTP servers, which these tests have none of), waits until every node runs
// protocol version 2, and returns the leader.
func v2Leader(t testing.TB, c *clustertest.Cluster) *cluster.Node {
	t.Helper()
	return versionLeader(t, c, 2)
}

// versionLeader is v2Leader waiting for protocol version v.
func versionLeader(t testing.TB, c *clustertest.Cluster, v uint64) *cluster.Node {
	t.Helper()
	l := leaderNode(c)
	for _, n := range c.Nodes {
		if err := l.Members().RegisterVersion(clustertest.Ctx(t, 10*time.Second), n.ID(), fsm.Version); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitFor(30*time.Second, fmt.Sprintf("protocol version %d everywhere", v), func() bool {
		for _, n := range c.Nodes {
			if n.FSM().Version() < v {
				return false
			}
		}
		return true
	})
	return leaderNode(c)
}

// inBackground runs call, a request that waits, in its own goroutine so that the test can
// make the commit that answers it, and returns the channel that gets its grant. An error
// fails the test as what.
func inBackground[G any](t *testing.T, what string, call func() (G, error)) <-chan G {
	done := make(chan G, 1)
	go func() {
		g, err := call()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		done <- g
	}()
	return done
}

// A waiting permit request is answered by the commit that releases a permit (its token
// is that entry's index), a waiting candidate by the resignation that elects it, and a
// waiting shared request by the release that frees the lock.
func TestNode_PrimWaitsAnsweredByTheFreeingCommit(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := v2Leader(t, c)

	p, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "pool", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "pool", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); !errors.Is(err, cluster.ErrSemaphoreFull) {
		t.Fatalf("full: %v", err)
	}
	var lc *cluster.LimitConflictError
	if _, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "pool", Limit: 4, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); !errors.As(err, &lc) || lc.Limit != 1 {
		t.Fatalf("limit conflict: %v", err)
	}
	semDone := inBackground(t, "waiting permit", func() (cluster.SemaphoreGrant, error) {
		return l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "pool", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond, Wait: 30 * time.Second}})
	})
	testkit.WaitFor(t, 10*time.Second, "a permit waiter", func() bool { return len(l.FSM().Semaphore("pool").Waiters) == 1 })
	if err := l.Semaphores().Release(ctx, "pool", p.Lease, p.Token); err != nil {
		t.Fatal(err)
	}
	g := <-semDone
	if v := l.FSM().Semaphore("pool"); g.Token <= p.Token || len(v.Permits) != 1 || v.Permits[0].Token != g.Token || v.ModifyIndex != g.Token {
		t.Fatalf("handover: grant %+v, state %+v", g, v)
	}

	e, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "svc", Value: "a", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil || e.Value != "a" || e.ModifyIndex != e.Token {
		t.Fatalf("campaign: %+v %v", e, err)
	}
	elDone := inBackground(t, "waiting candidate", func() (cluster.ElectionGrant, error) {
		return l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "svc", Value: "b", Holder: cluster.Holder{Owner: "B", NewLease: true, TTL: 10_000 * time.Millisecond, Wait: 30 * time.Second}})
	})
	testkit.WaitFor(t, 10*time.Second, "a candidate", func() bool { return len(l.FSM().Election("svc").Candidates) == 1 })
	if err := l.Elections().Resign(ctx, "svc", e.Lease, e.Token); err != nil {
		t.Fatal(err)
	}
	if g := <-elDone; g.Value != "b" || g.Owner != "B" || g.Token <= e.Token || g.ModifyIndex != g.Token {
		t.Fatalf("elected candidate: %+v", g)
	}

	w, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "db", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "db", Holder: cluster.Holder{Lease: w.Lease}, Shared: true}); !errors.Is(err, cluster.ErrModeConflict) {
		t.Fatalf("downgrade: %v", err)
	}
	reader := func() (cluster.Grant, error) {
		return l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "db", Shared: true, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond, Wait: 30 * time.Second}})
	}
	r1, r2 := inBackground(t, "waiting reader", reader), inBackground(t, "waiting reader", reader)
	testkit.WaitFor(t, 10*time.Second, "two readers waiting", func() bool { return len(l.FSM().Lock("db").Waiters) == 2 })
	if err := l.Locks().Release(ctx, "db", w.Lease, w.Token); err != nil {
		t.Fatal(err)
	}
	a, b := <-r1, <-r2
	if !a.Shared || a.Token != b.Token || a.Token <= w.Token {
		t.Fatalf("readers granted by one commit: %+v %+v", a, b)
	}
}

// A waiting request whose caller goes away leaves the queue (Dequeue), and a lease the
// request created for itself is revoked: nothing waits for a client that is gone.
func TestNode_AbandonedPrimWaitsAreDequeued(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := v2Leader(t, c)
	if _, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "s", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "e", Value: "v", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	// With its own lease, which stays: only the dequeue takes it out of the queue.
	own, err := l.Leases().Create(ctx, 30_000*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	queued := func() int { return len(l.FSM().Semaphore("s").Waiters) + len(l.FSM().Election("e").Candidates) }
	for _, newLease := range []bool{false, true} {
		leases := l.FSM().LeaseCount()
		for _, try := range []func(ctx context.Context) error{
			func(ctx context.Context) error {
				_, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "s", Limit: 1, Holder: cluster.Holder{Lease: own, NewLease: newLease, TTL: 10_000 * time.Millisecond, Wait: time.Minute}})
				return err
			},
			func(ctx context.Context) error {
				_, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "e", Value: "w", Holder: cluster.Holder{Lease: own, NewLease: newLease, TTL: 10_000 * time.Millisecond, Wait: time.Minute}})
				return err
			},
		} {
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- try(wctx) }()
			testkit.WaitFor(t, 10*time.Second, "queued", func() bool { return queued() == 1 })
			cancel()
			// As for locks: the caller went away after its request was proposed.
			if err := <-done; !errors.Is(err, cluster.ErrUnknownOutcome) {
				t.Fatalf("abandoned wait: %v", err)
			}
			testkit.WaitFor(t, 10*time.Second, "dequeued", func() bool { return queued() == 0 && l.FSM().LeaseCount() == leases })
		}
	}
	if _, ok := l.FSM().Lease(own); !ok {
		t.Fatal("the caller's own lease was revoked")
	}
	// A wait that ends in the state machine answers wait_timeout and leaves nothing.
	leases := l.FSM().LeaseCount()
	if _, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "s", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond, Wait: 300 * time.Millisecond}}); !errors.Is(err, cluster.ErrWaitTimeout) {
		t.Fatalf("timed-out wait: %v", err)
	}
	testkit.WaitFor(t, 10*time.Second, "implicit lease revoked", func() bool { return l.FSM().LeaseCount() == leases })
}

// An election status read with wait_index blocks until the next change of leader or value
// and returns it; a proclaim that does not change the value is not a change.
func TestNode_ElectionStatusBlocksUntilAChange(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := v2Leader(t, c)
	e, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "svc", Value: "v1", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.Elections().Status(ctx, "svc", cluster.Query{})
	if err != nil || v.ModifyIndex != e.Token {
		t.Fatalf("status: %+v %v", v, err)
	}
	got := make(chan fsm.ElectionView, 1)
	go func() {
		v, err := c.Nodes[c.Follower()].Elections().Status(ctx, "svc", cluster.Query{Stale: true, WaitIndex: e.Token, Wait: time.Minute})
		if err != nil {
			t.Errorf("blocking read: %v", err)
		}
		got <- v
	}()
	testkit.WaitFor(t, 10*time.Second, "the blocking read to watch", func() bool {
		n := 0
		for _, node := range c.Nodes {
			n += node.Events().Watches()
		}
		return n >= 1
	})
	same, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "svc", Value: "v1", Holder: cluster.Holder{Lease: e.Lease}, Token: e.Token})
	if err != nil || same.ModifyIndex != e.Token {
		t.Fatalf("proclaim of the same value: %+v %v", same, err)
	}
	p, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "svc", Value: "v2", Holder: cluster.Holder{Lease: e.Lease}, Token: e.Token})
	if err != nil {
		t.Fatal(err)
	}
	// Woken by the change, well before its minute is up.
	select {
	case v := <-got:
		if v.Value != "v2" || v.ModifyIndex != p.ModifyIndex || v.Token != e.Token {
			t.Fatalf("observer saw %+v, want the proclaim at %d", v, p.ModifyIndex)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the blocking read was not woken by the proclaim")
	}
	// A semaphore not in use is woken when another semaphore is deleted (its modify index
	// moves), never stranded.
	sv, err := l.Semaphores().Status(ctx, "idle", cluster.Query{})
	if err != nil {
		t.Fatal(err)
	}
	woke := make(chan fsm.SemaphoreView, 1)
	go func() {
		v, _ := l.Semaphores().Status(ctx, "idle", cluster.Query{WaitIndex: sv.ModifyIndex, Wait: time.Minute})
		woke <- v
	}()
	g, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "other", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Semaphores().Release(ctx, "other", g.Lease, g.Token); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-woke:
		if v.ModifyIndex <= sv.ModifyIndex || v.Limit != 0 {
			t.Fatalf("idle semaphore read: %+v", v)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the blocking read of a semaphore not in use was not woken when another was deleted")
	}
}

// While any member speaks only protocol version 1, the primitives are refused before
// anything is proposed (a version 1 node would halt on them); the lock works as before.
func TestNode_PrimsRefusedWhileAMemberSpeaksVersion1(t *testing.T) {
	c := clustertest.Start(t, 3, func(i int, cfg *cluster.Config) {
		if i == 2 {
			cfg.MaxVersion = 1
		}
	})
	ctx := clustertest.Ctx(t, 60*time.Second)
	l := leaderNode(c)
	before := l.FSM().AppliedIndex()
	if _, err := l.Semaphores().Acquire(ctx, cluster.SemaphoreRequest{Name: "s", Limit: 1, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); !errors.Is(err, cluster.ErrPrimsInactive) {
		t.Fatalf("semaphore at version 1: %v", err)
	}
	if _, err := l.Elections().Campaign(ctx, cluster.CampaignRequest{Name: "e", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); !errors.Is(err, cluster.ErrPrimsInactive) {
		t.Fatalf("campaign at version 1: %v", err)
	}
	if _, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "x", Shared: true, Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); !errors.Is(err, cluster.ErrPrimsInactive) {
		t.Fatalf("shared lock at version 1: %v", err)
	}
	if _, err := l.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "x", Holder: cluster.Holder{NewLease: true, TTL: 10_000 * time.Millisecond}}); err != nil {
		t.Fatalf("exclusive lock at version 1: %v", err)
	}
	if l.FSM().Version() != 1 || l.FSM().LeaseCount() != 1 || l.FSM().AppliedIndex() <= before {
		t.Fatalf("version %d, %d leases", l.FSM().Version(), l.FSM().LeaseCount())
	}
}
