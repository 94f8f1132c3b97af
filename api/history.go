package api

// HistoryEvent is one event of a lock's history (GET /v1/history/{name}) or of the event
// stream (GET /v1/events). Times are cluster time: milliseconds on the cluster's own
// clock, which starts at 0 when the cluster is created and only moves while it has a
// leader; they are comparable with each other, not with wall clocks.
type HistoryEvent struct {
	// Name is the lock's name (set in the event stream, omitted in a history).
	Name string `json:"name,omitempty"`
	// Primitive is PrimitiveSemaphore or PrimitiveElection for the events of a semaphore
	// or an election (streamed to a consumer that asks for them with ?kinds=), omitted
	// for a lock's.
	Primitive string `json:"primitive,omitempty"`
	// Kind is, for a lock: granted, released, expired, revoked, wait_abandoned,
	// wait_timed_out, wait_lease_ended, deadlock_refused, max_hold_ended, lock_delay or
	// lock_delay_ended; for a semaphore: permit_granted, permit_released, permit_expired,
	// permit_revoked, permit_max_hold_ended, permit_wait_abandoned, permit_wait_timed_out
	// or permit_wait_lease_ended; for an election: elected, resigned, leader_expired,
	// leader_revoked, proclaimed, candidate_abandoned, candidate_timed_out or
	// candidate_lease_ended. A handover is the end of one grant and a grant at the same
	// index.
	Kind string `json:"kind"`
	// Index is the log index of the entry; TimeMs is the cluster time it was applied at.
	Index  uint64 `json:"index"`
	TimeMs int64  `json:"time_ms"`
	// Token is the grant concerned: the new one (granted) or the one that ended.
	Token uint64 `json:"token,omitempty"`
	// Owner is the owner label of the grantee, holder or waiter.
	Owner string `json:"owner,omitempty"`
	// Lease is a short one-way fingerprint of the lease (hex): never the lease ID.
	Lease string `json:"lease_fingerprint,omitempty"`
	// FromQueue marks a grant to a waiter; WaitedMs is then its time in the queue (also
	// set on wait events), 0 when unknown.
	FromQueue bool  `json:"from_queue,omitempty"`
	WaitedMs  int64 `json:"waited_ms,omitempty"`
	// DeadlineMs is the lease's deadline (expired) or the wait's (wait_timed_out).
	DeadlineMs int64 `json:"deadline_ms,omitempty"`
	// RenewedMs is the expired lease's last renewal (creation or keepalive).
	RenewedMs int64 `json:"renewed_ms,omitempty"`
	// Detail describes a refused request's wait-for cycle (deadlock_refused), by lock names
	// and lease fingerprints.
	Detail string `json:"detail,omitempty"`
}

// History is the answer to GET /v1/history/{name}: the lock's newest events, oldest
// first (at most the server's HistoryLen; empty for a lock with no recorded history).
type History struct {
	Name   string         `json:"name"`
	Events []HistoryEvent `json:"events"`
	// ClusterTimeMs is the cluster time of the state read, to tell how long ago events
	// were and how long the current holder has held the lock.
	ClusterTimeMs int64 `json:"cluster_time_ms"`
}

// The primitives, as HistoryEvent.Primitive and the event stream's ?kinds= name them.
const (
	PrimitiveLock      = "lock"
	PrimitiveSemaphore = "semaphore"
	PrimitiveElection  = "election"
)

// EventEntry is one message of the event stream: the lock events of one applied entry.
// Its SSE id is Index; a client resumes after it with the Last-Event-ID header.
type EventEntry struct {
	Index  uint64         `json:"index"`
	Events []HistoryEvent `json:"events"`
}
