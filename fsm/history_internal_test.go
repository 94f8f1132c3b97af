package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

// TestHistory_EvictsLeastRecentlyActive lowers the bound and checks that eviction drops
// the least recently active lock, and that a node restored from a snapshot in the middle
// evicts exactly as one that applied everything (same bytes at the end).
func TestHistory_EvictsLeastRecentlyActive(t *testing.T) {
	mk := func() *FSM {
		f := New(nil)
		f.s.hist.maxLocks = 4
		return f
	}
	f := mk()
	index := uint64(1)
	f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: 2, Now: 1})
	var id LeaseID
	id[0] = 1
	index++
	f.ApplyCommand(index, &Command{Type: TypeCreateLease, Now: 1, Lease: id, TTL: 60_000})
	step := func(f *FSM, name string) {
		index++
		f.ApplyCommand(index, &Command{Type: TypeAcquire, Now: int64(index), Lease: id, Name: name})
	}
	for i := 0; i < 4; i++ {
		step(f, fmt.Sprintf("l%d", i))
	}
	// Touch l0 again (a second acquire is idempotent and records nothing, so release it).
	index++
	f.ApplyCommand(index, &Command{Type: TypeRelease, Now: int64(index), Lease: id, Name: "l0", Token: 3})
	g := mk()
	if err := g.Restore(nopReader(f.SnapshotBytes())); err != nil {
		t.Fatal(err)
	}
	g.s.hist.maxLocks = 4
	saved := index
	step(f, "l4")
	index = saved
	step(g, "l4")
	for _, x := range []*FSM{f, g} {
		if x.History("l1") != nil || x.History("l0") == nil || x.HistoryCount() != 4 {
			t.Fatalf("evicted the wrong lock: l1 %v, l0 %v, %d histories", x.History("l1"), x.History("l0"), x.HistoryCount())
		}
	}
	if !bytes.Equal(f.SnapshotBytes(), g.SnapshotBytes()) {
		t.Fatal("restored node evicts differently")
	}
}

type nopCloserReader struct{ *bytes.Reader }

func (nopCloserReader) Close() error { return nil }

func nopReader(b []byte) nopCloserReader { return nopCloserReader{bytes.NewReader(b)} }
