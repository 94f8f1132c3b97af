package cluster

import (
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Names of package fsm that the node's API speaks, aliased so that its callers need not
// import fsm.
type (
	// LeaseID names a lease; it is also the lease's bearer secret.
	LeaseID = fsm.LeaseID
	// NodeInfo is a member's registration: its ID and addresses.
	NodeInfo = fsm.NodeInfo
	// LockView is a lock's state as a status read answers it.
	LockView = fsm.LockView
	// SemaphoreView is a semaphore's state as a status read answers it.
	SemaphoreView = fsm.SemaphoreView
	// ElectionView is an election's state as a status read answers it.
	ElectionView = fsm.ElectionView
	// HistoryEvent is one recorded event of a lock.
	HistoryEvent = fsm.HistoryEvent
	// Overview is the dashboard's page of held locks and lease counts.
	Overview = fsm.Overview
	// ACLRule is one rule of an ACL policy.
	ACLRule = fsm.ACLRule
	// ACLIdentity is what a token (or its absence) may do.
	ACLIdentity = fsm.ACLIdentity
	// ACLPolicyView is a policy as the ACL reads list it.
	ACLPolicyView = fsm.ACLPolicyView
	// ACLTokenView is a token as the ACL reads list it, without secret or hash.
	ACLTokenView = fsm.ACLTokenView
	// BackupSummary says at which applied index, cluster time and protocol version a
	// backup was read.
	BackupSummary = fsm.SnapshotSummary
	// Limits are the quotas of the replicated state.
	Limits = fsm.Limits
	// Access is the right an ACL rule grants on the names it matches, ordered from
	// AccessRead up (AccessDeny sits below it, so a check "at least read" refuses it).
	Access = fsm.Access
	// CycleStep is one step of a deadlock's wait-for cycle: the lease (by fingerprint)
	// that waits for a lock, and the lease it waits for there.
	CycleStep = fsm.CycleStep
	// RecordedCycle is a refused wait's cycle as a lock's history keeps it: its steps
	// from protocol version 8, its text before.
	RecordedCycle = fsm.RecordedCycle
	// Fingerprint names a lease in histories and cycles without giving away its ID.
	Fingerprint = fsm.Fingerprint
	// LockDetail is a held lock as the dashboard's overview lists it.
	LockDetail = fsm.LockDetail
	// Holding is one grant of a lock or one permit of a semaphore: lease, token, owner.
	Holding = fsm.Holding
	// Quotas are an identity's quotas: leases, grants and waits (protocol version 5).
	Quotas = fsm.Quotas
	// UsageView is an identity's use of the cluster beside its quotas.
	UsageView = fsm.UsageView
	// Waiting is one request in a queue: lease, owner, since when, until when.
	Waiting = fsm.Waiting
	// LockWaits are the wait-for edges of one lock's queue.
	LockWaits = fsm.LockWaits
	// WaitEdge is one edge of the wait-for graph: a waiter and what it waits for.
	WaitEdge = fsm.WaitEdge
	// Refusal is a waiting request the deadlock detector refused, from a lock's history.
	Refusal = fsm.Refusal
	// LockSetView is a lockset granted whole in one commit, as one group (version 7).
	LockSetView = fsm.LockSetView
)

// LeaseFingerprint returns the fingerprint the API shows for lease id: never the ID.
func LeaseFingerprint(id LeaseID) Fingerprint { return fsm.LeaseFingerprint(id) }

// The rights of Access.
const (
	AccessNone  = fsm.AccessNone
	AccessDeny  = fsm.AccessDeny
	AccessRead  = fsm.AccessRead
	AccessLock  = fsm.AccessLock
	AccessAdmin = fsm.AccessAdmin
)

// CallerAnonymous is the creator a lease records, from protocol version 4 on, when a
// caller without a token made it with ACLs on: all such callers are one identity, with one
// set of quotas (protocol version 5).
const CallerAnonymous = fsm.CallerAnonymous

// ParseAccess reads a rule's right as the API spells it ("deny", "read", "lock",
// "admin"); "none" is refused, so that a rule that grants nothing says deny.
func ParseAccess(s string) (Access, error) { return fsm.ParseAccess(s) }

// ParseLeaseID reads a lease ID as the API spells it.
func ParseLeaseID(s string) (LeaseID, error) { return fsm.ParseLeaseID(s) }

// LeaseView is a lease as a lookup answers it.
type LeaseView struct {
	TTL   time.Duration
	Locks []string // names of the locks it holds, sorted
}

// Query says how a status read is served: linearizable unless Stale; with Wait > 0 a
// blocking query that returns once the object's modify index exceeds WaitIndex, or after Wait.
type Query struct {
	Stale     bool
	WaitIndex uint64
	Wait      time.Duration
	// Queue is how many waiters the read lists in order in the view's Queue (0: none,
	// a negative number: every one).
	Queue int
}

// Metrics is the node's state and counters at one moment, read by /metrics by field.
type Metrics struct {
	IsLeader           bool
	Term               uint64
	CommitIndex        uint64
	AppliedIndex       uint64
	ClusterTime        time.Duration // the state machine's cluster time since its origin
	Leases             int
	LocksHeld          int
	SemaphoresInUse    int
	SemaphorePermits   int
	ElectionsLed       int
	SnapshotLagEntries uint64
	GrantsTotal        uint64 // counters since this node started
	HandoversTotal     uint64
	RenewEntriesTotal  uint64
	// RaftPeersRefused and RaftPeersDropped count the Raft port's connections turned
	// away since this node started (tlsconf.StreamStats; zero without TLS): refused at or
	// after the handshake, or dropped unread because too many handshakes were pending.
	RaftPeersRefused uint64
	RaftPeersDropped uint64
	// LogVerifyRanges and LogVerifyFailures count the log ranges this node verified
	// since it started, and those whose checksums differed from the leader's (verify.go).
	LogVerifyRanges   uint64
	LogVerifyFailures uint64
	// LeaseIDsTotal counts the lease IDs this node settled since it started for requests
	// that create their lease (drawn at random, or derived from a request_id), and
	// WaitsRegisteredTotal the waits it registered for requests that may queue: work of
	// the requests this node serves, none of which a follower does for a request it
	// forwards to the leader.
	LeaseIDsTotal        uint64
	WaitsRegisteredTotal uint64
}

// Member describes one server of the Raft configuration.
type Member struct {
	ID       string
	RaftAddr string
	HTTPAddr string
	Voter    bool
	Leader   bool
}

// Status is the node's view of the cluster.
type Status struct {
	LeaderID     string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Members      []Member
	// ProtocolVersion is the active protocol version this node has applied.
	ProtocolVersion uint64
	// Limits are the quotas in force.
	Limits Limits
}

// ms turns a duration into the milliseconds of a state machine command.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// dur turns the milliseconds of the state machine into a duration.
func dur(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
