package fsm

import (
	"bytes"
	"io"
	"testing"
	"unsafe"
)

// TestShadow_SharesStringsWithLiveState checks that the shadow keeps the live state's
// strings for names and owners, not copies of its own.
func TestShadow_SharesStringsWithLiveState(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 3, Now: 1})
	f.ApplyCommand(2, &Command{Type: TypeAcquire, Now: 1, Lease: LeaseID{3}, NewLease: true, TTL: 60_000, Name: "shared/name", Owner: "shared-owner"})
	if _, err := persist(t, mustSnapshot(t, f)); err != nil {
		t.Fatal(err)
	}
	live, _ := f.s.names.Min()
	shadow, _ := f.shadow.s.names.Min()
	if live != shadow || unsafe.StringData(live) != unsafe.StringData(shadow) {
		t.Errorf("lock name %q at %p live, %q at %p in the shadow: not shared", live, unsafe.StringData(live), shadow, unsafe.StringData(shadow))
	}
	lo, so := f.s.locks[live].owner, f.shadow.s.locks[shadow].owner
	if lo != so || unsafe.StringData(lo) != unsafe.StringData(so) {
		t.Errorf("owner %q live, %q in the shadow: not shared", lo, so)
	}
}

// TestShadow_TrimFreesTheArray checks that once Persist has trimmed every retained entry,
// their array is let go rather than kept for later appends.
func TestShadow_TrimFreesTheArray(t *testing.T) {
	f := New(nil)
	fill(f, 10_000)
	if _, err := persist(t, mustSnapshot(t, f)); err != nil {
		t.Fatal(err)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if c := cap(f.ret.entries); c > 100 {
		t.Errorf("after trimming 10,000 entries the retention keeps room for %d", c)
	}
}

func mustSnapshot(t *testing.T, f *FSM) *snapshot {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return snap.(*snapshot)
}

// TestShadow_SharesStringsAfterRestore checks the same for a shadow that starts from a
// restored snapshot, as after a restart.
func TestShadow_SharesStringsAfterRestore(t *testing.T) {
	src := New(nil)
	src.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 3, Now: 1})
	src.ApplyCommand(2, &Command{Type: TypeAcquire, Now: 1, Lease: LeaseID{3}, NewLease: true, TTL: 60_000, Name: "restored/name", Owner: "restored-owner"})
	f := New(nil)
	if err := f.Restore(io.NopCloser(bytes.NewReader(src.SnapshotBytes()))); err != nil {
		t.Fatal(err)
	}
	if _, err := persist(t, mustSnapshot(t, f)); err != nil {
		t.Fatal(err)
	}
	live, _ := f.s.names.Min()
	shadow, _ := f.shadow.s.names.Min()
	if live != shadow || unsafe.StringData(live) != unsafe.StringData(shadow) {
		t.Errorf("lock name %q live, %q in the shadow: not shared", live, shadow)
	}
	lo, so := f.s.locks[live].owner, f.shadow.s.locks[shadow].owner
	if lo != so || unsafe.StringData(lo) != unsafe.StringData(so) {
		t.Errorf("owner %q live, %q in the shadow: not shared", lo, so)
	}
}
