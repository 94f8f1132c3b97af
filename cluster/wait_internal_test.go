package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/fsm"
)

// A waiting acquire is answered only by an event after the entry that queued it. Entries
// applied between the wait's registration and that entry can carry earlier grants and
// wait endings of the same lease and name (a node replaying its log after a restart-all):
// before the fix the first of them answered the wait, and a bank worker was handed a token
// its lease had already released (TestCampaign, restart-all rounds, seed 304499540).
// More stale events than the wait buffers make sure the real grant is not dropped either.
func TestAcquire_IgnoresEventsBeforeItsQueueingEntry(t *testing.T) {
	n := &Node{cfg: Config{ElectionTimeout: time.Second, TickInterval: 10 * time.Millisecond}, log: hclog.NewNullLogger(), registry: newRegistry()}
	lease := fsm.LeaseID{1}
	w := &queuedWait{n: n, space: fsm.SpaceLock, holder: Holder{Lease: lease, Wait: 10 * time.Second}}
	c := &fsm.Command{Type: fsm.TypeAcquire, Name: "bank/1", Lease: lease, Wait: 10_000}
	const queuedAt = 100
	propose := func(*fsm.Command) (*fsm.Result, error) {
		// The replayed log before the queueing entry: this lease took and released the
		// lock many times, and one of its earlier waits ended.
		for i := uint64(1); i <= 3*waitBuffer; i++ {
			kind := fsm.EventGranted
			if i%5 == 0 {
				kind = fsm.EventWaitEnded
			}
			n.registry.deliver(fsm.Event{Kind: kind, Space: fsm.SpaceLock, Name: "bank/1", Lease: lease, Index: i, Token: i})
		}
		go func() {
			time.Sleep(20 * time.Millisecond) // the grant comes in a later commit
			n.registry.deliver(fsm.Event{Kind: fsm.EventGranted, Space: fsm.SpaceLock, Name: "bank/1", Lease: lease, Index: queuedAt + 7, Token: queuedAt + 7})
		}()
		return &fsm.Result{Status: fsm.StatusQueued, Index: queuedAt}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	token, err := acquire(ctx, w, c, propose, func(r *fsm.Result) uint64 { return r.Token })
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if token != queuedAt+7 {
		t.Fatalf("acquire answered token %d, want %d (the grant after its queueing entry %d)", token, queuedAt+7, queuedAt)
	}
}
