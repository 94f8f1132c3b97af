package fsm

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrRestoreIndex means PrepareRestore was asked for an index below the one the backup
// was taken at: the restored cluster would then issue tokens and modify indexes that the
// old one had already issued.
var ErrRestoreIndex = errors.New("fsm: restore index below the backup's index")

// SnapshotSummary describes an encoded state without its secrets: no lease IDs, no lock
// names. It is what a backup tool prints and what a backup file's header repeats.
type SnapshotSummary struct {
	// Index is the index of the last entry applied to the state (its `applied`).
	Index uint64
	// ClusterTimeMs is the state's cluster time in milliseconds.
	ClusterTimeMs int64
	// ProtocolVersion is the cluster's active protocol version in the state.
	ProtocolVersion uint64
	// Format is the snapshot format of the encoding (1 or 2).
	Format uint64
	// FreedIndex is the index of the last entry that freed a lock: free locks report it
	// as their modify index.
	FreedIndex uint64
	// Leases, Locks and Waiters count the live leases, held locks and queued waiters.
	Leases, Locks, Waiters int
	// Nodes counts the registered nodes (their HTTP addresses); NodeVersions the nodes
	// that registered a protocol version.
	Nodes, NodeVersions int
	// Limits are the quotas in force.
	Limits Limits
}

// summary describes s; the caller holds whatever lock guards it.
func (s *state) summary() SnapshotSummary {
	sum := SnapshotSummary{
		Index:           s.applied,
		ClusterTimeMs:   s.time,
		ProtocolVersion: s.version,
		Format:          1,
		FreedIndex:      s.freedIndex,
		Leases:          len(s.leases),
		Locks:           len(s.locks),
		Nodes:           len(s.nodes),
		NodeVersions:    len(s.nodeVersions),
		Limits:          s.limits,
	}
	if s.version >= 2 {
		sum.Format = 2
	}
	for _, lk := range s.locks {
		sum.Waiters += lk.ro().queue.len
	}
	return sum
}

// SnapshotWithSummary returns the snapshot encoding of the current state (as
// SnapshotBytes) together with its summary, both read under one lock, so that the summary
// describes exactly those bytes. A halted state machine has no snapshot.
func (f *FSM) SnapshotWithSummary() ([]byte, SnapshotSummary, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.haltErr != nil {
		return nil, SnapshotSummary{}, fmt.Errorf("fsm: no snapshot of a halted state machine: %w", f.haltErr)
	}
	return f.s.encode(), f.s.summary(), nil
}

// InspectSnapshot decodes a snapshot encoding (what SnapshotBytes returns and raft's
// snapshots hold) as a node of this version would restore it, and summarizes it. A
// snapshot that does not decode, is not canonical, or needs a newer protocol version is
// refused with ErrBadSnapshot or ErrUnsupportedVersion.
func InspectSnapshot(data []byte) (SnapshotSummary, error) {
	s, err := NewWithOptions(Options{}).restorable(data)
	if err != nil {
		return SnapshotSummary{}, err
	}
	return s.summary(), nil
}

// PrepareRestore turns a backup's state into the state a cluster rebuilt from it starts
// with at log index newIndex, the index of the Raft snapshot it is installed as.
//
// Every lease, lock and waiter is dropped: their holders have moved on while the cluster
// was lost, and a restored lease would let a stale holder resume its lock with an old
// token. Every lock therefore starts free, and the first grant after the restore is a new
// entry, whose index (its token) is above newIndex. Node registrations (HTTP addresses and
// protocol versions) are dropped too: the new nodes register themselves. Cluster time, the
// active protocol version, the limits and the ACL policies and token hashes are kept. The
// applied index and the freed index
// become newIndex (and so do the semaphores' and elections' freed indexes), so that no
// modify index goes backwards and no read waits for an index the new log never reaches.
//
// newIndex below the backup's applied index is refused (ErrRestoreIndex). The result is
// in canonical form: it decodes and encodes to the same bytes.
func PrepareRestore(data []byte, newIndex uint64) ([]byte, error) {
	f := NewWithOptions(Options{})
	old, err := f.restorable(data)
	if err != nil {
		return nil, err
	}
	if newIndex < old.applied {
		return nil, fmt.Errorf("%w: backup taken at index %d, restore asked for %d", ErrRestoreIndex, old.applied, newIndex)
	}
	s := newState(nil)
	s.applied, s.freedIndex = newIndex, newIndex
	for _, p := range primitives {
		if p.freed != nil {
			*p.freed(s) = newIndex
		}
	}
	s.time = old.time
	s.version, s.maxVersion = old.version, old.maxVersion
	s.limits = old.limits
	s.acl = old.acl // policies and token hashes are configuration, not lock state
	out := s.encode()
	// Check what we hand on as a node restoring it would, canonical form included.
	back, err := f.restorable(out)
	if err != nil {
		return nil, fmt.Errorf("fsm: prepared restore state does not decode: %w", err)
	}
	if !bytes.Equal(back.encode(), out) {
		return nil, badSnapshot("prepared restore state is not canonical")
	}
	return out, nil
}
