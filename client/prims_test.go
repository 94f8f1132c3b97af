package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testkit"
)

// testPrimitives runs RWMutex, Semaphore and Election against the cluster of
// TestClient_InProcess at eps; each subtest uses its own names.
func testPrimitives(t *testing.T, eps []string) {
	t.Run("RWMutexSharedThenExclusive", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 30*time.Second)
		const name = "rw/basic"
		a := c.NewRWMutex(name, client.WithOwner("a"), client.WithLeaseTTL(5*time.Second))
		b := client.NewRWMutex(mustLease(t, c, 5*time.Second), name, client.WithOwner("b"))
		if a.Mode() != "" || !closed(a.Lost()) {
			t.Fatal("an RWMutex that holds nothing must have no mode and Lost closed")
		}
		if err := a.RLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.TryRLock(ctx); err != nil {
			t.Fatalf("a second shared holder was refused: %v", err)
		}
		if a.Mode() != api.ModeShared || a.Token() == 0 || b.Token() <= a.Token() {
			t.Fatalf("mode %q, tokens %d then %d", a.Mode(), a.Token(), b.Token())
		}
		st := mustStatus(t, c, name)
		if !st.Held || st.Mode != api.ModeShared || st.HolderCount != 2 || len(st.Holders) != 2 ||
			st.Holders[0].Owner != "a" || st.Holders[1].Token != b.Token() {
			t.Fatalf("status of a lock held shared twice: %+v", st)
		}
		// No upgrade: a shared holder asking for exclusive is refused, and keeps its grant.
		if err := a.Lock(ctx); !errors.Is(err, client.ErrModeConflict) {
			t.Fatalf("Lock while holding shared = %v; want ErrModeConflict", err)
		}
		if err := a.RLock(ctx); err != nil || a.Mode() != api.ModeShared {
			t.Fatalf("RLock while holding shared = %v (mode %q); want nil at once", err, a.Mode())
		}
		w := c.NewRWMutex(name, client.WithOwner("w"), client.WithLeaseTTL(5*time.Second))
		if err := w.TryLock(ctx); !errors.Is(err, client.ErrLockHeld) {
			t.Fatalf("TryLock beside shared holders = %v; want ErrLockHeld", err)
		}
		got := make(chan error, 1)
		go func() { got <- w.Lock(ctx) }()
		testkit.WaitFor(t, 10*time.Second, "the writer to queue", func() bool { return mustStatus(t, c, name).Waiters == 1 })
		// A queued writer blocks later readers, so that writers do not starve.
		r := c.NewRWMutex(name, client.WithLeaseTTL(5*time.Second))
		if err := r.TryRLock(ctx); !errors.Is(err, client.ErrLockHeld) {
			t.Fatalf("TryRLock behind a queued writer = %v; want ErrLockHeld", err)
		}
		if err := a.RUnlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			t.Fatalf("the writer was granted (%v) while a reader still held the lock", err)
		default:
		}
		if err := b.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("writer: %v", err)
		}
		if w.Mode() != api.ModeExclusive || w.Token() <= b.Token() {
			t.Fatalf("writer holds mode %q with token %d; want exclusive above %d", w.Mode(), w.Token(), b.Token())
		}
		if st := mustStatus(t, c, name); st.Mode != api.ModeExclusive || st.HolderCount != 1 || st.Token != w.Token() {
			t.Fatalf("status while the writer holds: %+v", st)
		}
		if err := w.RLock(ctx); !errors.Is(err, client.ErrModeConflict) {
			t.Fatalf("RLock while holding exclusive = %v; want ErrModeConflict", err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Unlock(ctx); !errors.Is(err, client.ErrNotLocked) {
			t.Fatalf("second Unlock = %v; want ErrNotLocked", err)
		}
	})

	t.Run("RWMutexReadersGrantedTogether", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 30*time.Second)
		const name = "rw/together"
		w := c.NewRWMutex(name, client.WithLeaseTTL(5*time.Second))
		if err := w.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		readers := []*client.RWMutex{c.NewRWMutex(name, client.WithLeaseTTL(5*time.Second)), c.NewRWMutex(name, client.WithLeaseTTL(5*time.Second))}
		errs := make(chan error, len(readers))
		for _, r := range readers {
			go func() { errs <- r.RLock(ctx) }()
		}
		testkit.WaitFor(t, 10*time.Second, "both readers to queue", func() bool { return mustStatus(t, c, name).Waiters == 2 })
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		for range readers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		// Both were granted by the commit that freed the lock: the same entry, the same token.
		if readers[0].Token() != readers[1].Token() || readers[0].Token() <= w.Token() {
			t.Fatalf("reader tokens %d and %d after the writer's %d; want one handover entry", readers[0].Token(), readers[1].Token(), w.Token())
		}
		for _, r := range readers {
			if err := r.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("Semaphore", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 30*time.Second)
		const name = "sem/basic"
		s1 := c.NewSemaphore(name, 2, client.WithOwner("s1"), client.WithLeaseTTL(5*time.Second))
		s2 := client.NewSemaphore(mustLease(t, c, 5*time.Second), name, 2, client.WithOwner("s2"))
		if err := s1.TryAcquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s2.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if s1.Token() == 0 || s2.Token() <= s1.Token() || s1.Limit() != 2 {
			t.Fatalf("permit tokens %d and %d", s1.Token(), s2.Token())
		}
		if err := s2.Acquire(ctx); err != nil {
			t.Fatalf("Acquire while holding a permit = %v; want nil at once", err)
		}
		st, err := c.SemaphoreStatus(ctx, name, client.StatusOptions{})
		if err != nil || st.Limit != 2 || len(st.Permits) != 2 || st.Permits[0].Owner != "s1" || st.Permits[1].Token != s2.Token() {
			t.Fatalf("status = %+v, %v", st, err)
		}
		s3 := c.NewSemaphore(name, 2, client.WithOwner("s3"), client.WithLeaseTTL(5*time.Second))
		if err := s3.TryAcquire(ctx); !errors.Is(err, client.ErrSemaphoreFull) || !errors.Is(err, &api.Error{Code: api.CodeSemaphoreFull}) {
			t.Fatalf("TryAcquire of a full semaphore = %v; want ErrSemaphoreFull", err)
		}
		if err := c.NewSemaphore(name, 3, client.WithLeaseTTL(5*time.Second)).TryAcquire(ctx); !errors.Is(err, client.ErrLimitConflict) {
			t.Fatalf("another limit = %v; want ErrLimitConflict", err)
		}
		if err := c.NewSemaphore(name, 0).TryAcquire(ctx); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("limit 0 = %v; want ErrInvalid", err)
		}
		got := make(chan error, 1)
		go func() { got <- s3.Acquire(ctx) }()
		testkit.WaitFor(t, 10*time.Second, "s3 to queue", func() bool {
			st, err := c.SemaphoreStatus(ctx, name, client.StatusOptions{})
			return err == nil && st.Waiters == 1
		})
		before := s2.Token()
		if err := s1.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if s3.Token() <= before {
			t.Fatalf("handed-over permit token %d not above %d", s3.Token(), before)
		}
		// Losing the lease loses the permit, on the cluster and in the client.
		if _, err := c.Revoke(ctx, s2.Lease().ID()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s2.Lost():
		case <-ctx.Done():
			t.Fatal("Lost not closed after the permit's lease was revoked")
		}
		st, err = c.SemaphoreStatus(ctx, name, client.StatusOptions{})
		if err != nil || len(st.Permits) != 1 || st.Permits[0].Owner != "s3" {
			t.Fatalf("status after the revoke = %+v, %v", st, err)
		}
		if err := s3.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s3.Release(ctx); !errors.Is(err, client.ErrNotLocked) {
			t.Fatalf("second Release = %v; want ErrNotLocked", err)
		}
		// Not in use any more: the next acquirer may set another limit.
		s4 := c.NewSemaphore(name, 5, client.WithLeaseTTL(5*time.Second))
		if err := s4.TryAcquire(ctx); err != nil {
			t.Fatalf("a new limit once the semaphore is unused: %v", err)
		}
		if err := s4.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Election", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 30*time.Second)
		const name = "elect/basic"
		e1 := c.NewElection(name, client.WithOwner("e1"), client.WithLeaseTTL(5*time.Second))
		e2 := client.NewElection(mustLease(t, c, 5*time.Second), name, client.WithOwner("e2"))
		if err := e1.Proclaim(ctx, "x"); !errors.Is(err, client.ErrNotLocked) {
			t.Fatalf("Proclaim before leading = %v; want ErrNotLocked", err)
		}
		if l, err := e1.Leader(ctx); err != nil || l.Elected {
			t.Fatalf("Leader of a fresh election = %+v, %v", l, err)
		}
		octx, stop := context.WithCancel(ctx)
		defer stop()
		obs := e2.Observe(octx)
		next := func(what string) client.ElectionLeader {
			t.Helper()
			select {
			case l, ok := <-obs:
				if !ok {
					t.Fatalf("Observe closed before %s", what)
				}
				return l
			case <-ctx.Done():
				t.Fatalf("Observe sent nothing for %s", what)
			}
			return client.ElectionLeader{}
		}
		if l := next("the initial state"); l.Elected {
			t.Fatalf("initial observation %+v", l)
		}
		if err := e1.Campaign(ctx, "addr-1"); err != nil {
			t.Fatal(err)
		}
		tok := e1.Token()
		if l := next("e1's election"); !l.Elected || l.Owner != "e1" || l.Value != "addr-1" || l.Token != tok {
			t.Fatalf("observed %+v; want e1 leading addr-1 with token %d", l, tok)
		}
		if err := e2.TryCampaign(ctx, "addr-2"); !errors.Is(err, client.ErrElectionHeld) {
			t.Fatalf("TryCampaign against a leader = %v; want ErrElectionHeld", err)
		}
		got := make(chan error, 1)
		go func() { got <- e2.Campaign(ctx, "addr-2") }()
		testkit.WaitFor(t, 10*time.Second, "e2 to queue", func() bool {
			l, err := e1.Leader(ctx)
			return err == nil && l.Candidates == 1
		})
		if err := e1.Proclaim(ctx, "addr-1b"); err != nil {
			t.Fatal(err)
		}
		if e1.Token() != tok || e1.Value() != "addr-1b" {
			t.Fatalf("after a proclaim: token %d value %q", e1.Token(), e1.Value())
		}
		// The candidate counts moved the index too; skip to the proclaimed value.
		l := next("the proclaim")
		for l.Value != "addr-1b" {
			l = next("the proclaim")
		}
		if l.Token != tok || l.Owner != "e1" {
			t.Fatalf("observed proclaim %+v; want token %d kept", l, tok)
		}
		if err := e1.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if e2.Token() <= tok || e2.Value() != "addr-2" || e1.Value() != "" {
			t.Fatalf("after the handover: e2 token %d value %q, e1 value %q", e2.Token(), e2.Value(), e1.Value())
		}
		for l.Owner != "e2" {
			l = next("the handover")
		}
		if !l.Elected || l.Value != "addr-2" || l.Token != e2.Token() {
			t.Fatalf("observed handover %+v", l)
		}
		// The leader's lease ends: leadership is lost, on the cluster and in the client.
		if _, err := c.Revoke(ctx, e2.Lease().ID()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-e2.Lost():
		case <-ctx.Done():
			t.Fatal("Lost not closed after the leader's lease was revoked")
		}
		for l.Elected {
			l = next("the leader's lease ending")
		}
		if err := e2.Proclaim(ctx, "late"); !errors.Is(err, client.ErrNotHolder) && !errors.Is(err, client.ErrLeaseNotFound) {
			t.Fatalf("Proclaim after the lease ended = %v; want not_holder or lease_not_found", err)
		}
		stop()
		for range obs {
		}
	})

	t.Run("EventsAndHistoryOfEveryKind", func(t *testing.T) {
		c := newClient(t, eps)
		ctx := ctxFor(t, 30*time.Second)
		const prefix = "kinds/"
		all, err := c.Watch(ctx, prefix, client.WatchOptions{Kinds: []string{api.PrimitiveSemaphore, api.PrimitiveElection, api.PrimitiveLock}})
		if err != nil {
			t.Fatal(err)
		}
		defer all.Stop()
		locksOnly, err := c.Watch(ctx, prefix, client.WatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer locksOnly.Stop()
		sem := c.NewSemaphore(prefix+"pool", 2, client.WithOwner("worker"), client.WithLeaseTTL(5*time.Second))
		if err := sem.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		// Each hold ends with the subtest, so that no lease of it outlives the test and logs
		// through it.
		defer sem.Release(context.Background())
		el := c.NewElection(prefix+"leader", client.WithOwner("candidate"), client.WithLeaseTTL(5*time.Second))
		if err := el.Campaign(ctx, "v1"); err != nil {
			t.Fatal(err)
		}
		defer el.Resign(context.Background())
		m := lockedMutex(t, c, prefix+"lock")
		defer m.Unlock(context.Background())
		next := func(w *client.Watcher, what string) api.HistoryEvent {
			t.Helper()
			select {
			case ev, ok := <-w.Events():
				if !ok {
					t.Fatalf("the watch ended before %s: %v", what, w.Err())
				}
				return ev
			case <-ctx.Done():
				t.Fatalf("no event for %s", what)
			}
			return api.HistoryEvent{}
		}
		for _, want := range []struct{ primitive, name, kind string }{
			{api.PrimitiveSemaphore, prefix + "pool", "permit_granted"},
			{api.PrimitiveElection, prefix + "leader", "elected"},
			{"", prefix + "lock", "granted"},
		} {
			ev := next(all, want.name)
			if ev.Primitive != want.primitive || ev.Name != want.name || ev.Kind != want.kind || ev.Token == 0 {
				t.Fatalf("the watch of every kind got %+v; want a %s event %q of %q", ev, want.primitive, want.kind, want.name)
			}
		}
		// Without Kinds the stream is the locks' alone: its first event is the lock's,
		// although the semaphore's and the election's came first.
		if ev := next(locksOnly, "the lock"); ev.Primitive != "" || ev.Name != prefix+"lock" || ev.Token != m.Token() {
			t.Fatalf("the watch of locks got %+v first; want the grant of %s", ev, prefix+"lock")
		}
		h, err := c.HistoryOf(ctx, api.PrimitiveSemaphore, prefix+"pool", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Events) == 0 || h.Events[len(h.Events)-1].Kind != "permit_granted" || h.Events[len(h.Events)-1].Owner != "worker" {
			t.Fatalf("the semaphore's history: %+v; want its permit granted to worker last", h)
		}
		if h, err = c.HistoryOf(ctx, api.PrimitiveElection, prefix+"leader", true); err != nil || len(h.Events) == 0 || h.Events[len(h.Events)-1].Kind != "elected" {
			t.Fatalf("the election's history: %+v, %v; want its election last", h, err)
		}
		// A lock of that name has no history: the kinds are apart.
		if h, err = c.History(ctx, prefix+"pool", false); err != nil || len(h.Events) != 0 {
			t.Fatalf("the history of a lock named like the semaphore: %+v, %v; want none", h, err)
		}
		if _, err := c.HistoryOf(ctx, "mutex", prefix+"pool", false); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("HistoryOf an unknown kind = %v; want ErrInvalid", err)
		}
		if _, err := c.Watch(ctx, prefix, client.WatchOptions{Kinds: []string{"locks"}}); !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("Watch of an unknown kind = %v; want ErrInvalid", err)
		}
	})
}

// TestElection_ObserveStopsOnInvalidName: a read that can never succeed closes the
// channel instead of being retried forever.
func TestElection_ObserveStopsOnInvalidName(t *testing.T) {
	c := newClient(t, []string{"http://127.0.0.1:1"})
	ch := c.NewElection("").Observe(ctxFor(t, 10*time.Second))
	select {
	case l, ok := <-ch:
		if ok {
			t.Fatalf("observed %+v for an invalid name", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Observe still retries a name that cannot be valid")
	}
}
