package fsm_test

import (
	"fmt"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// BenchmarkDashboardRead is one dashboard overview's reads of the state machine (a page
// of 100 locks with 5 waiters each, the wait-for view of 100 locks with waiters at 5 edges
// a lock, the refusals, 100 semaphores and 100 elections) on a state of 100,000 held locks
// of which one has 10,000 waiters, each read under its own read lock as the node makes
// them. What the dashboard costs a node must not grow with the locks or the queue.
func BenchmarkDashboardRead(b *testing.B) {
	const locks, waiters = 100_000, 10_000
	f, index := withLeases(b, 64, 3_600_000)
	acq := fsm.Command{Type: fsm.TypeAcquire, Now: 2}
	for i := 0; i < locks; i++ {
		index++
		acq.Lease, acq.Name = lease(i%64), fmt.Sprintf("t/%07d", i)
		mustApply(b, f, index, &acq, fsm.StatusOK)
	}
	// 10,000 leases wait for the first lock, each created by its acquire.
	wait := fsm.Command{Type: fsm.TypeAcquire, Now: 2, Name: "t/0000000", Wait: 3_600_000, NewLease: true, TTL: 3_600_000, Owner: "w"}
	for i := 0; i < waiters; i++ {
		index++
		wait.Lease = lease(1000 + i)
		mustApply(b, f, index, &wait, fsm.StatusQueued)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := f.Overview("t/", "", 100, 5000, 5)
		wf, _ := f.WaitsFor("t/", "", 100, 5)
		f.Refusals("t/", 80, 2048)
		f.Semaphores("t/", "", 100, 5)
		f.Elections("t/", "", 100, 5)
		if len(o.Locks) != 100 || !o.Truncated || len(o.Locks[0].Queue) != 5 || len(o.Locks[0].Waiters) != waiters ||
			len(wf) != 1 || len(wf[0].Edges) != 5 || wf[0].More != waiters-5 {
			b.Fatalf("overview of %d locks (queue %d), waits-for %+v", len(o.Locks), len(o.Locks[0].Queue), len(wf))
		}
	}
}
