package cluster

import (
	"errors"
	"fmt"

	"github.com/raftlock/raftlock/fsm"
)

// outcome is how the node answers one of the state machine's outcomes (fsm.Status).
type outcome struct {
	// code is the API's error code that the outcome's error is answered with: an entry of
	// the API's catalogue of outcomes (api/outcomes.go), which gives its status and retry
	// class; "" for the outcomes that are not failures. cluster imports no api (test/deps),
	// so this column is where the state machine's statuses meet the catalogue's codes;
	// TestOutcomes_AnsweredAsCatalogued checks each against the catalogue and against
	// transport's answer to the error. aclCode is the code of an ACL command's outcome, for
	// the one status whose code differs there.
	code, aclCode string
	// err builds the outcome's error from the command's type, its result and the quotas
	// in force (read only for a refused quota); nil for the outcomes that are not
	// failures.
	err func(t fsm.Type, r *fsm.Result, limits func() fsm.Limits) error
	// refusesEntry marks the outcomes that any command can meet, where the entry as a
	// whole was refused (malformed, a halted state machine, a quota): the proposer answers
	// them with their error, so that no caller takes them for its command's own outcome.
	refusesEntry bool
}

// outcomes is the one table from the state machine's outcomes to the node's errors, for
// every command and on every path: an acquire that waits, a lockset, a release and the
// proposer's refusals all read it through outcomeError. An outcome that carries more than
// its status (the locks of a lockset, a deadlock's cycle, a semaphore's limit, a quota)
// gives its error those values.
var outcomes = map[fsm.Status]outcome{
	fsm.StatusOK:              {},
	fsm.StatusQueued:          {},
	fsm.StatusSkipped:         {},
	fsm.StatusLockHeld:        {code: "lock_held", err: naming(ErrLockHeld)},
	fsm.StatusNotHolder:       {code: "not_holder", err: naming(ErrNotHolder)},
	fsm.StatusLeaseNotFound:   {code: "lease_not_found", err: always(ErrLeaseNotFound)},
	fsm.StatusUnauthenticated: {code: "unauthenticated", err: always(ErrTokenRevoked)},
	fsm.StatusModeConflict:    {code: "mode_conflict", err: always(ErrModeConflict)},
	fsm.StatusSemaphoreFull:   {code: "semaphore_full", err: always(ErrSemaphoreFull)},
	fsm.StatusElectionHeld:    {code: "election_held", err: always(ErrElectionHeld)},
	fsm.StatusLimitConflict: {code: "limit_conflict", err: func(_ fsm.Type, r *fsm.Result, _ func() fsm.Limits) error {
		return &LimitConflictError{Limit: r.Limit}
	}},
	fsm.StatusDeadlock: {code: "deadlock", err: func(_ fsm.Type, r *fsm.Result, _ func() fsm.Limits) error {
		return deadlockError(r.Cycle)
	}},
	fsm.StatusConflict: {code: "conflict", err: explained(ErrACLConflict)},
	fsm.StatusNotFound: {code: "not_found", err: explained(ErrACLNotFound)},
	// A malformed ACL request is the caller's; any other malformed command, the node's
	// fault (the encoder never writes one).
	fsm.StatusInvalid: {code: "internal", aclCode: "invalid_argument", refusesEntry: true, err: func(t fsm.Type, r *fsm.Result, _ func() fsm.Limits) error {
		if isACL(t) {
			return fmt.Errorf("%w: %v", ErrACLInvalid, r.Err)
		}
		return errors.Join(ErrInvalidCommand, r.Err)
	}},
	fsm.StatusHalted: {code: "internal", refusesEntry: true, err: func(_ fsm.Type, r *fsm.Result, _ func() fsm.Limits) error {
		return errors.Join(ErrHalted, r.Err)
	}},
	fsm.StatusQuotaExceeded: {code: "quota_exceeded", refusesEntry: true, err: func(_ fsm.Type, r *fsm.Result, limits func() fsm.Limits) error {
		return quotaError(r, limits)
	}},
}

// outcomeError is the error of result r of a command of type t, as the outcomes table
// says; nil for the outcomes that are not failures (ok, queued, skipped).
func outcomeError(t fsm.Type, r *fsm.Result, limits func() fsm.Limits) error {
	o, ok := outcomes[r.Status]
	if !ok {
		return fmt.Errorf("cluster: %s: unexpected outcome %s", t, r.Status)
	}
	if o.err == nil {
		return nil
	}
	return o.err(t, r, limits)
}

// refusedEntry reports the outcomes where the entry as a whole was refused, whatever its
// command; the proposer answers them with an error.
func refusedEntry(s fsm.Status) bool { return outcomes[s].refusesEntry }

// always answers an outcome known by its status alone.
func always(err error) func(fsm.Type, *fsm.Result, func() fsm.Limits) error {
	return func(fsm.Type, *fsm.Result, func() fsm.Limits) error { return err }
}

// naming answers err, or, for a lockset's outcome that names the locks concerned, a
// *NamesError of err with them.
func naming(err error) func(fsm.Type, *fsm.Result, func() fsm.Limits) error {
	return func(_ fsm.Type, r *fsm.Result, _ func() fsm.Limits) error {
		if len(r.Held) > 0 {
			return &NamesError{Err: err, Names: r.Held}
		}
		return err
	}
}

// explained answers err with the state machine's explanation of the ACL outcome.
func explained(err error) func(fsm.Type, *fsm.Result, func() fsm.Limits) error {
	return func(_ fsm.Type, r *fsm.Result, _ func() fsm.Limits) error {
		return fmt.Errorf("%w: %v", err, r.Err)
	}
}

// isACL reports the ACL commands, whose malformed requests are ErrACLInvalid.
func isACL(t fsm.Type) bool {
	switch t {
	case fsm.TypeACLBootstrap, fsm.TypeACLSetPolicy, fsm.TypeACLDeletePolicy, fsm.TypeACLSetToken, fsm.TypeACLDeleteToken:
		return true
	}
	return false
}

// quotaError names the limit a refused command would have exceeded, with its value and
// the use it counts as the state machine reported them. A result without the value (from
// an older state machine's refusal) takes it from the limits in force.
func quotaError(r *fsm.Result, limits func() fsm.Limits) error {
	v := r.QuotaLimit
	if v == 0 {
		l := limits()
		switch r.Quota {
		case fsm.QuotaLeases:
			v = l.MaxLeases
		case fsm.QuotaLocksPerLease:
			v = l.MaxLocksPerLease
		case fsm.QuotaWaitersPerLock:
			v = l.MaxWaitersPerLock
		}
	}
	return &QuotaError{Limit: r.Quota, Value: v, Used: r.QuotaUsed, Identity: r.QuotaIdentity}
}
