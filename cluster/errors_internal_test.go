package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
)

// Once a command may have been proposed, "nothing was applied" errors become
// ErrUnknownOutcome, so that transport neither answers no_leader nor forwards again.
func TestAfterProposal_NeverSaysNotApplied(t *testing.T) {
	for _, err := range []error{ErrNotLeader, ErrNoLeader, ErrShutdown, context.Canceled, context.DeadlineExceeded, fmt.Errorf("wrapped: %w", ErrNotLeader)} {
		got := afterProposal(err)
		if !errors.Is(got, ErrUnknownOutcome) {
			t.Errorf("afterProposal(%v) = %v, want ErrUnknownOutcome", err, got)
		}
	}
	for _, err := range []error{nil, ErrWaitTimeout, ErrLeaseNotFound, ErrUnknownOutcome} {
		if got := afterProposal(err); got != err {
			t.Errorf("afterProposal(%v) = %v, want it unchanged", err, got)
		}
	}
}

// A derived implicit lease depends only on the request ID, and differs between IDs.
func TestRequestLeaseID(t *testing.T) {
	a, b := requestLeaseID("0123456789abcdef-a"), requestLeaseID("0123456789abcdef-b")
	if a == b || a != requestLeaseID("0123456789abcdef-a") {
		t.Fatalf("derived lease IDs %s %s", a, b)
	}
}

// raftError's mappings of the raft errors it names (ErrNotLeader needs a raft to ask
// whether a leader is known, and is covered by the cluster tests).
func TestRaftError_Mappings(t *testing.T) {
	other := errors.New("something else")
	for _, c := range []struct {
		err      error
		proposed bool
		want     error
	}{
		{raft.ErrEnqueueTimeout, true, ErrNoLeader},
		{raft.ErrEnqueueTimeout, false, ErrNoLeader},
		{raft.ErrLeadershipTransferInProgress, false, ErrNoLeader},
		{raft.ErrLeadershipLost, false, ErrUnknownOutcome},
		{raft.ErrRaftShutdown, true, ErrUnknownOutcome},
		{other, true, ErrUnknownOutcome},
		{other, false, other},
		{fmt.Errorf("wrapped: %w", raft.ErrLeadershipLost), false, ErrUnknownOutcome},
	} {
		if got := raftError(nil, c.err, c.proposed); !errors.Is(got, c.want) {
			t.Errorf("raftError(%v, proposed %v) = %v, want %v", c.err, c.proposed, got, c.want)
		}
	}
}

// The outcome table: every status maps to its error, the successes to nil.
func TestOutcomeError_Table(t *testing.T) {
	limits := func() fsm.Limits { return fsm.Limits{MaxLeases: 7} }
	for _, c := range []struct {
		typ    fsm.Type
		status fsm.Status
		want   error
	}{
		{fsm.TypeAcquire, fsm.StatusOK, nil},
		{fsm.TypeAcquire, fsm.StatusQueued, nil},
		{fsm.TypeAcquire, fsm.StatusLockHeld, ErrLockHeld},
		{fsm.TypeRelease, fsm.StatusLeaseNotFound, ErrLeaseNotFound},
		{fsm.TypeRelease, fsm.StatusNotHolder, ErrNotHolder},
		{fsm.TypeAcquireShared, fsm.StatusModeConflict, ErrModeConflict},
		{fsm.TypeSemAcquire, fsm.StatusSemaphoreFull, ErrSemaphoreFull},
		{fsm.TypeSemAcquire, fsm.StatusLimitConflict, ErrLimitConflict},
		{fsm.TypeCampaign, fsm.StatusElectionHeld, ErrElectionHeld},
		{fsm.TypeACLBootstrap, fsm.StatusConflict, ErrACLConflict},
		{fsm.TypeACLDeleteToken, fsm.StatusNotFound, ErrACLNotFound},
		{fsm.TypeACLSetPolicy, fsm.StatusInvalid, ErrACLInvalid},
		{fsm.TypeAcquire, fsm.StatusInvalid, ErrInvalidCommand},
		{fsm.TypeTick, fsm.StatusHalted, ErrHalted},
		{fsm.TypeCreateLease, fsm.StatusQuotaExceeded, ErrQuotaExceeded},
	} {
		got := outcomeError(c.typ, &fsm.Result{Status: c.status, Quota: fsm.QuotaLeases}, limits)
		if c.want == nil && got != nil || c.want != nil && !errors.Is(got, c.want) {
			t.Errorf("outcomeError(%s, %s) = %v, want %v", c.typ, c.status, got, c.want)
		}
	}
	var q *QuotaError
	if err := outcomeError(fsm.TypeCreateLease, &fsm.Result{Status: fsm.StatusQuotaExceeded, Quota: fsm.QuotaLeases}, limits); !errors.As(err, &q) || q.Value != 7 {
		t.Errorf("quota error %v, want max_leases 7", err)
	}
}
