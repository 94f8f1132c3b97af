package fsm_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// These measure what the per-lock history costs: they run at protocol version 2, where
// the history is kept (the older benchmarks run at version 1, where it is not).

func version2(b testing.TB, f *fsm.FSM) {
	if r := f.ApplyCommand(1, &fsm.Command{Type: fsm.TypeSetVersion, Version: 2, Now: 1}); r.Status != fsm.StatusOK {
		b.Fatalf("set version: %s", r.Status)
	}
}

// BenchmarkApplyAcquireReleaseV2 is BenchmarkApplyAcquireRelease at version 2: every
// cycle records a granted and a released event.
func BenchmarkApplyAcquireReleaseV2(b *testing.B) {
	f := fsm.New(nil)
	version2(b, f)
	f.ApplyCommand(2, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(1), TTL: 10_000})
	benchAcquireRelease(b, f, 2, false)
}

// BenchmarkApplyDistinctLocksV2 acquires a new lock name per entry, so that the history
// bound (HistoryLocks) is reached and every entry past it evicts one history.
func BenchmarkApplyDistinctLocksV2(b *testing.B) {
	f := fsm.New(nil)
	version2(b, f)
	id := lease(1)
	f.ApplyCommand(2, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: id, TTL: 3_600_000})
	index := uint64(2)
	b.ReportAllocs()
	for b.Loop() {
		index++
		name := fmt.Sprintf("jobs/%d", index)
		r := f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: id, Name: name})
		index++
		f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeRelease, Now: 2, Lease: id, Name: name, Token: r.Token})
	}
}

// heapAlloc returns the bytes of live heap objects after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measured skips t unless RAFTLOCK_MEASURE is set, and returns a new state machine at
// version 2 with the live heap from before it was made, which the test subtracts.
func measured(t *testing.T) (*fsm.FSM, uint64) {
	if os.Getenv("RAFTLOCK_MEASURE") == "" {
		t.Skip("set RAFTLOCK_MEASURE=1 to measure")
	}
	before := heapAlloc()
	f := fsm.New(nil)
	version2(t, f)
	return f, before
}

// TestHistoryMemory1M reports the heap that 1,000,000 held locks (each acquired once, by
// 1,000 leases) take at protocol version 2. It runs only with RAFTLOCK_MEASURE=1.
func TestHistoryMemory1M(t *testing.T) {
	f, before := measured(t)
	index := uint64(1)
	for i := 0; i < 1000; i++ {
		index++
		f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(i), TTL: 3_600_000})
	}
	for i := 0; i < 1_000_000; i++ {
		index++
		r := f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: lease(i % 1000), Name: fmt.Sprintf("jobs/%07d", i), Owner: "worker"})
		if r.Status != fsm.StatusOK {
			t.Fatalf("acquire %d: %s", i, r.Status)
		}
	}
	after := heapAlloc()
	t.Logf("1,000,000 held locks at version 2: heap %.1f MiB (%.0f B/lock), snapshot %.1f MiB",
		float64(after-before)/(1<<20), float64(after-before)/1e6, float64(len(f.SnapshotBytes()))/(1<<20))
	runtime.KeepAlive(f)
}

// TestHistoryMemoryWorstCase reports the heap of the largest history the bounds allow:
// HistoryLocks locks with HistoryLen events each. It runs only with RAFTLOCK_MEASURE=1.
func TestHistoryMemoryWorstCase(t *testing.T) {
	f, before := measured(t)
	id := lease(1)
	f.ApplyCommand(2, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: id, TTL: 3_600_000})
	index := uint64(2)
	for round := 0; round < fsm.HistoryLen/2; round++ {
		for i := 0; i < fsm.HistoryLocks; i++ {
			name := fmt.Sprintf("jobs/%06d", i)
			index++
			r := f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: id, Name: name, Owner: "worker-17"})
			index++
			f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeRelease, Now: 2, Lease: id, Name: name, Token: r.Token})
		}
	}
	if f.HistoryCount() != fsm.HistoryLocks || len(f.History("jobs/000000")) != fsm.HistoryLen {
		t.Fatalf("%d histories, %d events", f.HistoryCount(), len(f.History("jobs/000000")))
	}
	after := heapAlloc()
	start := time.Now()
	snap := f.SnapshotBytes()
	took := time.Since(start)
	t.Logf("%d locks × %d events (no lock held): heap %.1f MiB (%.0f B/event), snapshot %.1f MiB encoded in %v",
		fsm.HistoryLocks, fsm.HistoryLen, float64(after-before)/(1<<20), float64(after-before)/float64(fsm.HistoryLocks*fsm.HistoryLen),
		float64(len(snap))/(1<<20), took)
	runtime.KeepAlive(f)
}
