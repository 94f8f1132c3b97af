package cluster

import (
	"errors"
	"strconv"
)

// Errors returned by Node. Transport maps each to an HTTP status.
var (
	// ErrNotLeader: this node is not a ready leader; send the request to the leader.
	ErrNotLeader = errors.New("cluster: not the leader")
	// ErrNoLeader: no leader is known (an election is running); retry shortly.
	ErrNoLeader = errors.New("cluster: no leader")
	// ErrUnknownOutcome: leadership was lost after the command was proposed, so it may or
	// may not have been applied. Every lock operation is safe to retry.
	ErrUnknownOutcome = errors.New("cluster: leadership lost while the command was in flight; outcome unknown, retry")
	// ErrLeaseNotFound: the lease does not exist (never did, expired, or was revoked).
	ErrLeaseNotFound = errors.New("cluster: lease not found")
	// ErrLockHeld: the lock is held by another lease and the request did not wait.
	ErrLockHeld = errors.New("cluster: lock held")
	// ErrWaitTimeout: the wait ended before the lock was granted; the lease has left the
	// lock's queue.
	ErrWaitTimeout = errors.New("cluster: wait timed out")
	// ErrNotHolder: the lease and token given do not hold the lock.
	ErrNotHolder = errors.New("cluster: not the holder")
	// ErrShutdown: the node is shutting down.
	ErrShutdown = errors.New("cluster: node shut down")
	// ErrInvalidCommand: the state machine refused a command as malformed.
	ErrInvalidCommand = errors.New("cluster: invalid command")
	// ErrHalted: this node's state machine halted on a command it does not know (see
	// Node.Halted); it serves nothing until it is upgraded.
	ErrHalted = errors.New("cluster: state machine halted; upgrade this node")
)

// ErrQuotaExceeded: applying the command would exceed a configured limit of the replicated
// state; nothing was applied. The error is a *QuotaError naming the limit.
var ErrQuotaExceeded = errors.New("cluster: quota exceeded")

// QuotaError says which limit a refused command would have exceeded.
type QuotaError struct {
	// Limit names the limit ("max_leases", "max_locks_per_lease", "max_waiters_per_lock").
	Limit string
	// Value is the limit's configured value.
	Value uint64
}

func (e *QuotaError) Error() string {
	return "cluster: quota exceeded: " + e.Limit + " is " + strconv.FormatUint(e.Value, 10)
}

// Is makes errors.Is(err, ErrQuotaExceeded) match.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// ErrNotMember: the request names a node that is not in the Raft configuration.
var ErrNotMember = errors.New("cluster: not a member of the cluster")

// ErrInvalidMember: a membership request names an ID or address that is not valid.
var ErrInvalidMember = errors.New("cluster: invalid member")

// ErrMemberConflict: a membership request would re-point an existing member without
// asking to replace it.
var ErrMemberConflict = errors.New("cluster: member exists at another address")
