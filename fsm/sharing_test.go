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
// their array is let go (the retention moves to a new one) rather than kept for appends.
func TestShadow_TrimFreesTheArray(t *testing.T) {
	f := New(nil)
	fill(f, 10_000)
	snap := mustSnapshot(t, f)
	old := snap.entries
	if _, err := persist(t, snap); err != nil {
		t.Fatal(err)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	pastOld := uintptr(unsafe.Pointer(&old[0])) + uintptr(len(old))*unsafe.Sizeof(old[0])
	if uintptr(unsafe.Pointer(unsafe.SliceData(f.ret.entries))) == pastOld {
		t.Errorf("after trimming %d entries the retention still appends into their array", len(old))
	}
	if c := cap(f.ret.entries); c > retainRoom {
		t.Errorf("after trimming %d entries the retention keeps room for %d, more than %d", len(old), c, retainRoom)
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
