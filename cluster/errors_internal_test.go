package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
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
