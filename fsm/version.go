package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Version is the newest protocol version this code speaks: the log commands and the
// snapshot format it can read and write.
//
// A cluster runs one active version (FSM.Version), which only rises, and only through a
// SetVersion entry that the leader proposes once every voter has registered (NodeVersion)
// that it speaks the new one. Until then a node writes exactly what version 1 code writes,
// so that old and new nodes in one cluster hold the same state byte for byte.
//
//   - 1: the original log and snapshot format.
//   - 2: SetVersion, NodeVersion, SetLimits and the ACL commands; shared locks,
//     semaphores and elections; snapshot format 2 (adds the active version, the
//     limits, the node versions, the ACL state, the lock histories and the primitives);
//     one entry moves cluster time by at most MaxTimeStep.
//   - 3: deadlock detection (a waiting request that would close a wait-for cycle is
//     refused); AcquireEx (maximum hold, lock delay), LockSet and LockSetRelease; the
//     snapshot's version 3 parts (reserved and delayed locks, maximum holds, waiting
//     locksets and wait options: the sections of version 3 in primitives.go) and the
//     history kinds of these endings.
//   - 3: a lease records the ACL accessor that created it (Command.Creator on CreateLease
//     and on an acquire with NewLease; snapshot format 3 writes it per lease).
//   - 4: lease ownership in the state machine (owner.go): every command that uses a
//     lease carries its caller (Command.Creator, and Command.Callers on Renew), and a
//     command from another identity than the lease's creator is refused at apply as if
//     the lease did not exist; a caller whose token no longer exists is refused
//     (StatusUnauthenticated); deleting a token revokes every lease it created, in the
//     same entry. The snapshot format stays 3 (with the active version 4 in it).
//   - 5: isolation between identities (quotas.go): the limits MaxLocks and MaxWaiters
//     for the whole cluster and PerIdentity (SetLimits carries them as a trailing field),
//     quotas on policies and tokens (a trailing field of ACLSetPolicy and ACLSetToken),
//     and a lock history's identity with shares of the history bound per identity
//     (history.go). Snapshot format 4: format 3 with the new limits, the policies' and
//     tokens' quotas and each history's identity.
//   - 6: the sliced sweep (sweep.go): an entry ends at most SweepBudget units of what
//     expired, was revoked or lost its token, the rest carried to the next entries; a lease
//     is dead to every command from the entry that ends it; a revoke and a token's deletion
//     mark, and the sweep ends. Snapshot format 5: format 4 with a flags byte per lease
//     (revoked) and the tokens whose leases are being revoked.
//   - 7: what the operator's view needs kept (the dashboard): a lockset granted whole in one
//     entry is kept as one group in the state (locksets.go: its token, mode and the locks
//     its lease still holds with it), where matching grants on token and lease would be
//     ambiguous; and the histories of semaphores and elections (history.go: their own
//     kinds, sharing the history bound with the locks'). No new command. Snapshot format
//     6: format 5 with a namespace byte per history and the lockset groups.
const Version uint64 = 7

// Since returns the protocol version that introduced the command type, and 0 for a type
// this code does not know. A node that speaks an older version reads the type as unknown:
// it halts on it, or skips it when the type is skippable.
func (t Type) Since() uint64 { return commandOf(t &^ FlagSkippable).since }

// known returns the type without its flag when a node speaking version max knows it, and
// 0 (no type) otherwise, so that a switch on it treats a newer type as unknown.
func (t Type) known(max uint64) Type {
	if v := t.Since(); v == 0 || v > max {
		return 0
	}
	return t &^ FlagSkippable
}

// Version returns the cluster's active protocol version, which the replicated state holds:
// 1 until a SetVersion entry raises it.
func (f *FSM) Version() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.version
}

// MaxVersion returns the newest protocol version this node speaks: the version it
// registers with a NodeVersion command.
func (f *FSM) MaxVersion() uint64 { return f.maxVersion }

// NodeVersion returns the newest protocol version that node id registered, and whether it
// registered one. While the active version is 1 the table is soft state (see protocol), so
// a node whose entry is missing should register again.
func (f *FSM) NodeVersion(id string) (uint64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, ok := f.s.nodeVersions[id]
	return v, ok
}

// protocol is the part of the replicated state that protocol versions added, kept apart
// from the lock table so that the two evolve independently.
type protocol struct {
	// version is the cluster's active protocol version: 1 for an empty state or one
	// restored from a version 1 snapshot.
	version uint64
	// limits are the quotas set by the last SetLimits entry (zero: unlimited).
	limits Limits
	// nodeVersions maps a node ID to the newest version it registered (NodeVersion).
	//
	// While the active version is 1 this table is soft state: a version 1 snapshot has no
	// place for it, so it is not written there and is lost when a node restores from one.
	// That keeps mixed clusters deterministic: a real version 1 node skips NodeVersion
	// entries as ticks and writes version 1 snapshots without the table, and a newer node
	// at active version 1 writes the very same bytes. Nodes may therefore disagree about
	// the table while it is soft, and nothing replicated may depend on it: only the leader
	// reads it, to decide when to propose SetVersion. When SetVersion leaves version 1 the
	// table is emptied on every node, so from then on, when it is written to snapshots, it
	// is a pure function of the log again; nodes then register anew.
	nodeVersions map[string]uint64
	// maxVersion is the newest version this node speaks: node-local, not replicated, but
	// the same on every node that speaks the same version, so applying stays a function
	// of the log. A type newer than it is unknown here, as it would be to older code.
	maxVersion uint64
	// stamp is the start of the leases and waits set by the entry being applied: the
	// larger of cluster time and the entry's Now (see moveTime). It is scratch for one
	// entry, not state: every entry sets it before use.
	stamp int64
	// acl is the ACL state (acl.go). It stays empty at version 1, which refuses the ACL
	// commands, so a version 1 snapshot has no place for it and needs none.
	acl acl
}

// setVersion applies SetVersion: the active version only rises. Reaching version 4
// revokes the leases of tokens deleted before it (owner.go).
func (s *state) setVersion(index uint64, c *Command, _ *Result) {
	if c.Version <= s.version {
		return
	}
	if s.version < 2 {
		s.nodeVersions = nil // soft state becomes replicated: start it from the log alone
	}
	from := s.version
	s.version = c.Version
	if from < 4 && s.ownerChecked() {
		s.revokeOrphans(index)
	}
	if from < 5 && s.version >= 5 {
		s.hist.ownAll()
	}
}

// registerVersion applies NodeVersion.
func (s *state) registerVersion(_ uint64, c *Command, r *Result) {
	if c.Node.ID == "" || c.Version == 0 {
		r.Status, r.Err = StatusInvalid, fmt.Errorf("%w: node_version needs a node ID and a version", ErrCorruptCommand)
		return
	}
	if s.nodeVersions == nil {
		s.nodeVersions = make(map[string]uint64)
	}
	s.nodeVersions[c.Node.ID] = c.Version
}

// active reports whether the cluster has activated the version that introduced command
// type t, and refuses the command (StatusInvalid) when it has not. A newer node must not act
// on such a command while a node that does not know it may still be a member: that node
// halts on it, and the state the command sets could not be written to its snapshots.
func (s *state) active(t Type, r *Result) bool {
	if v := t.Since(); v > s.version {
		r.Status, r.Err = StatusInvalid, fmt.Errorf("%w: %s needs version %d, the cluster runs %d", ErrInactiveVersion, t, v, s.version)
		return false
	}
	return true
}

// snapshotMagicV2 starts a snapshot in format 2, written once the active version is 2 or
// more. Format 1 (snapshotMagic) stays what version 1 code writes and reads.
var snapshotMagicV2 = []byte("RLKS\x02")

// snapshotMagicV3 starts a snapshot in format 3, written once the active version is 3 or
// more: format 2 with each lease's creator.
var snapshotMagicV3 = []byte("RLKS\x03")

// snapshotMagicV4 starts a snapshot in format 4, written once the active version is 5:
// format 3 with what version 5 adds (see Version).
var snapshotMagicV4 = []byte("RLKS\x04")

// snapshotMagicV5 starts a snapshot in format 5, written once the active version is 6 or
// more: format 4 with what version 6 adds (see Version).
var snapshotMagicV5 = []byte("RLKS\x05")

// snapshotMagicV6 starts a snapshot in format 6, written once the active version is 7 or
// more: format 5 with what version 7 adds (see Version).
var snapshotMagicV6 = []byte("RLKS\x06")

// magic returns the header of this state's snapshot: format 1 while the active version is
// 1, so that old and new nodes at version 1 write the same bytes, and format 2 after.
func (s *state) magic() []byte {
	switch {
	case s.version >= 7:
		return snapshotMagicV6
	case s.version >= 6:
		return snapshotMagicV5
	case s.version >= 5:
		return snapshotMagicV4
	case s.version >= 3:
		return snapshotMagicV3
	case s.version >= 2:
		return snapshotMagicV2
	}
	return snapshotMagic
}

// appendProtocol appends what format 2 adds after the header fields: the active version,
// the limits, the node versions sorted by ID, and the ACL state (appendACL). Format 1
// adds nothing.
func (s *state) appendProtocol(buf []byte) []byte {
	if s.version < 2 {
		return buf
	}
	buf = binary.AppendUvarint(buf, s.version)
	buf = binary.AppendUvarint(buf, s.limits.MaxLeases)
	buf = binary.AppendUvarint(buf, s.limits.MaxLocksPerLease)
	buf = binary.AppendUvarint(buf, s.limits.MaxWaitersPerLock)
	if s.version >= 5 {
		buf = binary.AppendUvarint(buf, s.limits.MaxLocks)
		buf = binary.AppendUvarint(buf, s.limits.MaxWaiters)
		buf = appendQuotas(buf, s.limits.PerIdentity)
	}
	ids := sortedNames(s.nodeVersions)
	buf = binary.AppendUvarint(buf, uint64(len(ids)))
	for _, id := range ids {
		buf = appendString(buf, id)
		buf = binary.AppendUvarint(buf, s.nodeVersions[id])
	}
	return s.acl.appendACL(buf, s.version)
}

// snapshotFormat returns the format of a snapshot from its header.
func snapshotFormat(data []byte) (uint64, error) {
	switch {
	case bytes.HasPrefix(data, snapshotMagic):
		return 1, nil
	case bytes.HasPrefix(data, snapshotMagicV2):
		return 2, nil
	case bytes.HasPrefix(data, snapshotMagicV3):
		return 3, nil
	case bytes.HasPrefix(data, snapshotMagicV4):
		return 4, nil
	case bytes.HasPrefix(data, snapshotMagicV5):
		return 5, nil
	case bytes.HasPrefix(data, snapshotMagicV6):
		return 6, nil
	}
	return 0, badSnapshot("unknown header")
}

// decodeProtocol reads what appendProtocol wrote. Order and duplicates are left to the
// canonical-form check that decodeSnapshot ends with; values no encoder writes are refused.
func (s *state) decodeProtocol(d *decoder, format uint64) error {
	s.version = 1
	if format < 2 {
		return nil
	}
	s.version = d.uvarint()
	s.limits = Limits{MaxLeases: d.uvarint(), MaxLocksPerLease: d.uvarint(), MaxWaitersPerLock: d.uvarint()}
	if s.version >= 5 {
		s.limits.MaxLocks, s.limits.MaxWaiters = d.uvarint(), d.uvarint()
		s.limits.PerIdentity = d.quotas()
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every entry takes at least one byte
		d.fail(ErrCorruptCommand)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		id, v := d.string(), d.uvarint()
		if d.err == nil && (id == "" || v == 0) {
			return badSnapshot("node version %q: %d", id, v)
		}
		if s.nodeVersions == nil {
			s.nodeVersions = make(map[string]uint64)
		}
		s.nodeVersions[id] = v
	}
	if d.err == nil {
		if err := s.acl.decodeACL(d, s.version); err != nil {
			return err
		}
	}
	if d.err == nil && (s.version < 2 || s.version > Version) {
		return badSnapshot("format 2 at protocol version %d", s.version)
	}
	return nil
}
