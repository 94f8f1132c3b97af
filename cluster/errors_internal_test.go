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

// The outcomes that carry values give them to their errors, on every path: a lockset's
// locks, a deadlock's cycle described as the state machine writes it.
func TestOutcomeError_CarriesValues(t *testing.T) {
	none := func() fsm.Limits { return fsm.Limits{} }
	var ne *NamesError
	err := outcomeError(fsm.TypeLockSet, &fsm.Result{Status: fsm.StatusLockHeld, Held: []string{"a", "b"}}, none)
	if !errors.As(err, &ne) || !errors.Is(err, ErrLockHeld) || len(ne.Names) != 2 {
		t.Errorf("lockset held: %v, want a *NamesError of ErrLockHeld naming a and b", err)
	}
	err = outcomeError(fsm.TypeLockSetRelease, &fsm.Result{Status: fsm.StatusNotHolder, Held: []string{"a"}}, none)
	if !errors.As(err, &ne) || !errors.Is(err, ErrNotHolder) {
		t.Errorf("lockset release: %v, want a *NamesError of ErrNotHolder", err)
	}
	cycle := []CycleStep{{Lease: Fingerprint{1, 2, 3, 4}, Lock: "a"}, {Lease: Fingerprint{5, 6, 7, 8}, Lock: "b"}}
	var de *DeadlockError
	err = outcomeError(fsm.TypeAcquireEx, &fsm.Result{Status: fsm.StatusDeadlock, Cycle: cycle}, none)
	if !errors.As(err, &de) || !errors.Is(err, ErrDeadlock) || len(de.Cycle) != 2 || de.Described != fsm.DescribeCycle(cycle) {
		t.Errorf("deadlock: %v, want a *DeadlockError with its cycle described", err)
	}
}

// Every outcome the state machine has is a row of the table, so that a new one cannot
// reach a caller as "unexpected"; exactly the outcomes that refuse a whole entry are
// answered by the proposer.
func TestOutcomes_EveryStatusIsARow(t *testing.T) {
	refused := map[fsm.Status]bool{fsm.StatusInvalid: true, fsm.StatusHalted: true, fsm.StatusQuotaExceeded: true}
	n := 0
	for s := fsm.Status(0); s.String() != "status(?)"; s++ {
		n++
		if _, ok := outcomes[s]; !ok {
			t.Errorf("outcome %s has no row in outcomes", s)
		}
		if refusedEntry(s) != refused[s] {
			t.Errorf("refusedEntry(%s) = %v, want %v", s, refusedEntry(s), refused[s])
		}
	}
	if n != len(outcomes) {
		t.Errorf("outcomes has %d rows for %d statuses", len(outcomes), n)
	}
}
