package api

// Locksets, maximum holds and lock delays (protocol version 3).

// Error codes of protocol version 3.
const (
	// CodeDeadlock (409): a waiting acquire would have closed a cycle of waiting leases;
	// nothing was queued. The message names the cycle's locks and lease fingerprints.
	CodeDeadlock = "deadlock"
	// CodeVersionInactive (409): the request uses a field or route of a protocol version
	// the cluster has not activated yet (a member runs an older release); nothing applied.
	CodeVersionInactive = "version_inactive"
)

// Limits of protocol version 3.
const (
	// MaxLockSetNames is the most locks one lockset may name.
	MaxLockSetNames = 64
	// MaxHoldMs bounds max_hold_ms and lock_delay_ms: 24 hours.
	MaxHoldMs = 24 * 60 * 60 * 1000
)

// LockSetRequest is the body of POST /v1/locksets: every lock of Names granted in one
// commit, or none.
type LockSetRequest struct {
	// Names are the locks, 1 to MaxLockSetNames (duplicates count once).
	Names []string `json:"names"`
	// LeaseID, TTLMs, WaitMs, Owner, RequestID and Mode are as for an acquire.
	LeaseID   string `json:"lease_id,omitempty"`
	TTLMs     int64  `json:"ttl_ms,omitempty"`
	WaitMs    int64  `json:"wait_ms,omitempty"`
	Owner     string `json:"owner,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Mode      string `json:"mode,omitempty"`
	// MaxHoldMs and LockDelayMs are as for an acquire, for every lock of the set.
	MaxHoldMs   int64 `json:"max_hold_ms,omitempty"`
	LockDelayMs int64 `json:"lock_delay_ms,omitempty"`
}

// LockToken is one lock of a set and its fencing token.
type LockToken struct {
	Name  string `json:"name"`
	Token uint64 `json:"token"`
}

// LockSetGrant is the answer to a granted lockset: the locks in name order, each with its
// token (the index of the entry that granted it: the same for all that one entry granted).
type LockSetGrant struct {
	LeaseID string      `json:"lease_id"`
	TTLMs   int64       `json:"ttl_ms"`
	Owner   string      `json:"owner,omitempty"`
	Mode    string      `json:"mode"`
	Locks   []LockToken `json:"locks"`
}

// LockSetRelease is the body of DELETE /v1/locksets: every lock given back in one commit,
// or none.
type LockSetRelease struct {
	LeaseID string      `json:"lease_id"`
	Locks   []LockToken `json:"locks"`
}

// LockSetReleased is the answer to DELETE /v1/locksets.
type LockSetReleased struct {
	Released []string `json:"released"`
}

// ValidateHoldOptions checks max_hold_ms and lock_delay_ms: 0 (none) to MaxHoldMs, and no
// lock delay in shared mode.
func ValidateHoldOptions(maxHoldMs, lockDelayMs int64, shared bool) *Error {
	switch {
	case maxHoldMs < 0 || maxHoldMs > MaxHoldMs:
		return Errorf(CodeInvalidArgument, "max_hold_ms is %d; it must be between 0 (none) and %d", maxHoldMs, MaxHoldMs)
	case lockDelayMs < 0 || lockDelayMs > MaxHoldMs:
		return Errorf(CodeInvalidArgument, "lock_delay_ms is %d; it must be between 0 (none) and %d", lockDelayMs, MaxHoldMs)
	case lockDelayMs > 0 && shared:
		return Errorf(CodeInvalidArgument, "lock_delay_ms applies to exclusive locks only")
	}
	return nil
}
