package cluster

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/internal/budget"
)

// storageHealth remembers whether the node's last write to its log or stable store failed.
// raft retries on its own (a follower gets the same entries again with the leader's next
// AppendEntries, a leader steps down), so the first write that succeeds clears it.
//
// A failure for good (fail: a raft-wal fsync that failed) is never cleared: the node's
// process is to exit, and StorageFailed's channel closes.
type storageHealth struct {
	failed atomic.Pointer[storageFailure]
	fatal  atomic.Pointer[storageFailure]
	once   sync.Once
	dead   chan struct{} // closed at the failure for good
}

func newStorageHealth() *storageHealth { return &storageHealth{dead: make(chan struct{})} }

// fail records a failure for good (ErrStorageFailed).
func (h *storageHealth) fail(err error) {
	h.once.Do(func() {
		h.fatal.Store(&storageFailure{err: err, since: time.Now()})
		close(h.dead)
	})
}

type storageFailure struct {
	err   error
	since time.Time
}

func (h *storageHealth) record(err error) error {
	if err == nil {
		if h.failed.Load() != nil {
			h.failed.Store(nil)
		}
		return nil
	}
	if h.failed.Load() == nil {
		h.failed.Store(&storageFailure{err: err, since: time.Now()})
	}
	return err
}

// check returns ErrStorage (with the cause and what to do) while the last write failed,
// and for good after a failed fsync.
func (h *storageHealth) check() error {
	if f := h.fatal.Load(); f != nil {
		return fmt.Errorf("%w since %s: %w; it writes nothing more and its process exits to be started again on what the disk holds: "+
			"check the disk (dmesg, SMART), and if it reported I/O errors move the data directory aside and start the node with --join",
			ErrStorage, f.since.Format(time.RFC3339), f.err)
	}
	if f := h.failed.Load(); f != nil {
		if diskFull(f.err) {
			return fmt.Errorf("%w since %s: %v; free space in the data directory and the node recovers by itself", ErrStorage, f.since.Format(time.RFC3339), f.err)
		}
		return fmt.Errorf("%w since %s: %v; the node retries its writes and recovers by itself when one succeeds; check the disk (dmesg)", ErrStorage, f.since.Format(time.RFC3339), f.err)
	}
	return nil
}

// mayStand is raft's CandidacyCheck (third_party/raft, candidacy.go): while the node's
// last write failed, it stands for election only once probe shows that its data directory
// takes a write again. Without it, a node on a full disk kept winning elections: it
// stands first after it steps down (the others wait for their own heartbeat timeout), its
// log is as long as theirs, its no-op fits the page it already holds, and the next write
// fails again; every write of the cluster waited on it (TestBlackbox_FullDisk, in CI).
// A node that does not stand still follows, and a write that succeeds clears the failure.
func (h *storageHealth) mayStand(probe func() error) error {
	err := h.check()
	if err == nil || h.fatal.Load() != nil {
		return err
	}
	if perr := probe(); perr != nil {
		return fmt.Errorf("%w (and a test write still fails: %v)", err, perr)
	}
	return nil
}

// probeDataDir tells whether dir takes a write: at least need bytes free (where the file
// system says), and a small file written, synced and removed.
func probeDataDir(dir string, need uint64) error {
	if free, ok := freeBytes(dir); ok && free < need {
		return fmt.Errorf("%d bytes free in %s, the log needs %d", free, dir, need)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// watchedLogs is the node's log store with every write's outcome recorded (and, with a
// budget recorder, its timing).
type watchedLogs struct {
	raft.LogStore
	h      *storageHealth
	budget *budget.Recorder // nil unless the latency budget is measured
	node   string
}

func (w watchedLogs) StoreLog(l *raft.Log) error {
	if w.budget != nil {
		return w.StoreLogs([]*raft.Log{l})
	}
	return w.h.record(w.LogStore.StoreLog(l))
}

func (w watchedLogs) StoreLogs(ls []*raft.Log) error {
	if w.budget != nil && len(ls) > 0 {
		start := time.Now()
		err := w.LogStore.StoreLogs(ls)
		w.budget.Stored(w.node, ls[0].Index, ls[len(ls)-1].Index, start, time.Now())
		return w.h.record(err)
	}
	return w.h.record(w.LogStore.StoreLogs(ls))
}

// DeleteRange records a failed truncation as well: a follower deletes a conflicting suffix
// before it stores the leader's entries, and on a full disk that is the write that fails.
// Its success clears nothing: a compaction (deleting old segments) succeeds on a full disk.
func (w watchedLogs) DeleteRange(min, max uint64) error {
	err := w.LogStore.DeleteRange(min, max)
	if err != nil {
		w.h.record(err)
	}
	return err
}

// IsMonotonic passes the wrapped store's raft.MonotonicLogStore answer through: raft-wal
// allows no gaps, so after installing a snapshot raft must empty it rather than leave a
// gap, and raft finds that out only through this method.
func (w watchedLogs) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// watchedStable is the node's stable store (term, vote) with every write's outcome recorded.
type watchedStable struct {
	raft.StableStore
	h    *storageHealth
	gate *closeGate
}

func (w watchedStable) Set(k, v []byte) error {
	defer w.gate.enter()()
	return w.h.record(w.StableStore.Set(k, v))
}

func (w watchedStable) SetUint64(k []byte, v uint64) error {
	defer w.gate.enter()()
	return w.h.record(w.StableStore.SetUint64(k, v))
}

// closeGate orders the stable store's writes before its close. raft answers heartbeats on
// its network transport's connection goroutines, which its Shutdown does not wait for: a
// heartbeat that passed raft's shutdown check just before it may still save a new term
// after the node closed its stores, and raft panics when that save fails. The gate makes
// the close wait for a write in progress, and a write that comes after the close wait for
// the process to end instead: it must neither panic the process nor let raft acknowledge a
// term it did not persist.
type closeGate struct {
	mu     sync.RWMutex
	closed bool
}

// enter admits one write and returns its exit; after close it never returns.
func (g *closeGate) enter() func() {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		select {} // the node has shut down; see closeGate
	}
	return g.mu.RUnlock
}

// close waits for the writes in progress and admits no more.
func (g *closeGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// StorageErr returns why this node cannot write its data directory, or nil.
func (n *Node) StorageErr() error { return n.storage.check() }

// StorageFailed returns a channel closed when this node's storage failed for good (an
// fsync of its raft-wal log failed: ErrStorageFailed). It then serves nothing, and its
// process should log StorageErr and exit, so that its supervisor starts it again on what
// the disk holds.
func (n *Node) StorageFailed() <-chan struct{} { return n.storage.dead }
