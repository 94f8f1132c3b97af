package fsm

import (
	"bytes"
	"testing"
)

// refusedLikeTick checks that a refused command changed nothing but what a tick at the
// same index and time changes: it applies c to a copy of before and a tick to another.
func refusedLikeTick(t *testing.T, before []byte, index uint64, c *Command, quota string) {
	t.Helper()
	f, tick := New(nil), New(nil)
	if err := restoreFrom(f, before); err != nil {
		t.Fatal(err)
	}
	restoreFrom(tick, before)
	r := f.ApplyCommand(index, c)
	if r.Status != StatusQuotaExceeded || r.Quota != quota {
		t.Fatalf("%s %+v: %s %q, want quota_exceeded %q", c.Type, c, r.Status, r.Quota, quota)
	}
	tick.ApplyCommand(index, &Command{Type: TypeTick, Now: c.Now})
	if !bytes.Equal(f.SnapshotBytes(), tick.SnapshotBytes()) {
		t.Fatalf("refused %s changed the state", c.Type)
	}
}

func TestFSM_Quotas(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 2})
	f.ApplyCommand(2, &Command{Type: TypeSetLimits, Limits: Limits{MaxLeases: 3, MaxLocksPerLease: 2, MaxWaitersPerLock: 1}})
	a, b, c, d := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}
	must := func(index uint64, cmd Command, want Status) {
		t.Helper()
		if r := f.ApplyCommand(index, &cmd); r.Status != want {
			t.Fatalf("entry %d %s: %s %q, want %s", index, cmd.Type, r.Status, r.Quota, want)
		}
	}
	must(3, Command{Type: TypeCreateLease, Lease: a, TTL: 60_000}, StatusOK)
	must(4, Command{Type: TypeAcquire, Lease: b, NewLease: true, TTL: 60_000, Name: "x"}, StatusOK)
	must(5, Command{Type: TypeCreateLease, Lease: c, TTL: 60_000}, StatusOK)
	refusedLikeTick(t, f.SnapshotBytes(), 6, &Command{Type: TypeCreateLease, Now: 1, Lease: d, TTL: 60_000}, QuotaLeases)
	refusedLikeTick(t, f.SnapshotBytes(), 6, &Command{Type: TypeAcquire, Now: 1, Lease: d, NewLease: true, TTL: 60_000, Name: "y"}, QuotaLeases)
	must(6, Command{Type: TypeCreateLease, Lease: a, TTL: 60_000}, StatusOK) // exists: not a new lease
	must(7, Command{Type: TypeAcquire, Lease: a, NewLease: true, TTL: 60_000, Name: "a1"}, StatusOK)

	// Locks per lease count held and awaited locks together; asking again is free.
	must(8, Command{Type: TypeAcquire, Lease: a, Name: "x", Wait: 60_000}, StatusQueued)
	refusedLikeTick(t, f.SnapshotBytes(), 9, &Command{Type: TypeAcquire, Now: 2, Lease: a, Name: "a2"}, QuotaLocksPerLease)
	must(9, Command{Type: TypeAcquire, Lease: a, Name: "a1"}, StatusOK)
	must(10, Command{Type: TypeAcquire, Lease: a, Name: "x", Wait: 90_000}, StatusQueued)

	// Waiters per lock; the queued lease may re-issue its wait.
	refusedLikeTick(t, f.SnapshotBytes(), 11, &Command{Type: TypeAcquire, Now: 3, Lease: c, Name: "x", Wait: 1000}, QuotaWaitersPerLock)
	must(11, Command{Type: TypeAcquire, Lease: c, Name: "x"}, StatusLockHeld) // no wait: held, not a quota
	must(12, Command{Type: TypeAcquire, Lease: a, Name: "x", Wait: 90_000}, StatusQueued)

	// Lowering a limit takes nothing away; raising it lets the refused command through.
	must(13, Command{Type: TypeSetLimits, Limits: Limits{MaxLeases: 1}}, StatusOK)
	if f.LeaseCount() != 3 {
		t.Fatal("lowering max_leases removed leases")
	}
	must(14, Command{Type: TypeAcquire, Lease: c, Name: "x", Wait: 1000}, StatusQueued)
	must(15, Command{Type: TypeSetLimits}, StatusOK)
	must(16, Command{Type: TypeCreateLease, Lease: d, TTL: 60_000}, StatusOK)
}
