package fsm_test

import (
	"fmt"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// BenchmarkExpireWaiters expires n waiters of one lock in one tick entry (their waits end
// together). With a slice queue each removal shifted the rest of the queue, so the entry
// cost O(n^2) on every node; ns/waiter should now stay flat as n grows.
func BenchmarkExpireWaiters(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f, index := queuedOnOneLock(b, n)
				tick := fsm.Command{Type: fsm.TypeTick, Now: 1_000}
				b.StartTimer()
				mustApply(b, f, index+1, &tick, fsm.StatusOK)
				b.StopTimer()
				if v := f.Lock("hot"); len(v.Waiters) != 0 {
					b.Fatalf("%d waiters left", len(v.Waiters))
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/waiter")
		})
	}
}

// queuedOnOneLock returns a state machine, with an observer as a node has, where lease 0
// holds lock "hot" and leases 1..n wait for it until cluster time 1,000.
func queuedOnOneLock(b *testing.B, n int) (*fsm.FSM, uint64) {
	f := fsm.New(func(fsm.Event) {})
	index := uint64(1)
	mustApply(b, f, index, &fsm.Command{Type: fsm.TypeAcquire, Now: 0, Lease: lease(0), NewLease: true, TTL: 3_600_000, Name: "hot"}, fsm.StatusOK)
	acq := fsm.Command{Type: fsm.TypeAcquire, Now: 0, NewLease: true, TTL: 3_600_000, Name: "hot", Wait: 1_000}
	for i := 1; i <= n; i++ {
		index++
		acq.Lease = lease(i)
		mustApply(b, f, index, &acq, fsm.StatusQueued)
	}
	return f, index
}
