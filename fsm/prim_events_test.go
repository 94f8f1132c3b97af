package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// primEvents collects the history events of semaphores and elections an FSM reports.
type primEvents struct{ got []string }

func (p *primEvents) observe(e Event) {
	if e.Kind == EventHistory && e.Space != SpaceLock {
		h := e.History
		s := fmt.Sprintf("%s %s %s %s tok=%d", e.Space, e.Name, h.Kind, h.Owner, h.Token)
		if h.FromQueue {
			s += " from-queue"
		}
		if h.Deadline != 0 {
			s += fmt.Sprintf(" deadline=%d", h.Deadline)
		}
		p.got = append(p.got, s)
	}
}

// take returns the events reported since the last call.
func (p *primEvents) take() []string {
	out := p.got
	p.got = nil
	return out
}

// A semaphore's and an election's grants, ends and waits are reported to the observer
// as history events of their own kinds (the event stream's semaphore and election
// events), at every version from 2, each with the lease's fingerprint, owner and token;
// without an observer nothing is built, and before version 7 nothing is kept.
func TestHistory_SemaphoreAndElectionEvents(t *testing.T) {
	for _, v := range []uint64{3, 6} {
		t.Run(fmt.Sprint("version", v), func(t *testing.T) {
			var p primEvents
			f := New(p.observe)
			index := uint64(1)
			f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: v})
			a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
			do := func(cmd Command, want Status) {
				t.Helper()
				index++
				if r := f.ApplyCommand(index, &cmd); r.Status != want {
					t.Fatalf("%s at %d: %s, want %s", cmd.Type, index, r.Status, want)
				}
			}
			expect := func(want ...string) {
				t.Helper()
				if got := p.take(); !slices.Equal(got, want) {
					t.Fatalf("events\n  %q\nwant\n  %q", got, want)
				}
			}
			nl := func(cmd Command, ttl int64) Command { cmd.NewLease, cmd.TTL = true, ttl; return cmd }
			do(nl(Command{Type: TypeSemAcquire, Now: 100, Lease: a, Name: "s", Limit: 1, Owner: "A"}, 10_000), StatusOK)
			expect(fmt.Sprintf("semaphore s permit_granted A tok=%d", index))
			tokA := index
			do(nl(Command{Type: TypeSemAcquire, Now: 100, Lease: b, Name: "s", Limit: 1, Owner: "B", Wait: 5000}, 60_000), StatusQueued)
			do(nl(Command{Type: TypeSemAcquire, Now: 100, Lease: c, Name: "s", Limit: 1, Owner: "C", Wait: 100}, 60_000), StatusQueued)
			expect()
			do(Command{Type: TypeTick, Now: 300}, StatusOK) // C's wait ends
			expect("semaphore s permit_wait_timed_out C tok=0 deadline=200")
			do(Command{Type: TypeSemRelease, Now: 300, Lease: a, Name: "s", Token: tokA}, StatusOK)
			expect(fmt.Sprintf("semaphore s permit_released A tok=%d", tokA), fmt.Sprintf("semaphore s permit_granted B tok=%d from-queue", index))
			do(Command{Type: TypeSemAcquire, Now: 300, Lease: c, Name: "s", Limit: 1, Owner: "C", Wait: 5000}, StatusQueued)
			do(Command{Type: TypeSemDequeue, Now: 300, Lease: c, Name: "s"}, StatusNotHolder)
			expect("semaphore s permit_wait_abandoned C tok=0")

			do(nl(Command{Type: TypeCampaign, Now: 300, Lease: a, Name: "e", Owner: "A", Value: "1"}, 10_000), StatusOK)
			tokE := index
			expect(fmt.Sprintf("election e elected A tok=%d", tokE))
			do(Command{Type: TypeCampaign, Now: 300, Lease: a, Name: "e", Owner: "A", Value: "2", Token: tokE}, StatusOK)
			expect(fmt.Sprintf("election e proclaimed A tok=%d", tokE))
			do(Command{Type: TypeCampaign, Now: 300, Lease: c, Name: "e", Owner: "C", Value: "3", Wait: 60_000}, StatusQueued)
			expect()
			// A's lease expires (renewed at 300 by its campaign, with a TTL of 10 s): it
			// leads no more, and C is elected from the queue in the same entry.
			do(Command{Type: TypeTick, Now: 10_400}, StatusOK)
			tokC := index
			got := p.take()
			want := []string{fmt.Sprintf("election e leader_expired A tok=%d deadline=10300", tokE), fmt.Sprintf("election e elected C tok=%d from-queue", tokC)}
			if !slices.Equal(got, want) {
				t.Fatalf("at A's expiry: %q, want %q", got, want)
			}
			do(Command{Type: TypeResign, Now: 10_400, Lease: c, Name: "e", Token: tokC}, StatusOK)
			expect(fmt.Sprintf("election e resigned C tok=%d", tokC))
			do(Command{Type: TypeRevoke, Now: 10_400, Lease: b}, StatusOK)
			expect(fmt.Sprintf("semaphore s permit_revoked B tok=%d", tokA+4))
			// Nothing is kept before version 7, and without an observer nothing is built.
			if f.HistoryCount() != 0 {
				t.Fatalf("%d histories kept at version %d", f.HistoryCount(), v)
			}
		})
	}
}

// From version 7 a semaphore's and an election's events are kept in their own histories
// (HistoryOf), apart from a lock's of the same name, in snapshots, and within the one
// bound of histories; before it, none is kept.
func TestHistory_SemaphoresAndElectionsKeptFromVersion7(t *testing.T) {
	f, index := atVersion(t, 6)
	a, b := LeaseID{1}, LeaseID{2}
	v3apply(t, f, index, Command{Type: TypeSemAcquire, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Name: "n", Limit: 2, Owner: "A"}, StatusOK)
	if h := f.HistoryOf(SpaceSemaphore, "n"); h != nil {
		t.Fatalf("a semaphore history at version 6: %+v", h)
	}
	v3apply(t, f, index, Command{Type: TypeSetVersion, Now: 10, Version: 7}, StatusOK)
	v3apply(t, f, index, Command{Type: TypeSemAcquire, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Name: "n", Limit: 2, Owner: "B"}, StatusOK)
	tokB := *index
	v3apply(t, f, index, Command{Type: TypeSemRelease, Now: 10, Lease: b, Name: "n", Token: tokB}, StatusOK)
	v3apply(t, f, index, Command{Type: TypeCampaign, Now: 10, Lease: a, Name: "n", Owner: "A", Value: "v"}, StatusOK)
	v3apply(t, f, index, Command{Type: TypeAcquire, Now: 10, Lease: a, Name: "n", Owner: "A"}, StatusOK)
	kinds := func(space Space) (out []string) {
		for _, e := range f.HistoryOf(space, "n") {
			out = append(out, e.Kind.String())
		}
		return out
	}
	if got := kinds(SpaceSemaphore); !slices.Equal(got, []string{"permit_granted", "permit_released"}) {
		t.Fatalf("the semaphore's history: %q", got)
	}
	if got := kinds(SpaceElection); !slices.Equal(got, []string{"elected"}) {
		t.Fatalf("the election's history: %q", got)
	}
	if got := kinds(SpaceLock); !slices.Equal(got, []string{"granted"}) || f.History("n")[0].Kind != HistoryGranted {
		t.Fatalf("the lock's history: %q", got)
	}
	if e := f.HistoryOf(SpaceSemaphore, "n")[0]; e.Token != tokB || e.Owner != "B" || e.Lease != LeaseFingerprint(b) {
		t.Fatalf("the permit's grant: %+v", e)
	}
	snap := f.SnapshotBytes()
	r := New(nil)
	if err := r.Restore(nopReader(snap)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.SnapshotBytes(), snap) || len(r.HistoryOf(SpaceElection, "n")) != 1 || r.HistoryCount() != 3 {
		t.Fatalf("restored: %d histories", r.HistoryCount())
	}
	// A semaphore's history holding a lock's kind is refused.
	f.mu.Lock()
	lh := f.s.hist.byName[histKey{SpaceSemaphore, "n"}]
	lh.events[0].Kind = HistoryGranted
	bad := f.s.encode()
	lh.events[0].Kind = HistoryPermitGranted
	f.mu.Unlock()
	if err := New(nil).Restore(nopReader(bad)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a lock's kind in a semaphore's history: %v", err)
	}
	// One bound for every history: at two, a new history evicts the least recently
	// active, whatever its primitive (version 5's shares: one identity here).
	f.mu.Lock()
	f.s.hist.maxLocks = 2
	f.mu.Unlock()
	v3apply(t, f, index, Command{Type: TypeCampaign, Now: 10, Lease: b, Name: "other", Owner: "B", Value: "v"}, StatusOK)
	if f.HistoryCount() != 2 || f.HistoryOf(SpaceSemaphore, "n") != nil || f.HistoryOf(SpaceElection, "other") == nil {
		t.Fatalf("after a history past the bound: %d, semaphore n %v", f.HistoryCount(), f.HistoryOf(SpaceSemaphore, "n"))
	}
}
