package cluster

import (
	"fmt"
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
