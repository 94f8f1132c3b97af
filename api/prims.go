package api

// The coordination primitives beside the exclusive lock: shared (read/write)
// locks, counting semaphores and leader elections. Each grant carries a fencing token, the
// Raft log index of the entry that granted it, exactly like a lock's.

// Lock modes, the values of AcquireRequest.Mode.
const (
	// ModeExclusive: one holder at a time (the default, what an absent mode means).
	ModeExclusive = "exclusive"
	// ModeShared: any number of shared holders at once, and no exclusive holder.
	ModeShared = "shared"
)

// Limits of the primitives.
const (
	// MaxSemaphoreLimit is the largest permit count a semaphore may have.
	MaxSemaphoreLimit = 10_000
	// MaxElectionValueLen is the longest value a leader may publish, in bytes.
	MaxElectionValueLen = 4096
)

// Holder is one grant of a shared lock or one permit of a semaphore, as status reads
// show it: the lease ID is a secret and is never shown.
type Holder struct {
	// Owner is the label given when the grant was asked for.
	Owner string `json:"owner,omitempty"`
	// Token is the grant's fencing token.
	Token uint64 `json:"token"`
	// LeaseFingerprint is a one-way fingerprint of the holding lease (hex), never its ID.
	LeaseFingerprint string `json:"lease_fingerprint,omitempty"`
	// LockSet, for a lock's grant made by a lockset (protocol version 7), names the locks
	// the lockset's lease still holds with that one grant (this one among them), in name
	// order: one commit, one token, one mode. Locks the caller may not read are left out
	// and counted in LockSetHidden. Absent for a grant made alone.
	LockSet       []string `json:"lockset,omitempty"`
	LockSetHidden int      `json:"lockset_hidden,omitempty"`
}

// SemaphoreAcquireRequest is the body of PUT /v1/semaphores/{name}: take one permit.
type SemaphoreAcquireRequest struct {
	// Limit is the number of permits, 1 to MaxSemaphoreLimit, and is required. The first
	// acquirer of a semaphore not in use sets it; asking with another limit while the
	// semaphore is in use is refused with limit_conflict.
	Limit int64 `json:"limit"`
	// LeaseID names an existing lease to hold the permit with; empty creates one with
	// TTLMs in the same commit, as PUT /v1/locks does.
	LeaseID string `json:"lease_id,omitempty"`
	// TTLMs is the TTL of the lease created when LeaseID is empty; zero means DefaultTTLMs.
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// WaitMs is how long to wait in the semaphore's FIFO queue when no permit is free;
	// zero answers at once with semaphore_full. At most MaxWaitMs.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// MaxHoldMs ends the permit at most this long after it, even while the lease is kept
	// alive (protocol version 3); 0 for none.
	MaxHoldMs int64 `json:"max_hold_ms,omitempty"`
	// Owner is a label shown in the semaphore's status.
	Owner string `json:"owner,omitempty"`
	// RequestID makes a request without LeaseID idempotent, as for locks.
	RequestID string `json:"request_id,omitempty"`
}

// SemaphoreGrant is the answer to a successful PUT /v1/semaphores/{name}: one permit.
type SemaphoreGrant struct {
	// Name is the semaphore's name.
	Name string `json:"name"`
	// Token is the permit's fencing token.
	Token uint64 `json:"token"`
	// LeaseID is the lease that holds the permit.
	LeaseID string `json:"lease_id"`
	// TTLMs is that lease's TTL.
	TTLMs int64 `json:"ttl_ms"`
	// Owner is the label given with the request.
	Owner string `json:"owner,omitempty"`
	// Limit is the semaphore's permit count.
	Limit int64 `json:"limit"`
}

// SemaphoreStatus is the answer to GET /v1/semaphores/{name}. A semaphore not in use (no
// permit held, nobody waiting) has Limit 0, no permits and no waiters: it takes no state,
// and its next acquirer sets a new limit.
type SemaphoreStatus struct {
	// Name is the semaphore's name.
	Name string `json:"name"`
	// Limit is the permit count, 0 when the semaphore is not in use.
	Limit int64 `json:"limit"`
	// Permits are the permits held, in grant order.
	Permits []Holder `json:"permits"`
	// Waiters is the number of leases queued for a permit.
	Waiters int `json:"waiters"`
	// ModifyIndex is the log index of the last change; it never goes backwards. Pass it as
	// wait_index to block until the next change.
	ModifyIndex uint64 `json:"modify_index"`
	// Queue is the first waiters in queue order, when the read asked for them with
	// ?queue=N; omitted otherwise.
	Queue []Waiter `json:"queue,omitempty"`
}

// CampaignRequest is the body of PUT /v1/elections/{name}: campaign for leadership, or,
// from the current leader's lease, proclaim a new value.
type CampaignRequest struct {
	// Value is what the leader publishes (at most MaxElectionValueLen bytes): an address, a
	// shard map. A candidate's value is published when it is elected.
	Value string `json:"value"`
	// LeaseID names an existing lease to campaign with; empty creates one with TTLMs in the
	// same commit.
	LeaseID string `json:"lease_id,omitempty"`
	// TTLMs is the TTL of the lease created when LeaseID is empty; zero means DefaultTTLMs.
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// WaitMs is how long to wait as a candidate in the election's FIFO queue when another
	// lease leads; zero answers at once with election_held. At most MaxWaitMs.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Owner is a label shown in the election's status.
	Owner string `json:"owner,omitempty"`
	// RequestID makes a request without LeaseID idempotent, as for locks.
	RequestID string `json:"request_id,omitempty"`
	// Token, when set, makes the request a proclaim only: it succeeds only if LeaseID leads
	// with this token (else not_holder), and never campaigns or queues. Requires LeaseID.
	Token uint64 `json:"token,omitempty"`
}

// ElectionGrant is the answer to a successful PUT /v1/elections/{name}: the lease leads.
type ElectionGrant struct {
	// Name is the election's name.
	Name string `json:"name"`
	// Token is the leadership's fencing token: the index of the entry that elected this
	// lease. A proclaim keeps it.
	Token uint64 `json:"token"`
	// LeaseID is the leader's lease.
	LeaseID string `json:"lease_id"`
	// TTLMs is that lease's TTL.
	TTLMs int64 `json:"ttl_ms"`
	// Owner is the leader's label.
	Owner string `json:"owner,omitempty"`
	// Value is the published value.
	Value string `json:"value"`
	// ModifyIndex is the election's modify index after this request.
	ModifyIndex uint64 `json:"modify_index"`
}

// ElectionStatus is the answer to GET /v1/elections/{name}: who leads and what it
// published. Every change of leader or value moves ModifyIndex, so a blocking query
// (wait_index) observes each one.
type ElectionStatus struct {
	// Name is the election's name.
	Name string `json:"name"`
	// Elected reports whether a lease leads.
	Elected bool `json:"elected"`
	// Owner is the leader's label.
	Owner string `json:"owner,omitempty"`
	// Value is the leader's published value.
	Value string `json:"value"`
	// Token is the leadership's fencing token, zero when nobody leads.
	Token uint64 `json:"token"`
	// ModifyIndex is the log index of the last change; it never goes backwards.
	ModifyIndex uint64 `json:"modify_index"`
	// Candidates is the number of leases queued to lead next.
	Candidates int `json:"candidates"`
	// LeaseFingerprint is a one-way fingerprint of the leader's lease (hex), never its
	// ID; absent when nobody leads.
	LeaseFingerprint string `json:"lease_fingerprint,omitempty"`
	// Queue is the first candidates in queue order, when the read asked for them with
	// ?queue=N; omitted otherwise.
	Queue []Waiter `json:"queue,omitempty"`
}
