package fsm

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSweep_EntryOfAMassExpiry: one entry of the sweep of a mass expiry, its full
// budget of 1,024 units, each a lock of 64 on 3,125 leases that expire together (the
// neighbour benchmark's 200,000 locks): the longest an entry of the sweep holds the
// state machine. It reports the entry's time, which is what a neighbour's command may
// wait behind.
func BenchmarkSweep_EntryOfAMassExpiry(b *testing.B) {
	const leases, perLease = 3125, 64
	build := func() (*FSM, uint64) {
		f := New(func(Event) {}) // the cluster layer observes every event
		index := uint64(1)
		f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: Version})
		for i := 0; i < leases; i++ {
			id := LeaseID{byte(i >> 8), byte(i), 0xAA}
			index++
			names := make([]string, perLease)
			for j := range names {
				names[j] = fmt.Sprintf("tenant/%06d/%02d", i, j)
			}
			f.ApplyCommand(index, &Command{Type: TypeLockSet, Lease: id, NewLease: true, TTL: 1000, Names: names})
		}
		return f, index
	}
	f, index := build()
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		if f.LeaseCount() == 0 {
			b.StopTimer()
			f, index = build()
			b.StartTimer()
		}
		index++
		start := time.Now()
		f.ApplyCommand(index, &Command{Type: TypeTick, Now: 2000})
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs/entry")
}
