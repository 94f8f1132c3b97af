// Package fsm is raftlock's deterministic lock state machine: the commands the leader
// proposes, how each committed entry changes the lock table, and the snapshot format.
//
// Everything here is a pure function of the log. Time arrives as the Now field the leader
// wrote into each command (cluster time, in milliseconds); applying an entry sets the
// machine's time to max(time, Now), moved by at most MaxTimeStep per entry from protocol
// version 2, and expires every lease and waiter whose deadline is at or before it. The package reads no clock, no random source, no network and no disk except
// the snapshot stream it is handed, so replaying the same log on any node yields the same
// state, byte for byte in its snapshot.
//
// The fencing token of a grant is the Raft log index of the entry that granted it: the
// acquire entry when the lock was free, or the release, revoke or expiry entry that handed
// it to the next waiter.
//
// Expected outcomes (a held lock, a stale token, an unknown lease, a quota) are Results
// returned from Apply, not errors; an undecodable command is a Result with StatusInvalid and
// changes nothing, so a corrupt entry, which every node sees alike, cannot take a node down.
// A command of a type this node does not know and may not skip is different: it comes from
// a newer node, and applying around it would make this node diverge, so the state machine
// halts (FSM.Halted) and the node must be upgraded.
//
// Protocol versions (Version) let a cluster of mixed versions stay identical: new commands
// and the new snapshot format are used only once every voter speaks them.
//
// The ACL state (protocol version 2) is replicated like the locks: policies of prefix
// rules, and tokens known only by the SHA-256 of their secret, which the cluster layer
// computes (ACLSecretHash) so that no secret is ever in the log or a snapshot. Resolving a
// request's token (ACLResolve, ACLIdentity.Access) reads rules compiled when they changed,
// because it happens on every request.
package fsm
