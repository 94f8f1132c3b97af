package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// TestClient_InProcess runs the API, Mutex, RWMutex, Semaphore and Election tests against
// one shared three-node cluster; each subtest uses its own names.
func TestClient_InProcess(t *testing.T) {
	tc := testcluster.StartInProcess(t, 3, nil)
	eps := tc.Endpoints()

	t.Run("Primitives", func(t *testing.T) { testPrimitives(t, eps) })

	t.Run("LeaseKeepAliveAndClose", func(t *testing.T) {
		c := newClient(t, eps)
		// A TTL of many election timeouts with keepalives every tenth of it: a lost
		// keepalive or two (a leader change, a starved scheduler) cannot lose the lease,
		// while a client that stops renewing is still seen at once.
		ttl := starvedTTL(tc)
		interval := ttl / 10
		l := mustLease(t, c, ttl, client.WithKeepAliveInterval(interval))
		first := l.SafeUntil()
		if d := time.Until(first); d <= 0 || d > ttl {
			t.Fatalf("SafeUntil is %v from now; want within the TTL %v", d, ttl)
		}
		// Keepalives must push SafeUntil forward round after round: two rounds' worth of
		// extension needs at least two answered keepalives. The deadline is the TTL: a
		// lease not renewed by then would be lost.
		testkit.WaitFor(t, ttl, fmt.Sprintf("keepalives to extend SafeUntil by %v", 2*interval), func() bool {
			return l.SafeUntil().Sub(first) > 2*interval
		})
		if closed(l.Done()) {
			t.Fatalf("lease lost: %v", l.Err())
		}
		got, err := c.GetLease(ctxFor(t, 5*time.Second), l.ID())
		if err != nil || got.TTLMs != ttl.Milliseconds() {
			t.Fatalf("GetLease = %+v, %v; want TTL %v", got, err, ttl)
		}
		if err := l.Close(ctxFor(t, 5*time.Second)); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !closed(l.Done()) || !errors.Is(l.Err(), client.ErrLeaseClosed) {
			t.Fatalf("after Close: done=%v err=%v", closed(l.Done()), l.Err())
		}
		if _, err := c.GetLease(ctxFor(t, 5*time.Second), l.ID()); !errors.Is(err, client.ErrLeaseNotFound) {
			t.Fatalf("GetLease after Close = %v; want ErrLeaseNotFound", err)
		}
		if err := l.Close(ctxFor(t, time.Second)); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})

	t.Run("LeaseRevokedElsewhereIsLost", func(t *testing.T) {
		c := newClient(t, eps)
		l := mustLease(t, c, 2*time.Second)
		if _, err := c.Revoke(ctxFor(t, 5*time.Second), l.ID()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed 5 s after the lease was revoked")
		}
		if err := l.Err(); !errors.Is(err, client.ErrLeaseLost) || !errors.Is(err, client.ErrLeaseNotFound) {
			t.Fatalf("Err = %v; want ErrLeaseLost wrapping ErrLeaseNotFound", err)
		}
		if time.Now().Before(l.SafeUntil()) {
			t.Fatalf("SafeUntil still in the future after the loss")
		}
	})

	t.Run("LowLevelAcquireReleaseStatus", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 10*time.Second)
		name := "low/level a?b"
		g, err := c.Acquire(ctx, name, client.AcquireOptions{TTL: 5 * time.Second, Owner: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		if g.Name != name || g.Token == 0 || g.LeaseID == "" || g.Owner != "tester" || g.TTLMs != 5000 {
			t.Fatalf("grant = %+v", g)
		}
		st := mustStatus(t, c, name)
		if !st.Held || st.Token != g.Token || st.Owner != "tester" {
			t.Fatalf("status = %+v; want held with token %d", st, g.Token)
		}
		list, err := c.List(ctx, "low/")
		if err != nil || len(list) != 1 || list[0].Name != name {
			t.Fatalf("List = %+v, %v", list, err)
		}
		// Acquire is idempotent for the holder's lease.
		g2, err := c.Acquire(ctx, name, client.AcquireOptions{LeaseID: g.LeaseID})
		if err != nil || g2.Token != g.Token {
			t.Fatalf("re-acquire = %+v, %v; want the same grant", g2, err)
		}
		// A wrong token never releases.
		err = c.Release(ctx, name, g.LeaseID, g.Token+1)
		if !errors.Is(err, client.ErrNotHolder) || !errors.Is(err, &api.Error{Code: api.CodeNotHolder}) {
			t.Fatalf("release with a wrong token = %v; want ErrNotHolder", err)
		}
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeNotHolder {
			t.Fatalf("errors.As *api.Error = %v", ae)
		}
		if st := mustStatus(t, c, name); !st.Held || st.Token != g.Token {
			t.Fatalf("after a wrong release: %+v", st)
		}
		if err := c.Release(ctx, name, g.LeaseID, g.Token); err != nil {
			t.Fatal(err)
		}
		if st := mustStatus(t, c, name); st.Held {
			t.Fatalf("after release: %+v", st)
		}
		// A status read can block until the lock's next change.
		g3, err := c.Acquire(ctx, name, client.AcquireOptions{LeaseID: g.LeaseID})
		if err != nil {
			t.Fatal(err)
		}
		before := mustStatus(t, c, name)
		done := make(chan api.LockStatus, 1)
		go func() {
			st, _ := c.Status(ctx, name, client.StatusOptions{WaitIndex: before.ModifyIndex, Wait: 5 * time.Second})
			done <- st
		}()
		waitStart := time.Now()
		if err := c.Release(ctx, name, g.LeaseID, g3.Token); err != nil {
			t.Fatal(err)
		}
		if st := <-done; st.Held || st.ModifyIndex <= before.ModifyIndex {
			t.Fatalf("blocking status = %+v; want the lock freed after index %d", st, before.ModifyIndex)
		}
		if d := time.Since(waitStart); d > 3*time.Second {
			t.Fatalf("blocking status answered after %v, not at the change", d)
		}
		if _, err := c.Revoke(ctx, g.LeaseID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.KeepAlive(ctx, g.LeaseID); !errors.Is(err, client.ErrLeaseNotFound) {
			t.Fatalf("keepalive of a revoked lease = %v", err)
		}
		info, err := c.Cluster(ctx)
		if err != nil || info.LeaderID == "" || len(info.Nodes) != 3 {
			t.Fatalf("Cluster = %+v, %v", info, err)
		}
		if _, err := c.Acquire(ctx, "", client.AcquireOptions{}); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("empty name = %v; want ErrInvalid", err)
		}
	})

	t.Run("MutexLockUnlockTryLock", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 10*time.Second)
		l := mustLease(t, c, 2*time.Second)
		m := client.NewMutex(l, "mutex/basic", client.WithOwner("a"))
		if !closed(m.Lost()) || m.Token() != 0 {
			t.Fatal("an unlocked Mutex must report Lost closed and token 0")
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		tok := m.Token()
		if tok == 0 || closed(m.Lost()) {
			t.Fatalf("token %d, lost %v", tok, closed(m.Lost()))
		}
		if err := m.Lock(ctx); err != nil || m.Token() != tok {
			t.Fatalf("Lock while held = %v, token %d", err, m.Token())
		}
		other := c.NewMutex("mutex/basic", client.WithLeaseTTL(2*time.Second))
		err := other.TryLock(ctx)
		if !errors.Is(err, client.ErrLockHeld) || !errors.Is(err, &api.Error{Code: api.CodeLockHeld}) {
			t.Fatalf("TryLock on a held lock = %v; want ErrLockHeld", err)
		}
		if st := mustStatus(t, c, "mutex/basic"); st.Token != tok || st.Owner != "a" {
			t.Fatalf("status %+v", st)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Unlock(ctx); !errors.Is(err, client.ErrNotLocked) {
			t.Fatalf("second Unlock = %v; want ErrNotLocked", err)
		}
		if err := other.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		if other.Token() <= tok {
			t.Fatalf("new token %d not above %d", other.Token(), tok)
		}
		ownLease := other.Lease().ID()
		if err := other.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetLease(ctx, ownLease); !errors.Is(err, client.ErrLeaseNotFound) {
			t.Fatalf("the Mutex's own lease survived Unlock: %v", err)
		}
		if closed(l.Done()) {
			t.Fatalf("shared lease lost: %v", l.Err())
		}
	})

	t.Run("WaiterHandover", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 20*time.Second)
		name := "mutex/handover"
		a := lockedMutex(t, c, name)
		b := c.NewMutex(name, client.WithLeaseTTL(2*time.Second))
		got := make(chan error, 1)
		go func() { got <- b.Lock(ctx) }()
		testkit.WaitFor(t, 10*time.Second, "b to queue", func() bool { return mustStatus(t, c, name).Waiters == 1 })
		tokA := a.Token()
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("b not granted 10 s after a unlocked")
		}
		st := mustStatus(t, c, name)
		if b.Token() <= tokA || st.Token != b.Token() || st.Waiters != 0 {
			t.Fatalf("b token %d (a had %d), status %+v", b.Token(), tokA, st)
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("CancelledLockLeavesQueue", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 20*time.Second)
		name := "mutex/cancel"
		holder := lockedMutex(t, c, name)
		waitLease := mustLease(t, c, 2*time.Second)
		waiter := client.NewMutex(waitLease, name)
		wctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(wctx) }()
		testkit.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool { return mustStatus(t, c, name).Waiters == 1 })
		cancel()
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Lock = %v; want context.Canceled", err)
		}
		testkit.WaitFor(t, 10*time.Second, "the waiter to leave the queue", func() bool { return mustStatus(t, c, name).Waiters == 0 })
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if st := mustStatus(t, c, name); st.Held {
			t.Fatalf("the lock went to the cancelled waiter: %+v", st)
		}
		lv, err := c.GetLease(ctx, waitLease.ID())
		if err != nil || len(lv.Locks) != 0 {
			t.Fatalf("waiter's lease = %+v, %v; want no locks", lv, err)
		}
		third := c.NewMutex(name, client.WithLeaseTTL(2*time.Second))
		if err := third.TryLock(ctx); err != nil {
			t.Fatalf("another lease cannot take the lock: %v", err)
		}
		third.Unlock(ctx)
	})

	t.Run("LockDeadlineAndWaitChunks", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 20*time.Second)
		name := "mutex/chunks"
		holder := lockedMutex(t, c, name)
		// A deadline ends the wait and leaves nothing queued.
		short := c.NewMutex(name, client.WithLeaseTTL(2*time.Second))
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := short.Lock(dctx)
		cancel()
		if !errors.Is(err, client.ErrWaitTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock past its deadline = %v", err)
		}
		testkit.WaitFor(t, 10*time.Second, "no waiters", func() bool { return mustStatus(t, c, name).Waiters == 0 })

		// Short chunks: the wait is re-issued and still ends in a grant.
		w := c.NewMutex(name, client.WithLeaseTTL(2*time.Second), client.WithWaitChunk(200*time.Millisecond))
		got := make(chan error, 1)
		go func() { got <- w.Lock(ctx) }()
		testkit.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool { return mustStatus(t, c, name).Waiters == 1 })
		first := mustStatus(t, c, name).ModifyIndex
		// Each re-issue leaves and re-enters the queue, moving the modify index.
		testkit.WaitFor(t, 10*time.Second, "a re-issued wait", func() bool {
			st := mustStatus(t, c, name)
			return st.ModifyIndex > first+1 && st.Waiters == 1
		})
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		w.Unlock(ctx)
	})

	t.Run("WaiterWithLostLeaseStops", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 20*time.Second)
		name := "mutex/lost-waiter"
		holder := lockedMutex(t, c, name)
		defer holder.Unlock(ctx)
		l := mustLease(t, c, 2*time.Second)
		waiter := client.NewMutex(l, name)
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		testkit.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool { return mustStatus(t, c, name).Waiters == 1 })
		if _, err := c.Revoke(ctx, l.ID()); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if !errors.Is(err, client.ErrLeaseLost) {
				t.Fatalf("Lock = %v; want ErrLeaseLost", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter kept waiting after its lease was revoked")
		}
		if err := waiter.Lock(ctx); !errors.Is(err, client.ErrLeaseLost) {
			t.Fatalf("Lock on a lost lease = %v", err)
		}
	})

	t.Run("LockLostWhenLeaseRevoked", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 20*time.Second)
		m := c.NewMutex("mutex/revoked", client.WithLeaseTTL(time.Second))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Revoke(ctx, m.Lease().ID()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-m.Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("Lost not closed after the lease was revoked")
		}
		if err := m.Unlock(ctx); !errors.Is(err, client.ErrLeaseNotFound) && !errors.Is(err, client.ErrNotHolder) {
			t.Fatalf("Unlock of a lost lock = %v", err)
		}
	})

	t.Run("LostBeforeServerExpiry", func(t *testing.T) {
		// The client reaches the cluster through a proxy that the test cuts; the servers
		// stay up and expire the lease by themselves. Lost must close at SafeUntil, before
		// the servers expire the lease.
		direct := newClient(t, eps)
		p := newCutProxy(t, eps[0])
		c := newClient(t, []string{p.url}, client.WithTimeout(500*time.Millisecond))
		ctx := ctxFor(t, 20*time.Second)
		// A wide drift margin leaves time to check that the servers still know the lease.
		m := c.NewMutex("mutex/cut", client.WithLeaseTTL(2*time.Second),
			client.WithLeaseOptions(client.WithDriftMargin(600*time.Millisecond)))
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		id := m.Lease().ID()
		p.cut.Store(true)
		cutAt := time.Now()
		var lostAt time.Time
		select {
		case <-m.Lost():
			lostAt = time.Now()
		case <-time.After(5 * time.Second):
			t.Fatal("Lost not closed 5 s after the network was cut")
		}
		safe := m.SafeUntil() // now the moment of the loss
		if !errors.Is(m.Lease().Err(), client.ErrLeaseLost) {
			t.Fatalf("lease err = %v", m.Lease().Err())
		}
		if late := lostAt.Sub(safe); late > 250*time.Millisecond {
			t.Fatalf("Lost closed %v after SafeUntil", late)
		}
		if lostAt.Sub(cutAt) > 2*time.Second {
			t.Fatalf("Lost closed %v after the cut, more than the TTL", lostAt.Sub(cutAt))
		}
		// The servers must still know the lease when the client gives up on it.
		if _, err := direct.GetLease(ctx, id); err != nil {
			t.Fatalf("the server had already expired the lease when the client noticed: %v", err)
		}
		testkit.WaitFor(t, 10*time.Second, "the server to expire the lease", func() bool {
			_, err := direct.GetLease(ctx, id)
			return errors.Is(err, client.ErrLeaseNotFound)
		})
		if st := mustStatus(t, direct, "mutex/cut"); st.Held {
			t.Fatalf("lock still held after expiry: %+v", st)
		}
	})
}

// TestClient_RetryAcrossStoppedNode lists a dead address and a stopped node before live
// ones: every call must still succeed.
func TestClient_RetryAcrossStoppedNode(t *testing.T) {
	tc := testcluster.StartInProcess(t, 3, nil)
	f := tc.Follower()
	tc.StopNode(f)
	eps := []string{"http://" + testkit.FreePort(t), tc.URL(f)}
	for i, u := range tc.Endpoints() {
		if i != f {
			eps = append(eps, u)
		}
	}
	c := newClient(t, eps, client.WithTimeout(time.Second), client.WithRetryBackoff(10*time.Millisecond, 100*time.Millisecond))
	ctx := ctxFor(t, 20*time.Second)
	l, err := c.NewLease(ctx, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	m := client.NewMutex(l, "retry/lock")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A client that knows only dead endpoints gives up when its context ends.
	dead := newClient(t, []string{"http://" + testkit.FreePort(t), tc.URL(f)}, client.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond))
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = dead.Acquire(dctx, "retry/lock", client.AcquireOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("acquire with no live endpoint = %v; want DeadlineExceeded and ErrUnavailable", err)
	}
}

// starvedTTL is a lease TTL for tests that need a lease kept alive on a loaded machine:
// twenty of the cluster's election timeouts, so that a leader change and keepalives
// starved for several election timeouts still fit inside one TTL.
func starvedTTL(tc *testcluster.InProcess) time.Duration {
	return 20 * tc.Nodes[0].ElectionTimeout()
}
