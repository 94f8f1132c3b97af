// Package cluster runs one raftlock node: hashicorp/raft with its log and stable values in
// BoltDB (raft.db, the default) or hashicorp/raft-wal (wal/, Config.LogStore), and file
// snapshots under the data directory, the lock state machine of package fsm, and
// the leader-only machinery that drives cluster time.
//
// Only this package calls raft.Apply. A Node offers lock operations (Acquire, Release,
// KeepAlive, ...) that succeed only on a ready leader; on a follower they return
// ErrNotLeader and the caller (package transport) forwards the request to the leader.
//
// A leader is ready once a barrier has applied every entry committed before its term, its
// clock has started from the newest cluster time in its state (leases.Clock), and a Tick
// stamped with that clock has committed. From then on it:
//
//   - stamps every command with its clock reading,
//   - proposes a Tick at the earliest pending deadline, and at least every second while
//     leases exist (an idle cluster writes nothing),
//   - batches keepalives that arrive within RenewWindow into one Renew entry and answers
//     each only after that entry commits (KeepAliveMany puts many leases of one request
//     into the same entry),
//   - serves linearizable reads read-index style: note the commit index, confirm
//     leadership with a heartbeat round, wait until the state machine has applied that
//     index.
//
// Waiting acquires and blocking queries are answered by the state machine's events on
// the commit that decides them; nothing polls.
package cluster
