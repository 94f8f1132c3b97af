package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// What a node does when its raft-wal log cannot be written.
//
// raft-wal rolls a failed append back (since v0.4.1), so the next append simply retries.
// A failed segment rotation is different: when the next segment file cannot be created
// (no space for it) or wal-meta.db cannot record the rotation, raft-wal (through v0.4.2:
// wal.go, mutateStateLocked) keeps the sealed segment as its tail in memory, and every
// later append fails with ErrSealed ("segment is sealed") until the WAL is reopened
// (TestWALStore_AppendsAgainAfterAFailedRotation). Reopening recovers the tail from what
// is on disk, as a restart would, and finishes the rotation (waltail.go).
//
//   - A write or a file creation that failed (no space, a quota, any error before the
//     fsync): the node stops serving writes and says why (StorageErr), and, after a
//     failed rotation, reopens the WAL before its next append; once an append succeeds it
//     serves again by itself.
//   - A failed fsync: the kernel may have dropped the pages it could not write, so what the
//     WAL would read back is not what is on the disk. The node stops writing for good
//     (ErrStorageFailed) and StorageFailed closes: the process exits (status 4) so that its
//     supervisor starts it again on what the disk really holds, and the operator checks the
//     disk.
//
// Nothing acknowledged is lost either way: raft acknowledges an entry (a follower's
// answer, a leader's commit count) only after the store returned from a successful fsync.

// errSyncFailed marks an error returned by a segment file's fsync.
var errSyncFailed = errors.New("fsync failed")

// walFaults, when set (tests only, export_test.go), is asked before every segment file
// operation of the WAL in data directory dir ("write", "sync", "create") and returns the
// error to fail it with, or nil.
var walFaults func(dir, op string) error

// walStore is raft-wal's WAL, reopened after a failed rotation.
type walStore struct {
	dir     string // the data directory
	segment int    // segment size; 0: raft-wal's default
	logger  hclog.Logger
	fatal   func(error) // told once of a failed fsync

	mu     sync.RWMutex // held exclusively only to swap w
	w      *wal.WAL
	broken error // the append refused after a failed rotation, which the next one reopens the WAL for
	failed error // a failed fsync: nothing more is written by this process
}

// openWAL opens (or creates) the WAL under dir/wal.
func openWAL(dir string, segment int, logger hclog.Logger) (*walStore, error) {
	p := filepath.Join(dir, walDir)
	if err := os.MkdirAll(p, dataDirMode); err != nil {
		return nil, fmt.Errorf("cluster: creating %s: %w", p, err)
	}
	if segment == 0 {
		segment = walSegmentSize // zero still: raft-wal's default
	}
	s := &walStore{dir: dir, segment: segment, logger: logger.Named("wal")}
	if err := s.open(); err != nil {
		return nil, err
	}
	// raft-wal creates its files 0644; the directory is private already, and so are
	// the files, like raft.db and the snapshots.
	if err := restrictTree(p); err != nil {
		s.Close()
		return nil, fmt.Errorf("cluster: making %s private: %w", p, err)
	}
	return s, nil
}

// open opens the WAL; the caller holds mu exclusively (or owns s alone).
func (s *walStore) open() error {
	p := filepath.Join(s.dir, walDir)
	zeroed, err := scrubWALTail(p)
	if err != nil {
		return err
	}
	if zeroed > 0 {
		s.logger.Warn("zeroed the end of the WAL's tail segment that no commit frame covers: a write that never completed (a crash, or a failed write), so never acknowledged", "bytes", zeroed)
	}
	meta := &metadb.BoltMetaDB{}
	vfs := &walFS{VFS: fs.New(), dir: s.dir}
	// WithSegmentSize(0) keeps raft-wal's default.
	w, err := wal.Open(p, wal.WithMetaStore(meta), wal.WithLogger(s.logger), wal.WithSegmentSize(s.segment),
		wal.WithSegmentFiler(segment.NewFiler(p, vfs)))
	if err != nil {
		meta.Close() // WAL.Close closes it once Open succeeded
		return fmt.Errorf("cluster: opening the WAL in %s: %w", p, err)
	}
	s.w = w
	return nil
}

// closeLocked closes the WAL and its meta database.
func (s *walStore) closeLocked() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	s.w = nil
	return err
}

// Close closes the store.
func (s *walStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

// current returns the open WAL under a read lock, to be released with the returned func.
func (s *walStore) current() (*wal.WAL, func(), error) {
	s.mu.RLock()
	if s.w == nil {
		s.mu.RUnlock()
		if s.failed != nil {
			return nil, func() {}, s.failed
		}
		return nil, func() {}, fmt.Errorf("cluster: the WAL is closed: %w", types.ErrClosed)
	}
	return s.w, s.mu.RUnlock, nil
}

// roomNeeded is the free space the WAL needs to be sure of its next append: a new segment
// file, and a mebibyte for its meta database.
func (s *walStore) roomNeeded() uint64 {
	seg := uint64(s.segment)
	if seg == 0 {
		seg = uint64(wal.DefaultSegmentSize)
	}
	return seg + 1<<20
}

// recover reopens the WAL after a failed rotation, once, before the next append.
func (s *walStore) recover() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	if s.broken == nil {
		return nil
	}
	// Reopening needs room for a new segment (raft-wal creates the one the rotation
	// could not). Without it the open would fail after the close, and the node would have no
	// log to read from (raft panics when a committed entry cannot be read): keep the old
	// WAL, which still reads, until there is room.
	need := s.roomNeeded()
	if free, ok := freeBytes(s.dir); ok && free < need {
		return fmt.Errorf("%w (%d bytes free in %s, the WAL reopens once %d are)", s.broken, free, s.dir, need)
	}
	_ = s.closeLocked()
	if err := s.open(); err != nil {
		return fmt.Errorf("%w (after the append that failed with: %v)", err, s.broken)
	}
	s.logger.Info("WAL reopened after a failed segment rotation; appending again", "failed_with", s.broken)
	s.broken = nil
	return nil
}

// StoreLogs appends; see the top of this file for what a failure does.
func (s *walStore) StoreLogs(logs []*raft.Log) error {
	if err := s.recover(); err != nil {
		return err
	}
	w, done, err := s.current()
	if err != nil {
		return err
	}
	err = w.StoreLogs(logs)
	done()
	if err != nil {
		s.appendFailed(err)
	}
	return err
}

// StoreLog appends one entry.
func (s *walStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// appendFailed records a failed append: a failed fsync for good, a refusal after a failed
// rotation until the WAL is reopened; anything else raft-wal rolled back, and the next
// append retries.
func (s *walStore) appendFailed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, errSyncFailed) {
		if s.failed == nil {
			s.failed = fmt.Errorf("%w: %v", ErrStorageFailed, err)
			if s.fatal != nil {
				go s.fatal(s.failed)
			}
		}
		return
	}
	if errors.Is(err, types.ErrSealed) && s.broken == nil {
		s.broken = err
	}
}

// FirstIndex, LastIndex, GetLog, DeleteRange: raft.LogStore.
func (s *walStore) FirstIndex() (uint64, error) {
	w, done, err := s.current()
	if err != nil {
		return 0, err
	}
	defer done()
	return w.FirstIndex()
}

func (s *walStore) LastIndex() (uint64, error) {
	w, done, err := s.current()
	if err != nil {
		return 0, err
	}
	defer done()
	return w.LastIndex()
}

func (s *walStore) GetLog(index uint64, l *raft.Log) error {
	w, done, err := s.current()
	if err != nil {
		return err
	}
	defer done()
	return w.GetLog(index, l)
}

func (s *walStore) DeleteRange(min, max uint64) error {
	if err := s.recover(); err != nil {
		return err
	}
	w, done, err := s.current()
	if err != nil {
		return err
	}
	defer done()
	return w.DeleteRange(min, max)
}

// IsMonotonic: raft-wal allows no gaps (raft.MonotonicLogStore).
func (s *walStore) IsMonotonic() bool { return true }

// Set, Get, SetUint64, GetUint64: raft.StableStore, in the WAL's meta database.
func (s *walStore) Set(k, v []byte) error {
	w, done, err := s.current()
	if err != nil {
		return err
	}
	defer done()
	return w.Set(k, v)
}

func (s *walStore) Get(k []byte) ([]byte, error) {
	w, done, err := s.current()
	if err != nil {
		return nil, err
	}
	defer done()
	return w.Get(k)
}

func (s *walStore) SetUint64(k []byte, v uint64) error {
	w, done, err := s.current()
	if err != nil {
		return err
	}
	defer done()
	return w.SetUint64(k, v)
}

func (s *walStore) GetUint64(k []byte) (uint64, error) {
	w, done, err := s.current()
	if err != nil {
		return 0, err
	}
	defer done()
	return w.GetUint64(k)
}

// walFS is raft-wal's file system with a segment file's fsync errors marked
// (errSyncFailed) and, in tests, faults injected (walFaults).
type walFS struct {
	types.VFS
	dir string // the data directory, which walFaults is told
}

func (f *walFS) fault(op string) error {
	if walFaults == nil {
		return nil
	}
	return walFaults(f.dir, op)
}

func (f *walFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if err := f.fault("create"); err != nil {
		return nil, &os.PathError{Op: "create", Path: filepath.Join(dir, name), Err: err}
	}
	w, err := f.VFS.Create(dir, name, size)
	if err != nil {
		// raft-wal's file system creates the file and then reserves its size (through
		// v0.4.2, fs.go), and leaves the file behind when the reservation fails: no space
		// for it. Every later Create of that segment would then fail with "file exists",
		// the reopen included. The file holds nothing yet; it goes.
		if !errors.Is(err, os.ErrExist) {
			_ = os.Remove(filepath.Join(dir, name))
		}
		return nil, err
	}
	return &walFile{WritableFile: w, fs: f}, nil
}

func (f *walFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	w, err := f.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &walFile{WritableFile: w, fs: f}, nil
}

// walFile is a segment file opened for writing.
type walFile struct {
	types.WritableFile
	fs *walFS
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault("write"); err != nil {
		return 0, err
	}
	return f.WritableFile.WriteAt(p, off)
}

func (f *walFile) Sync() error {
	err := f.fs.fault("sync")
	if err == nil {
		err = f.WritableFile.Sync()
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errSyncFailed, err)
	}
	return nil
}

// diskFull reports whether err says the file system is out of space or quota.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

var (
	_ raft.LogStore          = (*walStore)(nil)
	_ raft.StableStore       = (*walStore)(nil)
	_ raft.MonotonicLogStore = (*walStore)(nil)
)
