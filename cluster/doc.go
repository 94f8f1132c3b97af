// Package cluster runs one raftlock node: hashicorp/raft with its log and stable values in
// hashicorp/raft-wal (wal/, the default for a new data directory) or BoltDB (raft.db, kept
// by a directory that has it; Config.LogStore), verified against the leader, and file
// snapshots under the data directory, the lock state machine of package fsm, and
// the leader-only machinery that drives cluster time.
//
// Only this package calls raft.Apply. A Node's operations are grouped by role and reached
// by accessor: Leases, Locks, Semaphores, Elections, Members, ACL and Events. Writes
// succeed only on a ready leader; on a follower they return ErrNotLeader and the caller
// (package transport) forwards the request to the leader.
//
// A leader is ready once a barrier has applied every entry committed before its term, its
// clock has started from the newest cluster time in its state (leases.Clock), and a Tick
// stamped with that clock has committed. From then on it:
//
//   - stamps every command with its clock reading,
//   - proposes a Tick at the earliest pending deadline, and at least every second while
//     leases exist (an idle cluster writes nothing),
//   - batches keepalives that arrive within RenewWindow into one Renew entry and answers
//     each only after that entry commits (Leases.KeepAliveMany puts many leases of one
//     request into the same entry),
//   - serves linearizable reads read-index style: note the commit index, confirm
//     leadership with a heartbeat round, wait until the state machine has applied that
//     index.
//
// Waiting acquires and blocking queries are answered by the state machine's events on
// the commit that decides them; nothing polls.
//
// # The package's parts
//
// The node and its lifecycle:
//
//	node.go       Node, New (stores -> raft transport -> raft -> bootstrap -> loops), Shutdown, the accessors
//	config.go     Config, its defaults and Validate
//	types.go      the aliases of fsm names, LeaseView, Query, Metrics, Status, Member
//	status.go     Node.Status, Node.Metrics, the apply counters
//	routing.go    leadership as a router sees it: IsLeader, Serving, LeaderWatch, HTTPAddr, LeaderHTTPAddr
//	errors.go     every error value and error type, raftError (raft's errors), afterProposal
//	outcome.go    outcomes: the one table from fsm.Status to the node's errors, for every path
//
// The leader and the way a command travels:
//
//	leader.go     leader: the leadership loop, the term's clock, readiness, ticks, duties
//	upgrade.go    the leader's upgrade loop: protocol versions and limits
//	proposer.go   proposer: stamp, raft.Apply, wait, refused outcomes
//	renew.go      renewer: keepalives batched into Renew entries
//	wait.go       Holder, capHold, acquire and queuedWait: the one flow and wait of every request that may queue
//	registry.go   registry: state machine events to waits and blocking-query watches; appliedWaiter
//	reads.go      ReadBarrier, the blocking read of status queries and statusRead
//
// The roles:
//
//	leases.go     Leases: create, keepalive, revoke, lookup; lease IDs
//	locks.go      Locks: acquire (exclusive or shared), release, status, list
//	locksets.go   Locks: acquire and release several locks in one entry (protocol version 3)
//	semaphores.go Semaphores: acquire, release, status
//	elections.go  Elections: campaign, resign, status
//	members.go    Members: add, remove, transfer leadership, registration, versions; ID and address rules
//	acl.go        ACL: bootstrap, policies, tokens, identities
//	events.go     Events: the event stream (Subscription, by namespace), histories, the
//	              dashboard's reads (overview, semaphores, elections, waits-for, refusals)
//	changes.go    the recent changes of names, and WaitChange: the blocking overview
//	backup.go     Node.Backup
//
// Storage:
//
//	storage.go    storage health and the watched log and stable stores
//	logstore.go   raft-boltdb or raft-wal, and detecting which a directory holds
//	walstore.go   raft-wal reopened after a failed segment rotation; a failed fsync stops the node
//	waltail.go    before raft-wal opens: the tail's uncommitted end zeroed, a begun rotation recorded
//	verify.go     log verification: the leader's checkpoints, every node's reports
//	convert.go    ConvertLogStore: a stopped node's directory to the other store
//	replgate.go   the transport raft sees: a down peer's failures held, not piled up
//	datadir*.go   the data directory's lock and private modes
//	restore.go    RestoreDataDir and RestoreIndex: a data directory from a backup
//	budget.go     the state machine timed for the latency budget
//
// Tests only:
//
//	faults.go     injected proposal failures (export_test.go sets them)
//	mutants.go    what the commit mutants of internal/mutant answer instead of waiting
package cluster
