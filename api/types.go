package api

// CreateLeaseRequest is the body of POST /v1/leases.
type CreateLeaseRequest struct {
	// TTLMs is the lease's time to live in milliseconds; zero means DefaultTTLMs.
	TTLMs int64 `json:"ttl_ms"`
}

// Lease is the answer to creating, renewing (keepalive) or reading a lease.
type Lease struct {
	// LeaseID is the lease's secret identifier: whoever knows it can keep the lease alive,
	// release its locks and revoke it, so it is never shown in a lock's status.
	LeaseID string `json:"lease_id"`
	// TTLMs is the lease's time to live in milliseconds.
	TTLMs int64 `json:"ttl_ms"`
	// Locks lists the locks the lease holds (GET only), sorted by name.
	Locks []string `json:"locks,omitempty"`
}

// RevokeResult is the answer to DELETE /v1/leases/{id}.
type RevokeResult struct {
	// LeaseID is the revoked lease.
	LeaseID string `json:"lease_id"`
	// Released lists the locks the lease held, now free or handed to their next waiter.
	Released []string `json:"released"`
}

// AcquireRequest is the body of PUT /v1/locks/{name}. Every field is optional.
type AcquireRequest struct {
	// LeaseID names an existing lease to hold the lock with. Empty means: create a lease
	// with TTLMs in the same log entry as the acquire.
	LeaseID string `json:"lease_id,omitempty"`
	// TTLMs is the TTL of the lease created when LeaseID is empty; zero means DefaultTTLMs.
	// It must be zero when LeaseID is set.
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// WaitMs is how long to wait in the lock's FIFO queue when it is held; zero answers at
	// once with lock_held. At most MaxWaitMs.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Owner is a free-form label shown in the lock's status (a host name, a job id).
	Owner string `json:"owner,omitempty"`
	// RequestID makes an acquire without LeaseID idempotent: every retry carrying the same
	// RequestID acts on the same implicit lease, so a retry after an ambiguous answer
	// returns the first attempt's grant (or joins its queue position) instead of creating a
	// second lease. It is as secret as a lease ID: 16 to 128 characters of [A-Za-z0-9_-],
	// drawn at random per acquire (the Go client sends 32 random hex characters). It must
	// be empty when LeaseID is set.
	RequestID string `json:"request_id,omitempty"`
	// Mode is ModeExclusive (also what "" means) or ModeShared: any number of shared
	// holders may hold the lock together, and no exclusive holder beside them.
	Mode string `json:"mode,omitempty"`
	// MaxHoldMs ends the grant at most this long after it, however long the lease is kept
	// alive; LockDelayMs keeps the lock from everyone this long after the lease expired or
	// was revoked without a release (exclusive only). 0 for none; protocol version 3.
	MaxHoldMs   int64 `json:"max_hold_ms,omitempty"`
	LockDelayMs int64 `json:"lock_delay_ms,omitempty"`
}

// Grant is the answer to a successful acquire.
type Grant struct {
	// Name is the lock's name.
	Name string `json:"name"`
	// Token is the fencing token: the Raft log index of the entry that granted the lock.
	// Pass it to every storage write made under the lock.
	Token uint64 `json:"token"`
	// LeaseID is the lease that holds the lock.
	LeaseID string `json:"lease_id"`
	// TTLMs is that lease's TTL.
	TTLMs int64 `json:"ttl_ms"`
	// Owner is the label given at acquire time.
	Owner string `json:"owner,omitempty"`
	// Mode is the grant's mode: ModeExclusive or ModeShared.
	Mode string `json:"mode,omitempty"`
}

// ReleaseRequest is the body of DELETE /v1/locks/{name}.
type ReleaseRequest struct {
	// LeaseID is the holder's lease.
	LeaseID string `json:"lease_id"`
	// Token is the token of the grant being released; a release with any other token is
	// refused, so a retried release can never free a later grant.
	Token uint64 `json:"token"`
}

// ReleaseResult is the answer to a successful release.
type ReleaseResult struct {
	// Name is the lock's name.
	Name string `json:"name"`
	// Released is always true in a 2xx answer.
	Released bool `json:"released"`
}

// LockStatus is the state of one lock. A free lock with no waiters has Held false, Token
// zero and a ModifyIndex at least the index of the entry that freed it.
type LockStatus struct {
	// Name is the lock's name.
	Name string `json:"name"`
	// Held reports whether a lease holds the lock.
	Held bool `json:"held"`
	// Token is the fencing token of the current grant, zero when free. For a lock held
	// shared it is the newest (highest) token among the holders.
	Token uint64 `json:"token"`
	// Owner is the holder's label; for a lock held shared, the oldest holder's.
	Owner string `json:"owner,omitempty"`
	// Mode is ModeExclusive or ModeShared while the lock is held, empty when free.
	Mode string `json:"mode,omitempty"`
	// Holders are the lock's grants in grant order: one when held exclusive, one or more
	// when held shared, none when free.
	Holders []Holder `json:"holders"`
	// HolderCount is len(Holders).
	HolderCount int `json:"holder_count"`
	// Waiters is the number of leases queued for the lock.
	Waiters int `json:"waiters"`
	// ModifyIndex is the log index of the last change to the lock; it never goes backwards.
	// Pass it as wait_index to block until the next change.
	ModifyIndex uint64 `json:"modify_index"`
	// LockDelayRemainingMs is how long, in cluster time, a lock delay still keeps the lock
	// from every waiter (omitted when none runs); MaxHoldRemainingMs how long the exclusive
	// grant may still last (omitted without a maximum hold). Protocol version 3. Both count
	// from the cluster time of the last applied entry, which lags real time by up to the
	// leader's tick interval (1 s): they may overstate what remains by that much.
	LockDelayRemainingMs int64 `json:"lock_delay_remaining_ms,omitempty"`
	MaxHoldRemainingMs   int64 `json:"max_hold_remaining_ms,omitempty"`
	// Queue is the first waiters in queue order, when the read asked for them with
	// ?queue=N (Waiters counts them all); omitted otherwise.
	Queue []Waiter `json:"queue,omitempty"`
}

// Waiter is one request in the queue of a lock, a semaphore or an election, as a status
// read with ?queue=N and the overview list them: who waits, since when and until when. The
// lease is shown by its fingerprint, never by its ID.
type Waiter struct {
	// Owner is the label given with the request.
	Owner string `json:"owner,omitempty"`
	// LeaseFingerprint is a one-way fingerprint of the waiting lease (hex).
	LeaseFingerprint string `json:"lease_fingerprint"`
	// SinceMs is the cluster time the wait began; absent when unknown (a wait queued
	// while the cluster ran protocol version 1).
	SinceMs *int64 `json:"since_ms,omitempty"`
	// DeadlineMs is the cluster time at which the wait ends without a grant.
	DeadlineMs int64 `json:"deadline_ms"`
	// Mode is the mode asked for (locks only): ModeExclusive or ModeShared.
	Mode string `json:"mode,omitempty"`
	// LockSet marks one lock of a waiting lockset, which is granted all at once or not
	// at all (locks only).
	LockSet bool `json:"lockset,omitempty"`
}

// LockList is the answer to GET /v1/locks?prefix=P: the held or awaited locks whose names
// start with P, sorted by name.
type LockList struct {
	// Locks are the matching locks, at most the request's limit.
	Locks []LockStatus `json:"locks"`
	// Truncated reports that more matching locks follow this page.
	Truncated bool `json:"truncated"`
	// Next, when Truncated, is the cursor to pass as `after` for the next page (the last
	// name of this page).
	Next string `json:"next,omitempty"`
}

// Node describes one member of the cluster.
type Node struct {
	// ID is the node's Raft server ID.
	ID string `json:"id"`
	// RaftAddr is the address of the node's Raft transport.
	RaftAddr string `json:"raft_addr"`
	// HTTPAddr is the address of the node's HTTP API (host:port), empty until the node has
	// registered it.
	HTTPAddr string `json:"http_addr"`
	// Voter reports whether the node votes in elections.
	Voter bool `json:"voter"`
	// Leader reports whether the node is the current leader.
	Leader bool `json:"leader"`
}

// Cluster is the answer to GET /v1/cluster, as seen by the node that answers.
type Cluster struct {
	// LeaderID is the current leader's ID, empty during an election.
	LeaderID string `json:"leader_id"`
	// Term is the answering node's current Raft term.
	Term uint64 `json:"term"`
	// CommitIndex is the answering node's commit index.
	CommitIndex uint64 `json:"commit_index"`
	// AppliedIndex is the index of the last entry the answering node has applied.
	AppliedIndex uint64 `json:"applied_index"`
	// Nodes are the members of the Raft configuration, sorted by ID.
	Nodes []Node `json:"nodes"`
	// Ready is what GET /readyz answers: a write sent to this node now would be served
	// (Serving "leader") or forwarded to a leader whose HTTP address it knows (Serving
	// "forward").
	Ready bool `json:"ready"`
	// Serving says how this node would handle a write now: "leader", "forward", or "" when
	// it can do neither (no leader known, the leader's HTTP address unknown, catching up).
	Serving string `json:"serving"`
	// ProtocolVersion is the cluster's active protocol version as this node has applied it;
	// the leader raises it once every member speaks the newer one.
	ProtocolVersion uint64 `json:"protocol_version"`
	// Limits are the quotas in force (zero: unlimited); none are in force before protocol
	// version 2.
	Limits Limits `json:"limits"`
}

// Limits are the cluster's quotas, as GET /v1/cluster reports them. Zero means unlimited.
type Limits struct {
	// MaxLeases bounds the live leases of the whole cluster.
	MaxLeases uint64 `json:"max_leases"`
	// MaxLocksPerLease bounds the locks one lease holds or waits for.
	MaxLocksPerLease uint64 `json:"max_locks_per_lease"`
	// MaxWaitersPerLock bounds the leases queued for one lock.
	MaxWaitersPerLock uint64 `json:"max_waiters_per_lock"`
	// MaxLocks and MaxWaiters bound the grants held and the waits in the whole cluster,
	// and PerIdentity is the default quotas of an identity (protocol version 5; absent
	// before).
	MaxLocks    uint64  `json:"max_locks,omitempty"`
	MaxWaiters  uint64  `json:"max_waiters,omitempty"`
	PerIdentity *Quotas `json:"per_identity,omitempty"`
}

// LimitsOf is the API's form of a state's limits.
func LimitsOf(maxLeases, maxLocksPerLease, maxWaitersPerLock, maxLocks, maxWaiters uint64, perIdentity Quotas) Limits {
	l := Limits{MaxLeases: maxLeases, MaxLocksPerLease: maxLocksPerLease, MaxWaitersPerLock: maxWaitersPerLock, MaxLocks: maxLocks, MaxWaiters: maxWaiters}
	if perIdentity != (Quotas{}) {
		l.PerIdentity = &perIdentity
	}
	return l
}

// AddNodeRequest is the body of POST /v1/cluster/nodes: add a voter, or re-register a
// member's HTTP address.
type AddNodeRequest struct {
	// ID is the new node's Raft server ID (1-64 characters of [A-Za-z0-9._-]).
	ID string `json:"id"`
	// RaftAddr is where its Raft transport listens (host:port).
	RaftAddr string `json:"raft_addr"`
	// HTTPAddr is where its HTTP API listens (host:port).
	HTTPAddr string `json:"http_addr"`
	// Replace allows re-pointing an existing member ID at a new Raft address (a node
	// rebuilt on another host). Without it such a request is refused with 409 conflict,
	// so that nobody can silently take over a member's replication stream.
	Replace bool `json:"replace,omitempty"`
	// Registration marks a node re-registering its own HTTP address (its registration
	// loop): it never adds a member, so a node removed while its registration was on its
	// way does not put itself back. Such a request for an ID that is not a member answers
	// 404 not_found.
	Registration bool `json:"registration,omitempty"`
}

// TransferLeaderRequest is the body of POST /v1/cluster/transfer-leader.
type TransferLeaderRequest struct {
	// To is the voter to hand leadership to; empty lets raft pick the most up-to-date one.
	To string `json:"to,omitempty"`
}

// NodeVersionRequest is the body of PUT /v1/cluster/nodes/{id}/version: the highest
// protocol version that member speaks. Nodes send it themselves; the leader raises the
// cluster's protocol version only when every member has registered one at least as high.
type NodeVersionRequest struct {
	// MaxVersion is the highest protocol version the node speaks (1 or more).
	MaxVersion uint64 `json:"max_version"`
}

// ErrorBody is the payload of every non-2xx answer.
type ErrorBody struct {
	// Error carries the code and a human sentence.
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a machine-matchable code with a human message.
type ErrorDetail struct {
	// Code is one of the Code* constants.
	Code string `json:"code"`
	// Message says what happened and, where it helps, what to do next.
	Message string `json:"message"`
}

// KeepAliveRequest is the body of POST /v1/leases/keepalive. It names either one lease
// (LeaseID; the answer is a Lease) or many (LeaseIDs; the answer is a KeepAliveBatch),
// never both. Every lease of a batch is renewed by the same log entry, and the answer
// comes once that entry is applied: one request keeps thousands of leases alive.
type KeepAliveRequest struct {
	// LeaseID is the one lease to renew.
	LeaseID string `json:"lease_id,omitempty"`
	// LeaseIDs are the leases to renew, 1 to MaxKeepAliveBatch of them. A lease listed
	// twice is renewed and answered once.
	LeaseIDs []string `json:"lease_ids,omitempty"`
}

// KeepAliveBatch is the answer to a keepalive with lease_ids. Leases that no longer exist
// are listed in NotFound rather than failing the request: the others are renewed.
type KeepAliveBatch struct {
	// Leases are the renewed leases with their TTLs, in request order.
	Leases []Lease `json:"leases"`
	// NotFound lists the leases that do not exist (never did, expired, or were revoked),
	// in request order. A client treats each of them as lost.
	NotFound []string `json:"not_found"`
}
