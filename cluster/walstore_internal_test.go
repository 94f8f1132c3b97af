package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

func storeRange(t *testing.T, s *walStore, from, to uint64) {
	t.Helper()
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
	}
	if err := s.StoreLogs(ls); err != nil {
		t.Fatal(err)
	}
}

// failCreates makes every segment file creation fail with ENOSPC, as on a full disk, until
// walFaults is set to nil (or the test ends).
func failCreates(t *testing.T) {
	walFaults = func(string, op string) error {
		if op == "create" {
			return syscall.ENOSPC
		}
		return nil
	}
	t.Cleanup(func() { walFaults = nil })
}

func mustRead(t *testing.T, s *walStore, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil || string(l.Data) != fmt.Sprintf("entry %d", i) {
			t.Fatalf("entry %d: %q, %v", i, l.Data, err)
		}
	}
}

// A WAL whose end was truncated (raft deletes a follower's conflicting suffix) opens again
// and reads and appends. This tests raft-wal's own fix (v0.4.1, "Fix truncate tail": the
// truncated tail is sealed with an index frame): v0.4.0 sealed it without one, and once
// reopened could not read it ("sealed segment has no index block", on which raft panics
// at start). raftlock repaired that itself while it was on v0.4.0; it no longer does.
func TestWALStore_ReopensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	open := func() *walStore {
		s, err := openWAL(dir, 0, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	storeRange(t, s, 1, 10)
	if err := s.DeleteRange(8, 10); err != nil { // a conflicting suffix
		t.Fatal(err)
	}
	storeRange(t, s, 8, 12) // the new leader's entries
	s.Close()
	for round := 0; round < 2; round++ {
		s = open()
		mustRead(t, s, 1, 12)
		if last, err := s.LastIndex(); err != nil || last != 12+uint64(round)*3 {
			t.Fatalf("round %d: last index %d, %v", round, last, err)
		}
		storeRange(t, s, 13+uint64(round)*3, 15+uint64(round)*3)
		s.Close()
	}
}

// A WAL stopped after the batch that filled its tail was sealed and synced, but before
// raft-wal recorded the rotation to the next segment in wal-meta.db, opens again and
// appends: raft-wal (v0.4.0 to v0.4.2) reopens the sealed file as the tail and refuses
// every append ("segment is sealed"); the node records the rotation first
// (finishRotation). The state is made by undoing a rotation in wal-meta.db, which is what
// such a stop leaves.
func TestWALStore_ReopensAfterAnInterruptedRotation(t *testing.T) {
	dir := t.TempDir()
	walPath := filepath.Join(dir, walDir)
	open := func() *walStore {
		s, err := openWAL(dir, 4096, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	for i := uint64(1); ; i++ {
		storeRange(t, s, i, i)
		if segs, _ := filepath.Glob(filepath.Join(walPath, "*.wal")); len(segs) >= 2 {
			break
		}
		if i > 10_000 {
			t.Fatal("no segment rotation after 10,000 entries of 4 KiB segments")
		}
	}
	s.Close()

	meta := &metadb.BoltMetaDB{}
	st, err := meta.Load(walPath)
	if err != nil {
		t.Fatal(err)
	}
	first := st.Segments[0]
	if first.SealTime.IsZero() || first.IndexStart == 0 {
		t.Fatalf("the first segment is not sealed: %+v", first)
	}
	sealedMax := first.MaxIndex
	for _, seg := range st.Segments[1:] {
		if err := os.Remove(filepath.Join(walPath, segment.FileName(seg))); err != nil {
			t.Fatal(err)
		}
	}
	first.SealTime, first.IndexStart, first.MaxIndex = time.Time{}, 0, 0
	st.Segments = []types.SegmentInfo{first}
	if err := meta.CommitState(st); err != nil {
		t.Fatal(err)
	}
	meta.Close()

	s = open()
	if last, err := s.LastIndex(); err != nil || last != sealedMax {
		t.Fatalf("last index %d (%v) after the interrupted rotation, want %d", last, err, sealedMax)
	}
	mustRead(t, s, 1, sealedMax)
	storeRange(t, s, sealedMax+1, sealedMax+3)
	s.Close()
	s = open()
	mustRead(t, s, 1, sealedMax+3)
	s.Close()
}

// A WAL whose segment rotation failed (the next segment file could not be created: a full
// disk) appends again once the file can be created, in the same process, and keeps every
// entry across a restart. raft-wal (v0.4.0 to v0.4.2) records the rotation in wal-meta.db
// and then, when the file cannot be created, keeps the sealed segment as its tail in
// memory: every later append fails with "segment is sealed" until the WAL is reopened,
// which the store does before its next append (walStore.recover); without that, this
// test failed on v0.4.2 with "segment is sealed".
func TestWALStore_AppendsAgainAfterAFailedRotation(t *testing.T) {
	dir := t.TempDir()
	s, err := openWAL(dir, 4096, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	failCreates(t)
	var failed uint64
	for i := uint64(1); i < 10_000; i++ {
		if err := s.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))}}); err != nil {
			t.Logf("entry %d: %v", i, err)
			failed = i
			break
		}
	}
	if failed == 0 {
		t.Fatal("no append failed after 10,000 entries of 4 KiB segments with no room for a new one")
	}
	walFaults = nil
	storeRange(t, s, failed, failed+2)
	mustRead(t, s, 1, failed+2)
	s.Close()
	if s, err = openWAL(dir, 4096, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, 1, failed+2)
	storeRange(t, s, failed+3, failed+3)
}

// A truncation of the log's end that could not create its new segment (no space) is done
// again once there is room, and the log appends and reopens after it: raft deletes a
// follower's conflicting suffix before it appends the leader's entries, and retries with
// the leader's next AppendEntries. raft-wal (v0.4.2) retries correctly when the failed
// create left no file; walFS.Create sees to that (TestWALFS_FailedCreateLeavesNoFile).
// Without it a follower on a full disk failed every retry with "file exists", space or
// not (seen in TestBlackbox_FullDisk).
func TestWALStore_TruncatesAgainAfterAFailedTruncation(t *testing.T) {
	dir := t.TempDir()
	s, err := openWAL(dir, 0, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	storeRange(t, s, 1, 10)
	failCreates(t)
	if err := s.DeleteRange(8, 10); err == nil {
		t.Fatal("a tail truncation succeeded with no room for the segment it creates")
	}
	walFaults = nil
	if err := s.DeleteRange(8, 10); err != nil {
		t.Fatalf("the truncation again, with room: %v", err)
	}
	storeRange(t, s, 8, 12) // the new leader's entries
	mustRead(t, s, 1, 12)
	s.Close()
	if s, err = openWAL(dir, 0, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, 1, 12)
	storeRange(t, s, 13, 13)
}

// failingReserveFS creates a segment file and then fails to reserve its size, as raft-wal's
// file system does on a full disk.
type failingReserveFS struct{ types.VFS }

func (f failingReserveFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	w, err := f.VFS.Create(dir, name, 0)
	if err != nil {
		return nil, err
	}
	w.Close()
	return nil, syscall.ENOSPC
}

// A segment file whose creation failed half-way is gone afterwards, so the next Create of
// it (the retry, or the reopen's) does not fail with "file exists".
func TestWALFS_FailedCreateLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	f := &walFS{VFS: failingReserveFS{fs.New()}, dir: dir}
	if _, err := f.Create(dir, "seg.wal", 1<<20); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create: %v, want ENOSPC", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "seg.wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file of the failed create: %v, want it gone", err)
	}
	good := &walFS{VFS: fs.New(), dir: dir}
	w, err := good.Create(dir, "seg.wal", 1<<20)
	if err != nil {
		t.Fatalf("create again: %v", err)
	}
	w.Close()
}
