package fsm_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// historyFSM returns a state machine at protocol version 2 and the next free index.
func historyFSM(t *testing.T) (*fsm.FSM, *uint64) {
	t.Helper()
	f := fsm.New(nil)
	index := uint64(1)
	if r := f.ApplyCommand(index, &fsm.Command{Type: fsm.TypeSetVersion, Version: 2, Now: 1}); r.Status != fsm.StatusOK {
		t.Fatalf("set version: %s %v", r.Status, r.Err)
	}
	return f, &index
}

// historyLeases is historyFSM with three leases created at time 100: a, which ends at
// 1100 unless renewed, and b and c, which outlive the test.
func historyLeases(t *testing.T) (f *fsm.FSM, ix *uint64, a, b, c fsm.LeaseID) {
	t.Helper()
	f, ix = historyFSM(t)
	a, b, c = lease(1), lease(2), lease(3)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeCreateLease, Now: 100, Lease: a, TTL: 1000}, fsm.StatusOK)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeCreateLease, Now: 100, Lease: b, TTL: 60_000}, fsm.StatusOK)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeCreateLease, Now: 100, Lease: c, TTL: 60_000}, fsm.StatusOK)
	return f, ix, a, b, c
}

func apply(t *testing.T, f *fsm.FSM, index *uint64, c fsm.Command, want fsm.Status) *fsm.Result {
	t.Helper()
	*index++
	r := f.ApplyCommand(*index, &c)
	if r.Status != want {
		t.Fatalf("index %d %s: %s (%v), want %s", *index, c.Type, r.Status, r.Err, want)
	}
	return r
}

func kinds(evs []fsm.HistoryEvent) string {
	var b bytes.Buffer
	for i, e := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Kind.String())
	}
	return b.String()
}

func TestHistory_GrantReleaseHandoverExpireRevoke(t *testing.T) {
	f, ix, a, b, c := historyLeases(t)
	tokA := apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 200, Lease: a, Name: "x", Owner: "worker-3"}, fsm.StatusOK).Token
	apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 300, Lease: b, Name: "x", Owner: "worker-7", Wait: 60_000}, fsm.StatusQueued)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeRenew, Now: 500, Leases: []fsm.LeaseID{a}}, fsm.StatusOK)
	// a's deadline is 1500: the tick at 1600 expires it and hands x to b in the same entry.
	handover := apply(t, f, ix, fsm.Command{Type: fsm.TypeTick, Now: 1600}, fsm.StatusOK).Index
	h := f.History("x")
	if got := kinds(h); got != "granted expired granted" {
		t.Fatalf("history %q", got)
	}
	if e := h[0]; e.Token != tokA || e.Owner != "worker-3" || e.FromQueue || e.Lease != fsm.LeaseFingerprint(a) || e.Time != 200 {
		t.Fatalf("grant: %+v", e)
	}
	if e := h[1]; e.Token != tokA || e.Deadline != 1500 || e.Renewed != 500 || e.Index != handover || e.Time != 1600 {
		t.Fatalf("expiry: %+v", e)
	}
	if e := h[2]; !e.FromQueue || e.Owner != "worker-7" || e.Token != handover || e.Index != handover || e.Waited != 1300 {
		t.Fatalf("handover: %+v", e)
	}
	// c waits, gives up; then b is revoked.
	apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 1700, Lease: c, Name: "x", Owner: "worker-9", Wait: 100}, fsm.StatusQueued)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeTick, Now: 1800}, fsm.StatusOK) // the wait times out
	apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 1900, Lease: c, Name: "x", Owner: "worker-9", Wait: 10_000}, fsm.StatusQueued)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeDequeue, Now: 2000, Lease: c, Name: "x"}, fsm.StatusNotHolder)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeRevoke, Now: 2100, Lease: b}, fsm.StatusOK)
	h = f.History("x")
	if got := kinds(h); got != "granted expired granted wait_timed_out wait_abandoned revoked" {
		t.Fatalf("history %q", got)
	}
	if e := h[3]; e.Deadline != 1800 || e.Waited != 100 || e.Owner != "worker-9" {
		t.Fatalf("wait timeout: %+v", e)
	}
	// A release by the holder.
	tok := apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 2200, Lease: c, Name: "x", Owner: "worker-9"}, fsm.StatusOK).Token
	apply(t, f, ix, fsm.Command{Type: fsm.TypeRelease, Now: 2300, Lease: c, Name: "x", Token: tok}, fsm.StatusOK)
	h = f.History("x")
	if e := h[len(h)-1]; e.Kind != fsm.HistoryReleased || e.Token != tok || e.Owner != "worker-9" {
		t.Fatalf("release: %+v", e)
	}
	// Snapshots carry the history: a restored copy encodes to the same bytes.
	g := fsm.New(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(f.SnapshotBytes()))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.SnapshotBytes(), f.SnapshotBytes()) || kinds(g.History("x")) != kinds(f.History("x")) {
		t.Fatal("restored history differs")
	}
}

func TestHistory_RingKeepsNewest(t *testing.T) {
	f, ix := historyFSM(t)
	a := lease(1)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: a, TTL: 60_000}, fsm.StatusOK)
	var last uint64
	for i := 0; i < fsm.HistoryLen; i++ {
		tok := apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: a, Name: "x"}, fsm.StatusOK).Token
		apply(t, f, ix, fsm.Command{Type: fsm.TypeRelease, Now: 2, Lease: a, Name: "x", Token: tok}, fsm.StatusOK)
		last = *ix
	}
	h := f.History("x")
	if len(h) != fsm.HistoryLen || h[len(h)-1].Index != last || h[0].Index != last-fsm.HistoryLen+1 {
		t.Fatalf("%d events, first %d last %d (want last %d)", len(h), h[0].Index, h[len(h)-1].Index, last)
	}
	for i := 1; i < len(h); i++ {
		if h[i].Index <= h[i-1].Index {
			t.Fatalf("out of order at %d", i)
		}
	}
	g := fsm.New(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(f.SnapshotBytes()))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.SnapshotBytes(), f.SnapshotBytes()) {
		t.Fatal("restored ring encodes differently")
	}
}

// TestHistory_Version1RecordsNothing: at version 1 nothing is kept (a version 1 node has
// no history), but the observer still sees the events, which the event stream uses.
func TestHistory_Version1RecordsNothing(t *testing.T) {
	var seen []fsm.HistoryEvent
	f := fsm.New(func(e fsm.Event) {
		if e.Kind == fsm.EventHistory {
			seen = append(seen, e.History)
		}
	})
	f.ApplyCommand(1, &fsm.Command{Type: fsm.TypeAcquire, Now: 1, Lease: lease(1), NewLease: true, TTL: 1000, Name: "x"})
	if h := f.History("x"); h != nil || f.HistoryCount() != 0 {
		t.Fatalf("version 1 kept history %v", h)
	}
	if len(seen) != 1 || seen[0].Kind != fsm.HistoryGranted {
		t.Fatalf("observer saw %v", seen)
	}
}
