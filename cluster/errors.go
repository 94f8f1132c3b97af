package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
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

// QuotaError says which limit a refused command would have exceeded, and how far.
type QuotaError struct {
	// Limit names the limit ("max_leases", "max_locks_per_lease", "max_waiters_per_lock",
	// and from protocol version 5 "max_locks", "max_waiters" and the per-identity
	// "max_leases_per_identity", "max_locks_per_identity", "max_waiters_per_identity").
	Limit string
	// Value is the limit's value.
	Value uint64
	// Used is what the limit counts now: the cluster's, the lease's, the lock's or the
	// identity's use.
	Used uint64
	// Identity is the ACL accessor whose quota it is ("anonymous" for callers without a
	// token); empty for the other limits.
	Identity string
}

func (e *QuotaError) Error() string { return "cluster: quota exceeded: " + e.Message() }

// Message says what the limit is and how far the use is, without the package prefix, for
// an API answer.
func (e *QuotaError) Message() string {
	m := e.Limit + " is " + strconv.FormatUint(e.Value, 10)
	switch {
	case e.Identity != "":
		m += " and identity " + strconv.Quote(e.Identity) + " has " + strconv.FormatUint(e.Used, 10)
	case e.Used != 0:
		m += " and " + strconv.FormatUint(e.Used, 10) + " are in use"
	}
	return m
}

// Is makes errors.Is(err, ErrQuotaExceeded) match.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// ErrNotMember: the request names a node that is not in the Raft configuration.
var ErrNotMember = errors.New("cluster: not a member of the cluster")

// ErrTransferFailed: a leadership transfer did not happen (the target could not be
// reached, or refused because it cannot write its data directory); leadership stays
// where it was.
var ErrTransferFailed = errors.New("cluster: the leadership transfer failed")

// ErrInvalidMember: a membership request names an ID or address that is not valid.
var ErrInvalidMember = errors.New("cluster: invalid member")

// ErrMemberConflict: a membership request would re-point an existing member without
// asking to replace it.
var ErrMemberConflict = errors.New("cluster: member exists at another address")

// Errors of locksets, maximum holds and lock delays (protocol version 3).
var (
	// ErrDeadlock: a waiting request would have closed a cycle of waiting leases; nothing
	// was queued. The error is a *DeadlockError naming the cycle.
	ErrDeadlock = errors.New("cluster: deadlock")
	// ErrV3Inactive: the cluster has not activated protocol version 3, which locksets,
	// maximum holds and lock delays need; nothing was proposed. The error is an
	// *InactiveError too.
	ErrV3Inactive = errors.New("cluster: locksets, max_hold_ms and lock_delay_ms need protocol version 3 on every member")
)

// DeadlockError is the ErrDeadlock of one request: the cycle its wait would have closed,
// by lease fingerprints (never IDs) and lock names, starting with the requester, and
// that cycle described in words, so that its callers need not ask the state machine to
// write it.
type DeadlockError struct {
	Cycle []CycleStep
	// Described is the cycle as the state machine writes it: "lease F waits for lock N
	// (held or asked for ahead of it by lease F), which waits for lock N (...)".
	Described string
}

// deadlockError is the DeadlockError of cycle.
func deadlockError(cycle []CycleStep) *DeadlockError {
	return &DeadlockError{Cycle: cycle, Described: fsm.DescribeCycle(cycle)}
}

func (e *DeadlockError) Error() string { return "cluster: deadlock: " + e.Described }

// Is makes errors.Is(err, ErrDeadlock) hold.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock }

// NamesError is an ErrLockHeld or ErrNotHolder of a lockset: the locks concerned.
type NamesError struct {
	Err   error // ErrLockHeld or ErrNotHolder
	Names []string
}

func (e *NamesError) Error() string { return fmt.Sprintf("%v: %s", e.Err, strings.Join(e.Names, ", ")) }

// Unwrap gives the error it names locks for.
func (e *NamesError) Unwrap() error { return e.Err }

// v3Inactive marks an InactiveError of a version 3 command as ErrV3Inactive.
func v3Inactive(err error) error {
	var ie *InactiveError
	if errors.As(err, &ie) {
		return errors.Join(ErrV3Inactive, err)
	}
	return err
}

// ACL errors. Transport maps them to 409, 404 and 400.
var (
	// ErrACLConflict: the ACL request collides with the state (a second bootstrap, the
	// built-in policy, a secret already in use).
	ErrACLConflict = errors.New("cluster: ACL conflict")
	// ErrACLNotFound: the policy or token named does not exist.
	ErrACLNotFound = errors.New("cluster: ACL policy or token not found")
	// ErrACLInvalid: the ACL request breaks a rule of names, sizes or rights.
	ErrACLInvalid = errors.New("cluster: invalid ACL request")
	// ErrACLInactive: the cluster does not speak the protocol version that ACLs need yet
	// (a member runs an older release).
	ErrACLInactive = errors.New("cluster: ACLs need protocol version 2 on every member")
	// ErrQuotasInactive: a policy or token with quotas was asked for before the cluster
	// activated protocol version 5, which quotas need; nothing was proposed.
	ErrQuotasInactive = errors.New("cluster: quotas need protocol version 5 on every member")
)

// Event stream errors.
var (
	// ErrIndexCompacted: the stream cannot start at the index asked for, because this
	// node no longer holds (or never held) every event after it. The error is an
	// *IndexCompactedError giving the oldest index that can be asked for.
	ErrIndexCompacted = errors.New("cluster: events before this index are no longer retained")
	// ErrTooManySubscribers: the node serves its maximum number of event subscribers.
	ErrTooManySubscribers = errors.New("cluster: too many event subscribers")
	// ErrSubscriberLagging: the subscriber read too slowly and more than the backlog
	// piled up for it; it was dropped, and may resume from its last index.
	ErrSubscriberLagging = errors.New("cluster: event subscriber too slow; resume from the last index received")
	// ErrStreamReset: the node replaced its state with a snapshot, so the events between
	// its old and new state are unknown to it; resume elsewhere or start live again.
	ErrStreamReset = errors.New("cluster: state restored from a snapshot; events before it are unknown here")
)

// IndexCompactedError is the ErrIndexCompacted of one request.
type IndexCompactedError struct {
	// Oldest is the smallest from index that is served now.
	Oldest uint64
}

func (e *IndexCompactedError) Error() string {
	return fmt.Sprintf("%v: the oldest index served is %d", ErrIndexCompacted, e.Oldest)
}

// Is makes errors.Is(err, ErrIndexCompacted) hold.
func (e *IndexCompactedError) Is(target error) bool { return target == ErrIndexCompacted }

// Errors of the node's storage and data directory.
var (
	// ErrStorage: this node cannot write its Raft log or stable store (a full or failing
	// disk). It answers no request until a write succeeds again; the rest of the cluster
	// goes on without it.
	ErrStorage = errors.New("cluster: this node cannot write its data directory")
	// ErrStorageFailed: this node's disk failed an fsync of its Raft log (raft-wal). What
	// the kernel kept of the unwritten pages is unknown, so the node writes nothing more
	// and its process exits (Node.StorageFailed) to be started again on what the disk
	// holds. Errors that wrap it wrap ErrStorage too.
	ErrStorageFailed = errors.New("cluster: this node's disk failed an fsync of its Raft log")
	// ErrDataDirInUse: another process holds the data directory's lock.
	ErrDataDirInUse = errors.New("cluster: data directory in use")
	// ErrLogStoreMismatch: the data directory holds a Raft log written by another kind of
	// log store than the one configured. The node refuses to start rather than start
	// empty beside its real log; the error says how to convert the node.
	ErrLogStoreMismatch = errors.New("cluster: data directory holds another kind of log store")
	// ErrExistingState: the data directory already holds Raft state (a log, a term, a
	// snapshot). A restore (RestoreIndex, RestoreDataDir) writes only into an empty one,
	// never over a live node's state.
	ErrExistingState = errors.New("cluster: data directory already holds raft state")
	// ErrRestoreIndex: the restore index cannot be computed (it would overflow) or does
	// not match the state.
	ErrRestoreIndex = errors.New("cluster: bad restore index")
)

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
