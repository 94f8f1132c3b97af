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
// raft-wal v0.4.0 cannot append again after an append failed: its tail segment's
// in-memory index has already moved past what reached the disk, so every later append is
// refused ("non-monotonic append"), and a segment rotation that failed (no space for the
// next segment file) leaves the tail sealed, so every later append fails with ErrSealed.
// Reopening the WAL recovers its tail from what is on disk, as a restart would (a batch
// whose commit frame did not reach the file is dropped; it was never acknowledged).
//
//   - A write or a file creation that failed (no space, a quota, any error before the
//     fsync): the node stops serving writes and says why (StorageErr), and before its next
//     append reopens the WAL; once that append succeeds it serves again by itself.
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

// walStore is raft-wal's WAL with its meta database, reopened after a failed append.
// WAL.Close leaves the meta database open (v0.4.0), so the store closes it: without that,
// the meta file's lock would outlive the node and a node restarted in the same process
// would wait on it forever.
type walStore struct {
	dir     string // the data directory
	segment int    // segment size; 0: raft-wal's default
	logger  hclog.Logger
	fatal   func(error) // told once of a failed fsync

	mu     sync.RWMutex // held exclusively only to swap w and meta
	w      *wal.WAL
	meta   *metadb.BoltMetaDB
	broken error // the failed append that the next one reopens the WAL for
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
		meta.Close()
		return fmt.Errorf("cluster: opening the WAL in %s: %w", p, err)
	}
	s.w, s.meta = w, meta
	return nil
}

// closeLocked closes the WAL, then its meta database.
func (s *walStore) closeLocked() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	if merr := s.meta.Close(); err == nil {
		err = merr
	}
	s.w, s.meta = nil, nil
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

// recover reopens the WAL after a failed append, once, before the next one.
func (s *walStore) recover() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	if s.broken == nil {
		return nil
	}
	// Reopening needs room for a new segment (raft-wal creates one when the tail was
	// sealed). Without it the open would fail after the close, and the node would have no
	// log to read from (raft panics when a committed entry cannot be read): keep the old
	// WAL, which still reads, until there is room.
	need := uint64(s.segment)
	if need == 0 {
		need = uint64(wal.DefaultSegmentSize)
	}
	if free, ok := freeBytes(s.dir); ok && free < need+1<<20 {
		return fmt.Errorf("%w (%d bytes free in %s, the WAL reopens once %d are)", s.broken, free, s.dir, need+1<<20)
	}
	_ = s.closeLocked()
	if err := s.open(); err != nil {
		return fmt.Errorf("%w (after the append that failed with: %v)", err, s.broken)
	}
	s.logger.Info("WAL reopened after a failed write; appending again", "failed_with", s.broken)
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

// appendFailed records a failed append: a failed fsync for good, anything else until
// the WAL is reopened.
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
	if s.broken == nil {
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
