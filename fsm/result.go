package fsm

// Status is the outcome of applying one command.
type Status uint8

// Outcomes. The zero value is StatusOK.
const (
	// StatusOK: the command took effect (for Acquire: the lease holds the lock).
	StatusOK Status = iota
	// StatusQueued: an Acquire with a wait found the lock held and queued the lease.
	StatusQueued
	// StatusLockHeld: an Acquire without a wait found the lock held by another lease.
	StatusLockHeld
	// StatusLeaseNotFound: the command named a lease that does not exist (never did,
	// expired, or was revoked).
	StatusLeaseNotFound
	// StatusNotHolder: a Release named a lease or token that does not hold the lock, or a
	// Dequeue found the lease not holding it (it has left the queue either way).
	StatusNotHolder
	// StatusInvalid: the entry could not be decoded or breaks a rule the encoder never
	// breaks; nothing changed.
	StatusInvalid
	// StatusSkipped: a skippable command of an unknown type; only time advanced.
	StatusSkipped
	// StatusHalted: the state machine has halted (see FSM.Halted) at this entry or before
	// it; nothing changed, and nothing will until the node is upgraded.
	StatusHalted
	// StatusQuotaExceeded: the command would break the limit that Result.Quota names;
	// nothing but time changed.
	StatusQuotaExceeded
	// StatusConflict: an ACL command collides with the state (a second bootstrap, a
	// secret another token has, the built-in policy); nothing but time changed.
	StatusConflict
	// StatusNotFound: an ACL command names a policy or token that does not exist;
	// nothing but time changed.
	StatusNotFound
	// StatusModeConflict: the lease holds or waits for the lock in the other mode; nothing
	// but time changed.
	StatusModeConflict
	// 12 and 13 are the semaphore's statuses (semaphores.go), 14 the election's
	// (elections.go): a primitive declares its own beside it and names them in its row
	// (primitives.go), at the values they have always had.
	_
	_
	_
	// StatusDeadlock: a waiting request for a lock or a lockset would close a cycle of
	// waiting leases (Result.Cycle); nothing was queued (version 3).
	StatusDeadlock
	// StatusUnauthenticated: the command's caller (Command.Creator, or a Renew's caller)
	// is no longer an ACL token: it was deleted after the request was authorized, and
	// with it every lease it created (version 4, owner.go); nothing but time changed.
	StatusUnauthenticated
)

// String names the status for logs and tests: a primitive's own statuses by its row.
func (s Status) String() string {
	if name := s.coreName(); name != "" {
		return name
	}
	for _, p := range primitives {
		for _, st := range p.statuses {
			if st.status == s {
				return st.name
			}
		}
	}
	return "status(?)"
}

// coreName names a status that no primitive's row declares; "" for any other.
func (s Status) coreName() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusQueued:
		return "queued"
	case StatusLockHeld:
		return "lock_held"
	case StatusLeaseNotFound:
		return "lease_not_found"
	case StatusNotHolder:
		return "not_holder"
	case StatusInvalid:
		return "invalid"
	case StatusSkipped:
		return "skipped"
	case StatusHalted:
		return "halted"
	case StatusQuotaExceeded:
		return "quota_exceeded"
	case StatusConflict:
		return "conflict"
	case StatusNotFound:
		return "not_found"
	case StatusModeConflict:
		return "mode_conflict"
	case StatusDeadlock:
		return "deadlock"
	case StatusUnauthenticated:
		return "unauthenticated"
	}
	return ""
}

// Result is what Apply returns for one entry, through raft's ApplyFuture.Response.
type Result struct {
	// Status is the outcome.
	Status Status
	// Index is the log index of the entry.
	Index uint64
	// Token is the grant's fencing token (Acquire, Dequeue of a holder), which is the index
	// of the entry that granted the lock: Index itself when this entry granted it.
	Token uint64
	// TTL is the lease's TTL (CreateLease, Acquire).
	TTL int64
	// Owner is the grant's owner label (Acquire).
	Owner string
	// Released lists the locks a Revoke freed or handed over, sorted.
	Released []string
	// Renewed reports, per lease of a Renew in order, whether it still existed.
	Renewed []bool
	// RenewedTTL gives, per lease of a Renew in order, its TTL (zero when it did not exist).
	RenewedTTL []int64
	// Err explains StatusInvalid, StatusHalted, StatusConflict and StatusNotFound.
	Err error
	// Quota names the limit a StatusQuotaExceeded hit: QuotaLeases, QuotaLocksPerLease,
	// QuotaWaitersPerLock, or one of version 5 (quotas.go). QuotaUsed is the use the
	// command would have added to (the identity's, the lease's, the lock's or the
	// cluster's, as the quota counts), QuotaLimit the limit, and QuotaIdentity the
	// identity whose quota it is (empty for the others).
	Quota         string
	QuotaUsed     uint64
	QuotaLimit    uint64
	QuotaIdentity string
	// Limit is the semaphore's number of permits (SemAcquire: granted, queued, full or in
	// conflict).
	Limit uint64
	// Value is the election's published value, and Modify its modify index (Campaign that
	// leads, ElectionDequeue of the leader).
	Value  string
	Modify uint64
	// Held lists the locks of a LockSet that were not free for it (StatusLockHeld), or of
	// a LockSetRelease that the lease does not hold with those tokens (StatusNotHolder).
	Held []string
	// Tokens are a granted LockSet's tokens, one per name in order.
	Tokens []uint64
	// Cycle is the wait-for cycle a StatusDeadlock would have closed, starting with the
	// requester.
	Cycle []CycleStep
}
