package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
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
	// ErrTokenRevoked: the caller's ACL token was deleted after the request was
	// authorized; the state machine refused the command, and the token's leases were
	// revoked with it (protocol version 4).
	ErrTokenRevoked = errors.New("cluster: the caller's ACL token was revoked")
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

// raftError maps an error of a raft future to the node's errors. It is the one place that
// reads raft's errors; each mapping says what the caller may conclude:
//
//   - raft.ErrNotLeader: raft refused the request on a non-leader before taking it:
//     ErrNotLeader when another node is known to lead, ErrNoLeader otherwise.
//   - raft.ErrEnqueueTimeout, raft.ErrLeadershipTransferInProgress: refused before it was
//     appended, so certainly not applied: ErrNoLeader.
//   - raft.ErrLeadershipLost, raft.ErrRaftShutdown: appended perhaps, and perhaps
//     replicated, so a later leader may commit it: ErrUnknownOutcome.
//
// Any other error is left as it is, unless proposed says that raft had taken a command
// (raft.Apply): then nothing tells whether it was appended, and the answer is
// ErrUnknownOutcome too.
func raftError(r *raft.Raft, err error, proposed bool) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return notLeader(r)
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNoLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown), proposed:
		return fmt.Errorf("%w (%v)", ErrUnknownOutcome, err)
	}
	return err
}

// notLeader is the answer of a node that does not lead: ErrNotLeader when another node
// is known to lead, ErrNoLeader otherwise.
func notLeader(r *raft.Raft) error {
	if addr, _ := r.LeaderWithID(); addr == "" {
		return ErrNoLeader
	}
	return ErrNotLeader
}

// afterProposal maps an error met once a command may already have been proposed. Errors
// that mean "nothing was applied" before a proposal (not the leader, no leader, shutting
// down, the caller gone) no longer do: the command may be committed by this or a later
// leader, so the answer is ErrUnknownOutcome and the request is never forwarded again.
func afterProposal(err error) error {
	if err == nil || errors.Is(err, ErrUnknownOutcome) {
		return err
	}
	if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrShutdown) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%v)", ErrUnknownOutcome, err)
	}
	return err
}

// Errors of the primitives. Transport maps each to a 409 (ErrPrimsInactive to 503).
var (
	// ErrModeConflict: the lease holds or waits for the lock in the other mode.
	ErrModeConflict = errors.New("cluster: the lease holds or waits for the lock in the other mode")
	// ErrSemaphoreFull: every permit is held and the request did not wait.
	ErrSemaphoreFull = errors.New("cluster: semaphore full")
	// ErrLimitConflict: the semaphore is in use with another limit. The error is a
	// *LimitConflictError giving the limit in force.
	ErrLimitConflict = errors.New("cluster: semaphore in use with another limit")
	// ErrElectionHeld: another lease leads the election and the request did not wait.
	ErrElectionHeld = errors.New("cluster: another lease leads the election")
	// ErrPrimsInactive: the cluster's active protocol version predates the primitive (a
	// member runs an older release); nothing was proposed.
	ErrPrimsInactive = errors.New("cluster: shared locks, semaphores and elections need protocol version 2 on every member")
)

// InactiveError is the ErrPrimsInactive of one request: the protocol version the command
// needs and the members that have not registered it (they run an older release, or have
// not reported their version yet).
type InactiveError struct {
	Need    uint64
	Lagging []string
}

func (e *InactiveError) Error() string {
	return fmt.Sprintf("cluster: protocol version %d is not active; members that have not registered it: %s", e.Need, strings.Join(e.Lagging, ", "))
}

// Is makes errors.Is(err, ErrPrimsInactive) hold.
func (e *InactiveError) Is(target error) bool { return target == ErrPrimsInactive }

// LimitConflictError is the ErrLimitConflict of one request.
type LimitConflictError struct {
	// Limit is the semaphore's limit in force.
	Limit uint64
}

func (e *LimitConflictError) Error() string {
	return "cluster: semaphore in use with limit " + strconv.FormatUint(e.Limit, 10)
}

// Is makes errors.Is(err, ErrLimitConflict) hold.
func (e *LimitConflictError) Is(target error) bool { return target == ErrLimitConflict }
