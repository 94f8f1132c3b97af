package fsm

import (
	"bytes"
	"io"
	"testing"
)

// TestFSM_ExpireManyWaitersOfOneLock expires 50,000 waiters of one lock in one entry, by
// the end of their waits or of their leases. It checks the outcome; BenchmarkExpireWaiters
// shows that the cost is linear.
func TestFSM_ExpireManyWaitersOfOneLock(t *testing.T) {
	const n = 50_000
	holder := LeaseID{0xff}
	waiterID := func(i int) LeaseID { return LeaseID{byte(i), byte(i >> 8), byte(i >> 16), 0xee} }
	for _, c := range []struct {
		name                    string
		wait, waitTTL, holdTTL  int64
		held, freed, leasesGone bool
	}{
		{name: "waits end", wait: 2_000, waitTTL: 60_000, holdTTL: 60_000, held: true},
		{name: "waiter leases expire", wait: 60_000, waitTTL: 2_000, holdTTL: 60_000, held: true, leasesGone: true},
		{name: "all leases expire", wait: 60_000, waitTTL: 2_000, holdTTL: 2_000, freed: true, leasesGone: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ended := 0
			f := New(func(e Event) {
				if e.Kind == EventWaitEnded {
					ended++
				}
			})
			f.ApplyCommand(1, &Command{Type: TypeAcquire, Lease: holder, NewLease: true, TTL: c.holdTTL, Name: "hot"})
			for i := 0; i < n; i++ {
				r := f.ApplyCommand(uint64(i+2), &Command{Type: TypeAcquire, Lease: waiterID(i), NewLease: true, TTL: c.waitTTL, Name: "hot", Wait: c.wait})
				if r.Status != StatusQueued {
					t.Fatalf("waiter %d: %s", i, r.Status)
				}
			}
			// The middle waiter re-issues its wait, which must not move it in the queue.
			if r := f.ApplyCommand(n+2, &Command{Type: TypeAcquire, Lease: waiterID(n / 2), Name: "hot", Wait: c.wait}); r.Status != StatusQueued {
				t.Fatalf("re-issued wait: %s", r.Status)
			}
			v := f.Lock("hot")
			if len(v.Waiters) != n || v.Waiters[0] != waiterID(0) || v.Waiters[n/2] != waiterID(n/2) || v.Waiters[n-1] != waiterID(n-1) {
				t.Fatalf("queue of %d waiters is not in arrival order", len(v.Waiters))
			}
			ended = 0
			f.ApplyCommand(n+3, &Command{Type: TypeTick, Now: 2_000})
			if ended != n {
				t.Fatalf("%d wait-ended events, want %d", ended, n)
			}
			v = f.Lock("hot")
			if v.Held != c.held || len(v.Waiters) != 0 || (c.held && (v.Holder != holder || v.ModifyIndex != n+3)) {
				t.Fatalf("after expiry: %+v", v)
			}
			if c.freed && f.LockCount() != 0 {
				t.Fatalf("%d locks left after every lease expired", f.LockCount())
			}
			if got := f.LeaseCount(); (got == 1+n) == c.leasesGone {
				t.Fatalf("%d leases left", got)
			}
			if l, ok := f.Lease(waiterID(7)); ok && len(l.Waiting) != 0 {
				t.Fatalf("a waiter's lease still waits for %v", l.Waiting)
			}
			// The emptied queue encodes and restores like any other state.
			data := f.SnapshotBytes()
			g := New(nil)
			if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil || !bytes.Equal(g.SnapshotBytes(), data) {
				t.Fatalf("restore after expiry: %v", err)
			}
		})
	}
}
