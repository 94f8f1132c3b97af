package fsm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
)

// heapInUse collects the garbage and returns the live heap.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemory_Split reports (it asserts nothing) what 1,000,000 held locks with histories
// cost on the heap, split into the live state, the retained entries before the first
// snapshot, the shadow and the histories. It builds a gigabyte, so it runs only with
// RAFTLOCK_BENCH_LARGE=1:
//
//	RAFTLOCK_BENCH_LARGE=1 go test -count=1 -run TestMemory_Split -v ./fsm/
func TestMemory_Split(t *testing.T) {
	if os.Getenv("RAFTLOCK_BENCH_LARGE") != "1" {
		t.Skip("set RAFTLOCK_BENCH_LARGE=1: builds 1,000,000 locks")
	}
	const n, leases = 1_000_000, 64
	base := heapInUse()
	f := New(nil)
	index := uint64(1)
	f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: 3, Now: 1})
	for i := 0; i < leases; i++ {
		index++
		f.ApplyCommand(index, &Command{Type: TypeCreateLease, Now: 1, Lease: LeaseID{byte(i), 1}, TTL: 60_000})
	}
	for i := 0; i < n; i++ {
		index++
		r := f.ApplyCommand(index, &Command{Type: TypeAcquire, Now: 2, Lease: LeaseID{byte(i % leases), 1}, Name: fmt.Sprintf("bench/scale/%07d", i), Owner: "bench"})
		if r.Status != StatusOK {
			t.Fatalf("acquire %d: %s", i, r.Status)
		}
	}
	built := heapInUse()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&discard{}); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	withShadow := heapInUse()
	f.shadow.mu.Lock()
	f.shadow.s = nil
	f.shadow.mu.Unlock()
	liveOnly := heapInUse()
	hist := f.s.hist.len()
	f.s.hist.byName, f.s.hist.oldest, f.s.hist.newest = nil, nil, nil
	noHist := heapInUse()
	runtime.KeepAlive(f)
	mib := func(b uint64) string { return fmt.Sprintf("%.1f MiB (%.0f B/lock)", float64(b)/(1<<20), float64(b)/n) }
	t.Logf("built (live state + entries retained for the first snapshot): %s", mib(built-base))
	t.Logf("retained entries (freed by the first Persist): %s", mib(built-liveOnly))
	t.Logf("live state with histories: %s", mib(liveOnly-base))
	t.Logf("  of which histories (%d locks): %s", hist, mib(liveOnly-noHist))
	t.Logf("  live state without histories: %s", mib(noHist-base))
	t.Logf("shadow (after the first Persist): %s", mib(withShadow-liveOnly))
	t.Logf("live + shadow: %s", mib(withShadow-base))

	// After a restart: a state restored from the snapshot, whose shadow starts from it.
	f.s.hist.byName = nil
	data := f.SnapshotBytes()
	f = nil
	g := New(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	data = nil
	restored := heapInUse()
	snap, err = g.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(&discard{}); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	t.Logf("after a restore: shadow from the snapshot: %s", mib(heapInUse()-restored))
	runtime.KeepAlive(g)
}

type discard struct{ memSink }

func (*discard) Write(p []byte) (int, error) { return len(p), nil }
