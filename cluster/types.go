package cluster

import (
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Names of the state machine's types as the cluster's API hands them out, so that its
// callers (transport) need not import fsm.
type (
	// LeaseID identifies a lease.
	LeaseID = fsm.LeaseID
	// NodeInfo is a member's ID and addresses.
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
	// ACLRule grants an access on a name prefix.
	ACLRule = fsm.ACLRule
	// ACLIdentity is what a token (or the anonymous caller) may do.
	ACLIdentity = fsm.ACLIdentity
	// ACLPolicyView is a policy as the ACL reads answer it.
	ACLPolicyView = fsm.ACLPolicyView
	// ACLTokenView is a token as the ACL reads answer it, without its secret.
	ACLTokenView = fsm.ACLTokenView
	// BackupSummary describes the state a backup holds.
	BackupSummary = fsm.SnapshotSummary
	// Limits are the cluster's configured quotas.
	Limits = fsm.Limits
)

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
}
