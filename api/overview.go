package api

// Overview is the answer to GET /v1/overview: what the dashboard (/ui/) shows, read from
// the answering node's applied state, plus every member's own view of the cluster.
type Overview struct {
	// NodeID is the answering node.
	NodeID string `json:"node_id"`
	// ClusterTimeMs is the answering node's cluster time; the lock times below are on the
	// same clock.
	ClusterTimeMs int64 `json:"cluster_time_ms"`
	// AppliedIndex is the answering node's applied index just before it read the locks:
	// the locks are at least this new, so a client that also follows the event stream
	// keeps the changes it streamed after this index.
	AppliedIndex uint64 `json:"applied_index"`
	// Nodes are the members, sorted by ID, each as it answers GET /v1/cluster itself.
	Nodes []NodeStatus `json:"nodes"`
	// Leases counts the live leases.
	Leases LeaseSummary `json:"leases"`
	// Locks are the held locks under the request's prefix, in name order, at most its
	// limit; Truncated and Next page as in GET /v1/locks.
	Locks     []LockDetail `json:"locks"`
	Truncated bool         `json:"truncated"`
	Next      string       `json:"next,omitempty"`
	// WaitsFor are the wait-for edges of the locks with waiters under the prefix, in name
	// order, with ?include=waits_for: at most limit locks (WaitsForTruncated: more
	// follow) and at most queue edges each (LockWaits.More counts the rest).
	WaitsFor          []LockWaits `json:"waits_for,omitempty"`
	WaitsForTruncated bool        `json:"waits_for_truncated,omitempty"`
	// Refusals are the newest waiting requests the deadlock detector refused on locks
	// under the prefix, newest first, with ?include=waits_for (at most MaxRefusals).
	Refusals []Refusal `json:"refusals,omitempty"`
	// Semaphores and Elections are those in use under the prefix, in name order, with
	// ?include=semaphores and ?include=elections: at most limit each, the rest left out
	// (...Truncated), each with its first queue waiters.
	Semaphores          []SemaphoreStatus `json:"semaphores,omitempty"`
	SemaphoresTruncated bool              `json:"semaphores_truncated,omitempty"`
	Elections           []ElectionStatus  `json:"elections,omitempty"`
	ElectionsTruncated  bool              `json:"elections_truncated,omitempty"`
}

// MaxRefusals is the most refusals an overview lists.
const MaxRefusals = 20

// LockWaits are the wait-for edges of one lock's queue, in queue order: each waiter's
// edges, nearest first, then the holders in grant order.
type LockWaits struct {
	// Lock is the lock's name.
	Lock string `json:"lock"`
	// Edges are the edges shown; More counts those left out.
	Edges []WaitEdge `json:"edges"`
	More  int        `json:"more,omitempty"`
}

// The values of WaitEdge.By.
const (
	// WaitsForHolder: the blocker holds the lock.
	WaitsForHolder = "holder"
	// WaitsForQueuedAhead: the blocker asked for the lock ahead of the waiter (an
	// exclusive request waits for every request ahead back to the nearest exclusive one;
	// a shared request for the nearest exclusive one).
	WaitsForQueuedAhead = "queued_ahead"
	// WaitsForLockSetGrant: a shared request waits for the grant, not the release, of a
	// shared lockset queued ahead of it.
	WaitsForLockSetGrant = "lockset_grant"
)

// WaitEdge is one edge of the wait-for graph, as the deadlock detector draws it: the
// waiter's request cannot be granted before the blocker lets go. Leases are shown by
// fingerprint, never by ID.
type WaitEdge struct {
	// WaiterFingerprint, WaiterOwner and WaiterMode are the waiting request's.
	WaiterFingerprint string `json:"waiter_fingerprint"`
	WaiterOwner       string `json:"waiter_owner,omitempty"`
	WaiterMode        string `json:"waiter_mode"`
	// BlockerFingerprint and BlockerOwner are what it waits for: a holder or a request.
	BlockerFingerprint string `json:"blocker_fingerprint"`
	BlockerOwner       string `json:"blocker_owner,omitempty"`
	// By says how: WaitsForHolder, WaitsForQueuedAhead or WaitsForLockSetGrant.
	By string `json:"by"`
}

// Refusal is a waiting request that the deadlock detector refused because it would have
// closed a wait-for cycle, as the history of the lock asked for recorded it.
type Refusal struct {
	// Lock is the lock asked for (a refused lockset is recorded on each of its locks).
	Lock string `json:"lock"`
	// Index and TimeMs are the refused entry's index and cluster time.
	Index  uint64 `json:"index"`
	TimeMs int64  `json:"time_ms"`
	// Owner and LeaseFingerprint are the refused request's.
	Owner            string `json:"owner,omitempty"`
	LeaseFingerprint string `json:"lease_fingerprint"`
	// Cycle is the cycle it would have closed: each step's lease waits for the step's lock,
	// held or asked for ahead of it by the next step's lease (the first step's after the
	// last). A lock or lease outside the caller's prefixes is empty, with Hidden set.
	Cycle []CycleStep `json:"cycle"`
	// Detail is the cycle in words, as the lock's history gives it.
	Detail string `json:"detail"`
}

// CycleStep is one step of a refused wait-for cycle.
type CycleStep struct {
	LeaseFingerprint string `json:"lease_fingerprint,omitempty"`
	Lock             string `json:"lock,omitempty"`
	// Hidden marks a step whose lock or lease the caller may not read.
	Hidden bool `json:"hidden,omitempty"`
}

// NodeStatus is one member as the overview reports it.
type NodeStatus struct {
	Node
	// Reachable reports that the member answered GET /v1/cluster in time; Error says why
	// not otherwise, and the fields below are then zero.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// LeaderID, Term, CommitIndex, AppliedIndex, Ready and Serving are the member's own
	// answers (see Cluster).
	LeaderID     string `json:"leader_id,omitempty"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Ready        bool   `json:"ready"`
	Serving      string `json:"serving,omitempty"`
}

// LeaseSummary counts live leases.
type LeaseSummary struct {
	// Count is the number of live leases.
	Count int `json:"count"`
	// ExpiringSoon of them have a deadline within SoonMs of the cluster time.
	ExpiringSoon int   `json:"expiring_soon"`
	SoonMs       int64 `json:"soon_ms"`
	// Withheld reports that the counts are cluster-wide facts the token may not see (with
	// ACLs on, they need admin on the empty prefix): Count and ExpiringSoon are then 0.
	Withheld bool `json:"withheld,omitempty"`
}

// LockDetail is a held lock with its holder's lease and the age of its grant.
type LockDetail struct {
	LockStatus
	// LeaseFingerprint is a one-way fingerprint of the holder's lease (hex), never its ID.
	LeaseFingerprint string `json:"lease_fingerprint,omitempty"`
	// TTLMs is the holder lease's TTL; TTLLeftMs how long, in cluster time, until its
	// deadline (a keepalive moves it).
	TTLMs     int64 `json:"ttl_ms"`
	TTLLeftMs int64 `json:"ttl_left_ms"`
	// GrantedMs is the cluster time of the current grant and AgeMs how long ago it was;
	// both are absent when the lock's history does not hold the grant.
	GrantedMs *int64 `json:"granted_ms,omitempty"`
	AgeMs     *int64 `json:"age_ms,omitempty"`
}
