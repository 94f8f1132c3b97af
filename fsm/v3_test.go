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

func TestV3_CommandsRefusedAtVersion2(t *testing.T) {
	g := New(nil)
	g.s.version = 2
	index := uint64(0)
	for _, c := range []Command{
		{Type: TypeLockSet, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Names: []string{"a", "b"}},
		{Type: TypeAcquireEx, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Name: "a", MaxHold: 1000},
		{Type: TypeLockSetRelease, Lease: LeaseID{1}, Names: []string{"a"}, Tokens: []uint64{1}},
	} {
		r := v3apply(t, g, &index, c, StatusInvalid)
		if !strings.Contains(r.Err.Error(), "needs version 3") {
			t.Fatalf("%s: %v", c.Type, r.Err)
		}
	}
	if g.LockCount() != 0 || g.LeaseCount() != 0 {
		t.Fatal("a refused command changed the state")
	}
}

func TestLockSet_AllOrNoneAndOneCommit(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	r := v3apply(t, f, &index, Command{Type: TypeLockSet, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Names: []string{"x", "y", "z"}}, StatusOK)
	if len(r.Tokens) != 3 || r.Tokens[0] != index || r.Tokens[1] != index || r.Tokens[2] != index {
		t.Fatalf("tokens %v, want three times %d", r.Tokens, index)
	}
	// One held name: nothing taken, the held one named.
	r = v3apply(t, f, &index, Command{Type: TypeLockSet, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Names: []string{"w", "x"}}, StatusLockHeld)
	if len(r.Held) != 1 || r.Held[0] != "x" || f.Lock("w").Held {
		t.Fatalf("held %v, w %+v", r.Held, f.Lock("w"))
	}
	// With a wait: queued on both, w reserved for the set (nobody else gets it).
	v3apply(t, f, &index, Command{Type: TypeLockSet, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Names: []string{"w", "x"}, Wait: 30_000}, StatusQueued)
	c := LeaseID{3}
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: c, NewLease: true, TTL: 60_000, Name: "w"}, StatusLockHeld)
	// Released as a set in one commit: b gets w and x at that index.
	v3apply(t, f, &index, Command{Type: TypeLockSetRelease, Now: 10, Lease: a, Names: []string{"x", "y", "z"}, Tokens: []uint64{2, 2, 2}}, StatusOK)
	for _, n := range []string{"w", "x"} {
		if v := f.Lock(n); v.Holder != b || v.Token != index {
			t.Fatalf("%s: %+v, want b with %d", n, v, index)
		}
	}
	if f.Lock("y").Held || f.Lock("z").Held {
		t.Fatal("y, z still held")
	}
	// Each lock of the set is an ordinary lock: released by name.
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 10, Lease: b, Name: "w", Token: index}, StatusOK)
}

func TestLockSet_WaitingSetIsNotPassedBySingles(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b, s, c := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: a, NewLease: true, TTL: 60_000, Name: "x"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: b, NewLease: true, TTL: 60_000, Name: "y"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeLockSet, Now: 10, Lease: s, NewLease: true, TTL: 60_000, Names: []string{"x", "y"}, Wait: 50_000}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: c, NewLease: true, TTL: 60_000, Name: "x", Wait: 50_000}, StatusQueued)
	// x is freed first: reserved for the set, not handed to c behind it.
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 10, Lease: a, Name: "x", Token: 2}, StatusOK)
	if v := f.Lock("x"); v.Held {
		t.Fatalf("x handed to %v past the waiting set", v.Holder)
	}
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 10, Lease: b, Name: "y", Token: 3}, StatusOK)
	if f.Lock("x").Holder != s || f.Lock("y").Holder != s || f.Lock("x").Token != index {
		t.Fatal("set not granted both at the release of the last one")
	}
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 10, Lease: s, Name: "x", Token: index}, StatusOK)
	if f.Lock("x").Holder != c {
		t.Fatal("c not granted after the set")
	}
}

func TestMaxHold_EndsWhileKeptAlive(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	r := v3apply(t, f, &index, Command{Type: TypeAcquireEx, Now: 1000, Lease: a, NewLease: true, TTL: 2000, Name: "m", MaxHold: 1500}, StatusOK)
	first := r.Token
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 1000, Lease: b, NewLease: true, TTL: 60_000, Name: "m", Wait: 30_000}, StatusQueued)
	for now := int64(1300); now <= 2500; now += 300 { // kept alive every 300 ms
		v3apply(t, f, &index, Command{Type: TypeRenew, Now: now, Leases: []LeaseID{a}}, StatusOK)
		if v := f.Lock("m"); now < 2500 && v.Holder != a {
			t.Fatalf("at %d the grant ended early", now)
		}
	}
	v := f.Lock("m")
	if v.Holder != b || v.Token <= first {
		t.Fatalf("after the maximum hold: %+v", v)
	}
	if _, ok := f.Lease(a); !ok {
		t.Fatal("the lease ended with the grant")
	}
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 2600, Lease: a, Name: "m", Token: first}, StatusNotHolder)
	found := false
	for _, e := range f.History("m") {
		found = found || e.Kind == HistoryMaxHold && e.Token == first
	}
	if !found {
		t.Fatal("history does not say held for its maximum")
	}
}

func TestLockDelay_AfterExpiryNotAfterRelease(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	v3apply(t, f, &index, Command{Type: TypeAcquireEx, Now: 1000, Lease: a, NewLease: true, TTL: 1000, Name: "d", LockDelay: 2000}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 1000, Lease: b, NewLease: true, TTL: 60_000, Name: "d", Wait: 30_000}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 2000}, StatusOK) // a expires at 2000
	v := f.Lock("d")
	if v.Held || v.DelayedUntil != 4000 || len(v.Waiters) != 1 {
		t.Fatalf("after the expiry: %+v", v)
	}
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 3999}, StatusOK)
	if f.Lock("d").Held {
		t.Fatal("granted during the lock delay")
	}
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 4000}, StatusOK)
	if v := f.Lock("d"); v.Holder != b || v.Token != index {
		t.Fatalf("after the delay: %+v", v)
	}
	// A release starts no delay.
	v3apply(t, f, &index, Command{Type: TypeAcquireEx, Now: 4000, Lease: a, NewLease: true, TTL: 1000, Name: "e", LockDelay: 2000}, StatusOK)
	tok := index
	v3apply(t, f, &index, Command{Type: TypeRelease, Now: 4100, Lease: a, Name: "e", Token: tok}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 4100, Lease: b, Name: "e"}, StatusOK)
	g := mustRestoreBytes(t, f)
	_ = g
}

func TestMaxHold_SemaphorePermit(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	r := v3apply(t, f, &index, Command{Type: TypeSemAcquireEx, Now: 1000, Lease: a, NewLease: true, TTL: 60_000, Name: "pool", Limit: 1, MaxHold: 1000}, StatusOK)
	first := r.Token
	v3apply(t, f, &index, Command{Type: TypeSemAcquireEx, Now: 1000, Lease: b, NewLease: true, TTL: 60_000, Name: "pool", Limit: 1, Wait: 30_000, MaxHold: 500}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeSemAcquire, Now: 1000, Lease: c, NewLease: true, TTL: 60_000, Name: "pool", Limit: 1, Wait: 30_000}, StatusQueued)
	mustRestoreBytes(t, f) // the waiter's maximum hold is in the snapshot
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 1999}, StatusOK)
	if p := f.Semaphore("pool").Permits; len(p) != 1 || p[0].Lease != a {
		t.Fatalf("before the maximum hold: %+v", p)
	}
	v3apply(t, f, &index, Command{Type: TypeTick, Now: 2000}, StatusOK)
	if p := f.Semaphore("pool").Permits; len(p) != 1 || p[0].Lease != b || p[0].Token <= first {
		t.Fatalf("after a's maximum hold: %+v", p)
	}
	g := mustRestoreBytes(t, f)
	g.ApplyCommand(index+1, &Command{Type: TypeTick, Now: 2500})
	if p := g.Semaphore("pool").Permits; len(p) != 1 || p[0].Lease != c {
		t.Fatalf("after b's maximum hold (restored): %+v", p)
	}
	v3apply(t, f, &index, Command{Type: TypeSemRelease, Now: 2000, Lease: a, Name: "pool", Token: first}, StatusNotHolder)
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
