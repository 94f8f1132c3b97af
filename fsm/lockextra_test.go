package fsm

import "testing"

// checkNoExtra fails when anything has written to noExtra, the empty extra part that ro
// hands out for every lock without one of its own: a write through ro instead of rw would
// give every small lock that waiter, reader or delay at once. The property tests call it
// after every step.
func checkNoExtra(t *testing.T, step uint64) {
	t.Helper()
	if noExtra != (lockExtra{}) {
		t.Fatalf("step %d: the shared empty extra part of locks was written: %+v", step, noExtra)
	}
}

// TestLockExtra_SmallLockHasNone checks the point of the split: a lock taken exclusive
// with nobody waiting, by a lock delay-free grant, has no extra part, and one whose queue
// has emptied again is back to none.
func TestLockExtra_SmallLockHasNone(t *testing.T) {
	f := New(nil)
	a, b := LeaseID{1}, LeaseID{2}
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 1, Lease: a, NewLease: true, TTL: 60_000, Name: "x"})
	if lk := f.s.locks["x"]; lk == nil || lk.x != nil {
		t.Fatalf("an exclusive lock with nobody waiting has an extra part: %+v", lk)
	}
	f.ApplyCommand(2, &Command{Type: TypeAcquire, Now: 1, Lease: b, NewLease: true, TTL: 60_000, Name: "x", Wait: 30_000})
	if lk := f.s.locks["x"]; lk.ro().queue.len != 1 || lk.x == nil {
		t.Fatalf("the waiter is not queued in the lock's extra part: %+v", lk)
	}
	r := f.ApplyCommand(3, &Command{Type: TypeRelease, Now: 1, Lease: a, Name: "x", Token: 1})
	if r.Status != StatusOK {
		t.Fatalf("release: %v", r.Status)
	}
	lk := f.s.locks["x"]
	if lk == nil || lk.holder != b || lk.token != 3 {
		t.Fatalf("lock not handed to the waiter at 3: %+v", lk)
	}
	if lk.x != nil {
		t.Fatalf("the lock keeps an empty extra part after its queue emptied: %+v", lk.x)
	}
	checkNoExtra(t, 3)
}
