package raft

import "sync"

// raftlock: this file is not part of hashicorp/raft v1.7.3. See RAFTLOCK.md.

// pendingLogs holds the batch the leader is writing to its own log store, so that the
// replicators can send it to the followers while the leader's write is still running
// (the Raft thesis, section 10.2.1: the leader may write to its disk in parallel with
// replicating to its followers). The leader counts itself toward the commit quorum only
// once its own write has returned, exactly as before, so an entry is committed only when
// it is durable on a majority: the change moves when the followers receive an entry, not
// what a commit means.
type pendingLogs struct {
	mu    sync.Mutex
	first uint64 // index of logs[0]; meaningless when logs is empty
	logs  []*Log
}

// set publishes the batch the leader is about to write; it replaces the previous one,
// which by then is in the log store (or its write failed and the leader stepped down).
func (p *pendingLogs) set(logs []*Log) {
	p.mu.Lock()
	p.logs = logs
	if len(logs) > 0 {
		p.first = logs[0].Index
	}
	p.mu.Unlock()
}

// clear forgets the batch: it is in the log store now, which answers for it from here on,
// or this node leads again and its log may hold other entries at those indexes.
func (p *pendingLogs) clear() {
	p.set(nil)
}

// get copies the entry at index into out when it is in the batch being written. The
// entry is shared, not encoded: the log store and the transport only read it.
func (p *pendingLogs) get(index uint64, out *Log) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.logs) == 0 || index < p.first || index-p.first >= uint64(len(p.logs)) {
		return false
	}
	*out = *p.logs[index-p.first]
	return true
}

// EarlyReplicationFilter may be implemented by the LogStore given to NewRaft (directly or
// under a LogCache). The leader sends a batch to the followers before its own write of it
// has returned only when SendBeforeStored is true for every entry of the batch; otherwise
// it writes first and sends after, as v1.7.3 always did. A store that writes into entries
// as it stores them must say no for those: raft-wal's verifier stamps every checkpoint it
// stores on the leader with its checksum, and a follower sent the entry earlier would get
// it unstamped (and the stamp would race with the send).
type EarlyReplicationFilter interface {
	SendBeforeStored(*Log) bool
}

// sendBeforeStored says whether the replicators may send this batch while the leader
// writes it (see EarlyReplicationFilter).
func (r *Raft) sendBeforeStored(logs []*Log) bool {
	store := r.logs
	if c, ok := store.(*LogCache); ok {
		store = c.store
	}
	f, ok := store.(EarlyReplicationFilter)
	if !ok {
		return true
	}
	for _, l := range logs {
		if !f.SendBeforeStored(l) {
			return false
		}
	}
	return true
}

// getLogForReplication reads the entry at index for an AppendEntries request: from the
// batch being written when it is there, otherwise from the log store. Only the
// replicators read through it; every other reader reads the log store, which holds
// what is durable.
func (r *Raft) getLogForReplication(index uint64, out *Log) error {
	if r.pendingLogs.get(index, out) {
		return nil
	}
	return r.logs.GetLog(index, out)
}
