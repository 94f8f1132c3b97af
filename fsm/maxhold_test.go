package fsm

import "testing"

func TestMaxHold_EndsWhileKeptAlive(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	r := v3apply(t, f, &index, Command{Type: TypeAcquireEx, Now: 1000, Lease: a, NewLease: true, TTL: 2000, Name: "m", MaxHold: 1500}, StatusOK)
	first := r.Token
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 1000, Lease: b, NewLease: true, TTL: 60_000, Name: "m", Wait: 30_000}, StatusQueued)
	for now := int64(1300); now <= 2500; now += 300 { // kept alive every 300 ms
		v3apply(t, f, &index, Command{Type: TypeRenew, Now: now, Leases: []LeaseID{a}}, StatusOK)
		if v := f.Lock("m"); now < 2500 && v.Holder != a {
			t.Fatalf("at %d the grant ended early", now)
		}
	}
	v := f.Lock("m")
	if v.Holder != b || v.Token <= first {
		t.Fatalf("after the maximum hold: %+v", v)
	}
	if _, ok := f.Lease(a); !ok {
		t.Fatal("the lease ended with the grant")
	}
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 2600, Lease: a, Name: "m", Token: first}, StatusNotHolder)
	found := false
	for _, e := range f.History("m") {
		found = found || e.Kind == HistoryMaxHold && e.Token == first
	}
	if !found {
		t.Fatal("history does not say held for its maximum")
	}
}

func TestLockDelay_AfterExpiryNotAfterRelease(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	v3apply(t, f, &index, Command{Type: TypeAcquireEx, Now: 1000, Lease: a, NewLease: true, TTL: 1000, Name: "d", LockDelay: 2000}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 1000, Lease: b, NewLease: true, TTL: 60_000, Name: "d", Wait: 30_000}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 2000}, StatusOK) // a expires at 2000
	v := f.Lock("d")
	if v.Held || v.DelayedUntil != 4000 || len(v.Waiters) != 1 {
		t.Fatalf("after the expiry: %+v", v)
	}
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 3999}, StatusOK)
	if f.Lock("d").Held {
		t.Fatal("granted during the lock delay")
	}
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 4000}, StatusOK)
	if v := f.Lock("d"); v.Holder != b || v.Token != index {
		t.Fatalf("after the delay: %+v", v)
	}
	// A release starts no delay.
	v3apply(t, f, &index, Command{Type: TypeAcquireEx, Now: 4000, Lease: a, NewLease: true, TTL: 1000, Name: "e", LockDelay: 2000}, StatusOK)
	tok := index
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 4100, Lease: a, Name: "e", Token: tok}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 4100, Lease: b, Name: "e"}, StatusOK)
	g := mustRestoreBytes(t, f)
	_ = g
}
