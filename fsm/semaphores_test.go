package fsm

import "testing"

// A semaphore: permits up to the first acquirer's limit, one per lease, a conflicting limit
// refused, FIFO waiting, and a released permit granted to the head waiter in the same
// entry. Unused, it is deleted and its next acquirer sets a new limit.
func TestFSM_SemaphoreLimitAndHandover(t *testing.T) {
	a, b, c, d := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}
	f := v2(t, a, b, c, d) // entries 1-5
	acq := func(id LeaseID, wait int64) Command {
		return Command{Type: TypeSemAcquire, Lease: id, Name: "pool", Limit: 2, Wait: wait}
	}
	expect(t, f, 6, acq(a, 0), StatusOK, 6)
	expect(t, f, 7, acq(a, 0), StatusOK, 6) // one permit per lease
	expect(t, f, 8, acq(b, 0), StatusOK, 8)
	expect(t, f, 9, acq(c, 0), StatusSemaphoreFull, 0)
	if r := expect(t, f, 10, Command{Type: TypeSemAcquire, Lease: c, Name: "pool", Limit: 3}, StatusLimitConflict, 0); r.Limit != 2 {
		t.Fatalf("limit conflict reports limit %d", r.Limit)
	}
	expect(t, f, 11, acq(c, 30_000), StatusQueued, 0)
	expect(t, f, 12, acq(d, 30_000), StatusQueued, 0)
	if v := f.Semaphore("pool"); v.Limit != 2 || len(v.Permits) != 2 || len(v.Waiters) != 2 || v.Waiters[0] != c {
		t.Fatalf("full semaphore: %+v", v)
	}
	expect(t, f, 13, Command{Type: TypeSemRelease, Lease: a, Name: "pool", Token: 5}, StatusNotHolder, 0)
	expect(t, f, 14, Command{Type: TypeSemRelease, Lease: a, Name: "pool", Token: 6}, StatusOK, 0)
	v := f.Semaphore("pool")
	if len(v.Permits) != 2 || v.Permits[1].Lease != c || v.Permits[1].Token != 14 || len(v.Waiters) != 1 || v.ModifyIndex != 14 {
		t.Fatalf("the head waiter should hold a permit with token 14: %+v", v)
	}
	for i, id := range []LeaseID{b, c, d} {
		f.ApplyCommand(uint64(15+i), &Command{Type: TypeRevoke, Lease: id})
	}
	if v := f.Semaphore("pool"); v.Limit != 0 || len(v.Permits) != 0 || v.ModifyIndex != 17 {
		t.Fatalf("unused semaphore: %+v", v)
	}
	if n := len(f.s.sems); n != 0 {
		t.Fatalf("%d semaphores kept after the last permit went", n)
	}
	expect(t, f, 18, Command{Type: TypeSemAcquire, Lease: a, Name: "pool", Limit: 5}, StatusOK, 18)
}

func TestMaxHold_SemaphorePermit(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	r := v3apply(t, f, &index, Command{Type: TypeSemAcquireEx, Now: 1000, Lease: a, NewLease: true, TTL: 60_000, Name: "pool", Limit: 1, MaxHold: 1000}, StatusOK)
	first := r.Token
	v3apply(t, f, &index, Command{Type: TypeSemAcquireEx, Now: 1000, Lease: b, NewLease: true, TTL: 60_000, Name: "pool", Limit: 1, Wait: 30_000, MaxHold: 500}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeSemAcquire, Now: 1000, Lease: c, NewLease: true, TTL: 60_000, Name: "pool", Limit: 1, Wait: 30_000}, StatusQueued)
	mustRestoreBytes(t, f) // the waiter's maximum hold is in the snapshot
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 1999}, StatusOK)
	if p := f.Semaphore("pool").Permits; len(p) != 1 || p[0].Lease != a {
		t.Fatalf("before the maximum hold: %+v", p)
	}
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 2000}, StatusOK)
	if p := f.Semaphore("pool").Permits; len(p) != 1 || p[0].Lease != b || p[0].Token <= first {
		t.Fatalf("after a's maximum hold: %+v", p)
	}
	g := mustRestoreBytes(t, f)
	g.ApplyCommand(index+1, &Command{Type: TypeTick, Now: 2500})
	if p := g.Semaphore("pool").Permits; len(p) != 1 || p[0].Lease != c {
		t.Fatalf("after b's maximum hold (restored): %+v", p)
	}
	v3apply(t, f, &index, Command{Type: TypeSemRelease, Now: 2000, Lease: a, Name: "pool", Token: first}, StatusNotHolder)
}
