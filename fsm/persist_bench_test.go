package fsm_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// heldV3 builds a state machine at protocol version 3 holding n locks by 64 leases, each
// lock with the history of its grant (the history keeps the newest fsm.HistoryLocks).
func heldV3(b *testing.B, n int) *fsm.FSM {
	f := fsm.New(nil)
	index := uint64(1)
	mustApply(b, f, index, &fsm.Command{Type: fsm.TypeSetVersion, Version: 3, Now: 1}, fsm.StatusOK)
	const leases = 64
	for i := 0; i < leases; i++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(i), TTL: 60_000}, fsm.StatusOK)
	}
	for i := 0; i < n; i++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: lease(i % leases), Name: fmt.Sprintf("bench/scale/%07d", i), Owner: "bench"}, fsm.StatusOK)
	}
	return f
}

// peakSink discards a snapshot but, on its first write and every 64th after, collects the
// garbage and notes how far the live heap has grown above base: the memory that the
// encoding holds at once while it is written (an image built whole is all live at its one
// write; a streamed one holds a buffer).
type peakSink struct {
	discardSink
	base   uint64
	writes int
	peak   uint64
}

func (s *peakSink) Write(p []byte) (int, error) {
	if s.writes%64 == 0 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapAlloc > s.base {
			s.peak = max(s.peak, m.HeapAlloc-s.base)
		}
	}
	s.writes++
	return len(p), nil
}

func persistTo(b *testing.B, f *fsm.FSM, sink interface {
	Write([]byte) (int, error)
	Close() error
	Cancel() error
	ID() string
}) {
	snap, err := f.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		b.Fatal(err)
	}
	snap.Release()
}

// BenchmarkPersist measures what raft's snapshot goroutine allocates to write one snapshot
// of n held locks at version 3 once the shadow is built (B/op, allocs/op), and the live
// heap the encoding holds at once (peak-live-B): the image built whole, or a buffer when
// it streams.
func BenchmarkPersist(b *testing.B) {
	for _, n := range snapshotSizes() {
		b.Run(fmt.Sprintf("locks=%d", n), func(b *testing.B) {
			f := heldV3(b, n)
			persistTo(b, f, discardSink{}) // builds the shadow
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak := &peakSink{base: m.HeapAlloc}
			persistTo(b, f, peak)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				persistTo(b, f, discardSink{})
			}
			b.ReportMetric(float64(peak.peak), "peak-live-B")
			b.ReportMetric(float64(peak.writes), "writes")
		})
	}
}
