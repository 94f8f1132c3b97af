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
type storageHealth struct {
	failed atomic.Pointer[storageFailure]
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

// check returns ErrStorage (with the cause) while the last write failed.
func (h *storageHealth) check() error {
	if f := h.failed.Load(); f != nil {
		return fmt.Errorf("%w since %s: %v; free space in the data directory and the node recovers by itself", ErrStorage, f.since.Format(time.RFC3339), f.err)
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
