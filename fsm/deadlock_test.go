package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// v3apply applies c at the next index of f and fails unless its status is want.
func v3apply(t *testing.T, f *FSM, index *uint64, c Command, want Status) *Result {
	t.Helper()
	*index++
	r := f.ApplyCommand(*index, &c)
	if r.Status != want {
		t.Fatalf("%s at %d: %s (%v), want %s", c.Type, *index, r.Status, r.Err, want)
	}
	return r
}

func TestDeadlock_TwoLeasesAskingForEachOthersLock(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Name: "a", Owner: "A"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Name: "b", Owner: "B"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: a, Name: "b", Wait: 30_000, Owner: "A"}, StatusQueued)
	r := v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: b, Name: "a", Wait: 30_000, Owner: "B"}, StatusDeadlock)
	fa, fb := LeaseFingerprint(a), LeaseFingerprint(b)
	want := []CycleStep{{Lease: fb, Lock: "a", Holder: fa, HolderOwner: "A", Holds: true}, {Lease: fa, Lock: "b", Holder: fb, HolderOwner: "B", Holds: true}}
	if !slices.Equal(r.Cycle, want) {
		t.Fatalf("cycle %+v, want %+v", r.Cycle, want)
	}
	if v := f.Lock("a"); len(v.Waiters) != 0 {
		t.Fatalf("refused request queued: %v", v.Waiters)
	}
	// Before version 8 the history keeps the cycle as text.
	h := f.History("a")
	last := h[len(h)-1]
	if last.Kind != HistoryDeadlock || last.Cycle.Steps != nil || last.Cycle.Text != DescribeCycle(want) ||
		!strings.Contains(last.Cycle.Text, fa.String()) || strings.Contains(last.Cycle.Text, a.String()) {
		t.Fatalf("history of a ends with %+v (%+v)", last, last.Cycle)
	}
	// At version 2 the same request queues, as version 2 code does.
	g := New(nil)
	g.s.version = 2
	index = 0
	v3apply(t, g, &index, Command{Type: TypeAcquire, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Name: "a"}, StatusOK)
	v3apply(t, g, &index, Command{Type: TypeAcquire, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Name: "b"}, StatusOK)
	v3apply(t, g, &index, Command{Type: TypeAcquire, Now: 10, Lease: a, Name: "b", Wait: 30_000}, StatusQueued)
	v3apply(t, g, &index, Command{Type: TypeAcquire, Now: 10, Lease: b, Name: "a", Wait: 30_000}, StatusQueued)
}

// From protocol version 8 a refusal's history event keeps the cycle as its steps; before
// it, every node keeps DescribeCycle's text (a node that speaks 8 writes what a node of
// version 7 writes), and a refusal kept as text stays text after the upgrade. Names that
// hold the text's separators come back whole from the steps.
func TestDeadlock_CycleKeptAsStepsFromVersion8(t *testing.T) {
	f, index := atVersion(t, 7)
	old := NewWithOptions(Options{MaxVersion: 7})
	apply := func(c Command, want Status) *Result {
		old.ApplyCommand(*index+1, &c)
		return v3apply(t, f, index, c, want)
	}
	old.ApplyCommand(*index, &Command{Type: TypeSetVersion, Version: 7})
	a, b := LeaseID{1}, LeaseID{2}
	refuse := func(x, y string) *Result {
		apply(Command{Type: TypeAcquire, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Name: x, Owner: "A"}, StatusOK)
		apply(Command{Type: TypeAcquire, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Name: y, Owner: "B"}, StatusOK)
		apply(Command{Type: TypeAcquire, Now: 10, Lease: a, Name: y, Wait: 30_000, Owner: "A"}, StatusQueued)
		return apply(Command{Type: TypeAcquire, Now: 10, Lease: b, Name: x, Wait: 30_000, Owner: "B"}, StatusDeadlock)
	}
	last := func(name string) HistoryEvent { // the newest refusal in name's history
		for _, e := range slices.Backward(f.History(name)) {
			if e.Kind == HistoryDeadlock {
				return e
			}
		}
		t.Fatalf("no refusal in the history of %q", name)
		return HistoryEvent{}
	}
	r := refuse("p/1", "p/2")
	if e := last("p/1"); e.Kind != HistoryDeadlock || e.Cycle.Steps != nil || e.Cycle.Text != DescribeCycle(r.Cycle) {
		t.Fatalf("at version 7 the refusal is kept as %+v", e.Cycle)
	}
	if !bytes.Equal(f.SnapshotBytes(), old.SnapshotBytes()) {
		t.Fatal("at active version 7 a node that speaks 8 writes other bytes than one that speaks 7")
	}
	v3apply(t, f, index, Command{Type: TypeSetVersion, Now: 10, Version: 8}, StatusOK)
	for _, id := range []LeaseID{a, b} {
		v3apply(t, f, index, Command{Type: TypeRevoke, Now: 10, Lease: id}, StatusOK)
	}
	x, y := "q/x (held or asked for ahead of it by lease 00000000), which waits for lock q/z", "q/y), which waits for lock q/x"
	r = refuse(x, y)
	fa, fb := LeaseFingerprint(a), LeaseFingerprint(b)
	want := []CycleStep{{Lease: fb, Lock: x, Holder: fa, HolderOwner: "A", Holds: true}, {Lease: fa, Lock: y, Holder: fb, HolderOwner: "B", Holds: true}}
	if !slices.Equal(r.Cycle, want) {
		t.Fatalf("cycle %+v, want %+v", r.Cycle, want)
	}
	if e := last(x); e.Kind != HistoryDeadlock || !slices.Equal(e.Cycle.Steps, want) || e.Cycle.Text != "" || e.Cycle.String() != DescribeCycle(want) {
		t.Fatalf("at version 8 the refusal is kept as %+v", e.Cycle)
	}
	if e := last("p/1"); e.Cycle.Steps != nil || e.Cycle.Text == "" {
		t.Fatalf("the refusal of version 7 is now %+v", e.Cycle)
	}
	snap := f.SnapshotBytes()
	if !bytes.HasPrefix(snap, []byte("RLKS\x07")) {
		t.Fatalf("version 8 snapshot header %q", snap[:5])
	}
	g := New(nil)
	if err := restoreFrom(g, snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.SnapshotBytes(), snap) || !reflect.DeepEqual(g.History(x), f.History(x)) || !reflect.DeepEqual(g.History("p/1"), f.History("p/1")) {
		t.Fatalf("restored: %+v", g.History(x))
	}
	// A node that speaks 7 does not restore it.
	if err := restoreFrom(NewWithOptions(Options{MaxVersion: 7}), snap); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatalf("a version 7 node restoring a format 7 snapshot: %v", err)
	}
	// A step whose lock is no valid name is refused.
	f.mu.Lock()
	lh := f.s.hist.byName[histKey{SpaceLock, x}]
	e := &lh.events[len(lh.events)-1]
	kept := e.Cycle
	e.Cycle = &RecordedCycle{Steps: []CycleStep{{Lease: fa, Lock: "\x00"}}}
	bad := f.s.encode()
	e.Cycle = kept
	f.mu.Unlock()
	if err := restoreFrom(New(nil), bad); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a step without a valid name: %v", err)
	}
}

// refusedAt returns a state machine at protocol version v whose histories hold a refused
// deadlock: lease 1 holds a and waits for b, lease 2 holds b and was refused a.
func refusedAt(t testing.TB, v uint64) *FSM {
	f, index := atVersion(t, v)
	a, b := LeaseID{1}, LeaseID{2}
	for _, c := range []Command{
		{Type: TypeAcquire, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Name: "a", Owner: "A"},
		{Type: TypeAcquire, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Name: "b", Owner: "B"},
		{Type: TypeAcquire, Now: 10, Lease: a, Name: "b", Wait: 30_000, Owner: "A"},
		{Type: TypeAcquire, Now: 10, Lease: b, Name: "a", Wait: 30_000, Owner: "B"},
	} {
		*index++
		f.ApplyCommand(*index, &c)
	}
	if h := f.History("a"); len(h) == 0 || h[len(h)-1].Kind != HistoryDeadlock {
		t.Fatalf("no refusal at version %d", v)
	}
	return f
}
