package cluster

import (
	"errors"
	"fmt"

	"github.com/raftlock/raftlock/fsm"
)

// outcomeError is the one table from the state machine's outcomes (fsm.Status) to the
// node's errors, for every command; nil for the outcomes that are not failures (ok,
// queued, skipped). limits gives the quotas in force, read only for a refused quota.
func outcomeError(t fsm.Type, r *fsm.Result, limits func() fsm.Limits) error {
	switch r.Status {
	case fsm.StatusOK, fsm.StatusQueued, fsm.StatusSkipped:
		return nil
	case fsm.StatusLockHeld:
		return ErrLockHeld
	case fsm.StatusLeaseNotFound:
		return ErrLeaseNotFound
	case fsm.StatusUnauthenticated:
		return ErrTokenRevoked
	case fsm.StatusNotHolder:
		return ErrNotHolder
	case fsm.StatusModeConflict:
		return ErrModeConflict
	case fsm.StatusSemaphoreFull:
		return ErrSemaphoreFull
	case fsm.StatusLimitConflict:
		return &LimitConflictError{Limit: r.Limit}
	case fsm.StatusElectionHeld:
		return ErrElectionHeld
	case fsm.StatusConflict:
		return fmt.Errorf("%w: %v", ErrACLConflict, r.Err)
	case fsm.StatusNotFound:
		return fmt.Errorf("%w: %v", ErrACLNotFound, r.Err)
	case fsm.StatusInvalid:
		if isACL(t) {
			return fmt.Errorf("%w: %v", ErrACLInvalid, r.Err)
		}
		return errors.Join(ErrInvalidCommand, r.Err)
	case fsm.StatusHalted:
		return errors.Join(ErrHalted, r.Err)
	case fsm.StatusQuotaExceeded:
		return quotaError(r.Quota, limits())
	}
	return fmt.Errorf("cluster: %s: unexpected outcome %s", t, r.Status)
}

// refusedEntry reports the outcomes that any command can meet, where the entry as a whole
// was refused (malformed, a halted state machine, a quota). The proposer answers them
// with an error; every other outcome is the caller's to read.
func refusedEntry(s fsm.Status) bool {
	return s == fsm.StatusInvalid || s == fsm.StatusHalted || s == fsm.StatusQuotaExceeded
}

// isACL reports the ACL commands, whose malformed requests are ErrACLInvalid.
func isACL(t fsm.Type) bool {
	switch t {
	case fsm.TypeACLBootstrap, fsm.TypeACLSetPolicy, fsm.TypeACLDeletePolicy, fsm.TypeACLSetToken, fsm.TypeACLDeleteToken:
		return true
	}
	return false
}

// quotaError names the limit a refused command would have exceeded.
func quotaError(limit string, l fsm.Limits) error {
	var v uint64
	switch limit {
	case fsm.QuotaLeases:
		v = l.MaxLeases
	case fsm.QuotaLocksPerLease:
		v = l.MaxLocksPerLease
	case fsm.QuotaWaitersPerLock:
		v = l.MaxWaitersPerLock
	}
	return &QuotaError{Limit: limit, Value: v}
}
