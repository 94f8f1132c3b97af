// Package fsm is raftlock's deterministic lock state machine: the commands the leader
// proposes, how each committed entry changes the lock table, and the snapshot format.
//
// Everything here is a pure function of the log. Time arrives as the Now field the leader
// wrote into each command (cluster time, in milliseconds); applying an entry sets the
// machine's time to max(time, Now), moved by at most MaxTimeStep per entry from protocol
// version 2, and expires every lease and waiter whose deadline is at or before it. The
// package reads no clock, no random source, no network and no disk except the snapshot
// stream it is handed, so replaying the same log on any node yields the same
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
//
// Beside the exclusive lock there are shared locks (a mode of the lock table), counting
// semaphores and leader elections. They follow the lock's rules: a grant's token is the
// index of the entry that granted it; a lease's expiry or revoke frees what it holds and
// takes it out of every queue in the same entry; waiting is FIFO with a deadline in cluster
// time, and a freed grant goes to the head of the queue in the entry that freed it. Each
// kind has its own namespace (Space): one name may be a lock, a semaphore and an election
// at once.
//
// # The package's files
//
//	fsm.go             the FSM, its constructor and options, Apply and the events it reports
//	apply.go           the path of one entry: step, decode, apply, and the command registry
//	primitives.go      the primitive registry: the hooks the shared code calls per primitive
//	time.go            cluster time: how an entry moves it, and what expires as it moves
//	command.go         command types and the fields their rows encode
//	result.go          the outcome of one entry (Result, Status)
//	state.go           the replicated state and its small helpers
//	lease.go           leases: create, renew, revoke, and what ends with a lease
//	locks.go           locks, exclusive and shared: state, acquire, release, dequeue,
//	                   handover, hooks, and their part of the snapshot
//	locksets.go        locksets (version 3), and the waiting sets' part of the snapshot;
//	                   lockset groups (version 7) and their part of the snapshot
//	maxhold.go         maximum holds and lock delays, and their part of the snapshot
//	deadlock.go        the wait-for cycle check (version 3)
//	semaphores.go      counting semaphores: state, commands, hooks, snapshot parts
//	elections.go       leader elections: state, commands, hooks, snapshot parts
//	queue.go           the FIFO wait queue that every primitive uses
//	grants.go          the ordered set of grants of a shared lock or a semaphore
//	limits.go          the quotas, and the checks that refuse a command over one
//	quotas.go          version 5's quotas per identity and for the whole cluster, and
//	                   the use they count (derived state)
//	sweep.go           version 6's sliced sweep: dead leases, the budget per entry, and
//	                   the order in which what ended is swept
//	history.go         the event histories of locks (version 2), semaphores and
//	                   elections (version 7), their kinds and snapshot part
//	waits.go           read-only views of who waits for what: queues in order, the
//	                   wait-for edges by the deadlock detector's rules, its refusals
//	owner.go           lease ownership (version 4)
//	nodes.go           node registrations
//	acl.go             the ACL state, its commands and its reads
//	acl_identity.go    resolving a request's token to compiled rules
//	version.go         protocol versions: the version gate, SetVersion, NodeVersion
//	halt.go            the node-local halt on a command this node does not know
//	snapshot.go        Snapshot, Restore and the snapshot encoding's fixed part
//	encoder.go         the streaming snapshot encoder
//	shadow.go          the lagging copy of the state that snapshots are encoded from
//	sharing.go         strings the shadow shares with the live state
//	acl_snapshot.go    the ACL part of the snapshot encoding
//	backup.go          backups: summaries and the state a rebuilt cluster starts from
//	overview.go        the dashboard's reading and node-local counters
//	errors.go          the error values
//	mutants.go         what only the mutation campaign's hooks call
//
// # The path of one command
//
// An Acquire committed at index i, as a reader follows it:
//
//  1. FSM.Apply (fsm.go) takes the lock and calls applyLocked, which calls step (apply.go),
//     the one function that applies an entry, to the live state and the shadow alike.
//  2. step decodes the entry (FSM.decode, then decodeCommand in command.go) and calls
//     state.apply.
//  3. state.apply calls advance (time.go): cluster time moves, then the waits and leases
//     that have expired by it end, in the fixed order advance documents, each primitive
//     through its row's hooks (primitives.go).
//  4. handle (apply.go) finds the command's row in the registry (commands) and, past the
//     version gate, runs its handler: state.acquire (locks.go), which grants, queues or
//     refuses, with the quota check (limits.go) and the lease (lease.go) on its way.
//  5. settle (locks.go) grants the shared waiters the entry put at the head of a queue,
//     and the Result goes back to Apply, which hands the entry's events to the observer.
package fsm
