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
