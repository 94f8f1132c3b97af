package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// v2 returns a state machine at protocol version 2 (entry 1) with leases ids created at
// entries 2, 3, ... with a long TTL.
func v2(t *testing.T, ids ...LeaseID) *FSM {
	t.Helper()
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 2})
	for i, id := range ids {
		if r := f.ApplyCommand(uint64(2+i), &Command{Type: TypeCreateLease, Lease: id, TTL: 60_000}); r.Status != StatusOK {
			t.Fatalf("create lease: %s", r.Status)
		}
	}
	return f
}

// expect applies c at index and checks its status (and token, when want > 0).
func expect(t *testing.T, f *FSM, index uint64, c Command, st Status, token uint64) *Result {
	t.Helper()
	r := f.ApplyCommand(index, &c)
	if r.Status != st || token != 0 && r.Token != token {
		t.Fatalf("entry %d %s %q by %x: %s token %d, want %s token %d", index, c.Type, c.Name, c.Lease[0], r.Status, r.Token, st, token)
	}
	return r
}

// A lease that expires gives up, in the expiring entry, a shared grant, a permit and a
// leadership, each handed to its head waiter with that entry's index as token, and leaves
// every queue; a waiter whose lease expires in the same entry is skipped.
func TestFSM_PrimsLeaseExpiryHandsOverInOneEntry(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 2})
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	f.ApplyCommand(2, &Command{Type: TypeCreateLease, Now: 0, Lease: a, TTL: 1000})
	f.ApplyCommand(3, &Command{Type: TypeCreateLease, Now: 0, Lease: b, TTL: 1000})
	f.ApplyCommand(4, &Command{Type: TypeCreateLease, Now: 0, Lease: c, TTL: 5000})
	expect(t, f, 5, Command{Type: TypeAcquireShared, Lease: a, Name: "x"}, StatusOK, 5)
	expect(t, f, 6, Command{Type: TypeSemAcquire, Lease: a, Name: "x", Limit: 1}, StatusOK, 6)
	expect(t, f, 7, Command{Type: TypeCampaign, Lease: a, Name: "x", Value: "a"}, StatusOK, 7)
	for i, id := range []LeaseID{b, c} { // b expires with a; c outlives them
		f.ApplyCommand(uint64(8+3*i), &Command{Type: TypeAcquire, Lease: id, Name: "x", Wait: 60_000})
		f.ApplyCommand(uint64(9+3*i), &Command{Type: TypeSemAcquire, Lease: id, Name: "x", Limit: 1, Wait: 60_000})
		f.ApplyCommand(uint64(10+3*i), &Command{Type: TypeCampaign, Lease: id, Name: "x", Value: "v", Wait: 60_000})
	}
	f.ApplyCommand(14, &Command{Type: TypeTick, Now: 1000})
	if v := f.Lock("x"); v.Shared || v.Holder != c || v.Token != 14 || len(v.Waiters) != 0 {
		t.Fatalf("lock: %+v", v)
	}
	if v := f.Semaphore("x"); len(v.Permits) != 1 || v.Permits[0].Lease != c || v.Permits[0].Token != 14 || len(v.Waiters) != 0 {
		t.Fatalf("semaphore: %+v", v)
	}
	if v := f.Election("x"); v.Leader != c || v.Token != 14 || len(v.Candidates) != 0 {
		t.Fatalf("election: %+v", v)
	}
	checkPrimsConsistent(t, 14, f)
}

// At protocol version 1 every primitive command is refused and changes nothing but time:
// a version 1 node would halt on it.
func TestFSM_PrimsInactiveAtVersion1(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeCreateLease, Lease: LeaseID{1}, TTL: 60_000})
	before := f.SnapshotBytes()
	for i, c := range []Command{
		{Type: TypeAcquireShared, Lease: LeaseID{1}, Name: "x"},
		{Type: TypeSemAcquire, Lease: LeaseID{1}, Name: "x", Limit: 2},
		{Type: TypeSemRelease, Lease: LeaseID{1}, Name: "x", Token: 2},
		{Type: TypeSemDequeue, Lease: LeaseID{1}, Name: "x"},
		{Type: TypeCampaign, Lease: LeaseID{1}, Name: "x"},
		{Type: TypeResign, Lease: LeaseID{1}, Name: "x", Token: 2},
		{Type: TypeElectionDequeue, Lease: LeaseID{1}, Name: "x"},
	} {
		r := f.ApplyCommand(uint64(2+i), &c)
		if r.Status != StatusInvalid || !errors.Is(r.Err, ErrInactiveVersion) {
			t.Fatalf("%s at version 1: %s %v", c.Type, r.Status, r.Err)
		}
	}
	// Only the applied index moved (a one-byte varint either way), and the snapshot is
	// still format 1.
	if after := f.SnapshotBytes(); len(after) != len(before) || !bytes.HasPrefix(after, snapshotMagic) {
		t.Fatalf("refused commands changed the state: %x vs %x", before, after)
	}
	if f.Lock("x").Held || f.Semaphore("x").Limit != 0 || f.Election("x").Elected {
		t.Fatal("a refused command took effect")
	}
}

// primsState builds a state with every primitive in use: a lock held shared with a writer
// and readers queued, an exclusive lock with a shared waiter, a semaphore full with
// waiters, an election with candidates.
func primsState(t *testing.T) *FSM {
	t.Helper()
	ids := []LeaseID{{1}, {2}, {3}, {4}, {5}}
	f := v2(t, ids...) // entries 1-6
	i := uint64(7)
	apply := func(c Command) {
		f.ApplyCommand(i, &c)
		i++
	}
	apply(Command{Type: TypeAcquireShared, Lease: ids[0], Name: "shared", Owner: "r0"})
	apply(Command{Type: TypeAcquireShared, Lease: ids[1], Name: "shared", Owner: "r1"})
	apply(Command{Type: TypeAcquire, Lease: ids[2], Name: "shared", Wait: 50_000, Owner: "w"})
	apply(Command{Type: TypeAcquireShared, Lease: ids[3], Name: "shared", Wait: 40_000, Owner: "r3"})
	apply(Command{Type: TypeAcquire, Lease: ids[4], Name: "excl", Owner: "x"})
	apply(Command{Type: TypeAcquireShared, Lease: ids[0], Name: "excl", Wait: 45_000})
	apply(Command{Type: TypeAcquire, Lease: ids[1], Name: "excl", Wait: 45_000})
	apply(Command{Type: TypeSemAcquire, Lease: ids[0], Name: "sem", Limit: 2, Owner: "s0"})
	apply(Command{Type: TypeSemAcquire, Lease: ids[1], Name: "sem", Limit: 2})
	apply(Command{Type: TypeSemAcquire, Lease: ids[2], Name: "sem", Limit: 2, Wait: 30_000, Owner: "s2"})
	apply(Command{Type: TypeCampaign, Lease: ids[3], Name: "el", Value: "leader-value", Owner: "L"})
	apply(Command{Type: TypeCampaign, Lease: ids[4], Name: "el", Value: "cand", Wait: 20_000})
	apply(Command{Type: TypeCampaign, Lease: ids[0], Name: "el", Value: "cand2", Wait: 25_000})
	apply(Command{Type: TypeSemAcquire, Lease: ids[0], Name: "gone", Limit: 1})
	apply(Command{Type: TypeSemRelease, Lease: ids[0], Name: "gone", Token: i - 1})
	return f
}

// A snapshot taken with all three primitives in use restores byte for byte, and the
// restored state machine goes on exactly as the original: same results, same bytes.
func TestFSM_PrimsSnapshotRestoresByteForByte(t *testing.T) {
	f := primsState(t)
	snap := f.SnapshotBytes()
	g := New(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.SnapshotBytes(), snap) {
		t.Fatal("encode, restore, encode differs")
	}
	checkPrimsConsistent(t, 0, g)
	sum, err := InspectSnapshot(snap)
	if err != nil || sum.Format != 2 {
		t.Fatalf("inspect: %+v %v", sum, err)
	}
	// Both go on identically: releases, expiries and handovers from the restored queues.
	next := []Command{
		{Type: TypeRelease, Lease: LeaseID{1}, Name: "shared", Token: 7},
		{Type: TypeRelease, Lease: LeaseID{2}, Name: "shared", Token: 8},
		{Type: TypeRelease, Lease: LeaseID{5}, Name: "excl", Token: 11},
		{Type: TypeSemRelease, Lease: LeaseID{1}, Name: "sem", Token: 14},
		{Type: TypeResign, Lease: LeaseID{4}, Name: "el", Token: 17},
		{Type: TypeTick, Now: 35_000},
	}
	for k, c := range next {
		idx := uint64(100 + k)
		a, b := f.ApplyCommand(idx, &c), g.ApplyCommand(idx, &c)
		if a.Status != b.Status || a.Token != b.Token {
			t.Fatalf("entry %d %s: %+v vs restored %+v", idx, c.Type, a, b)
		}
		if !bytes.Equal(f.SnapshotBytes(), g.SnapshotBytes()) {
			t.Fatalf("after entry %d the restored copy differs", idx)
		}
		checkPrimsConsistent(t, idx, g)
	}
	if v := g.Lock("shared"); v.Holder != (LeaseID{3}) || v.Token != 101 {
		t.Fatalf("restored queue order: %+v", v)
	}
	if v := g.Lock("excl"); !v.Shared || v.Holder != (LeaseID{1}) || v.Token != 102 {
		t.Fatalf("restored shared waiter: %+v", v)
	}
	if v := g.Semaphore("sem"); v.Permits[1].Lease != (LeaseID{3}) || v.Permits[1].Token != 103 {
		t.Fatalf("restored semaphore queue: %+v", v)
	}
	if v := g.Election("el"); v.Leader != (LeaseID{5}) || v.Value != "cand" || v.Token != 104 {
		t.Fatalf("restored candidates: %+v", v)
	}
	// Every lease expires: everything is freed, identically.
	for _, h := range []*FSM{f, g} {
		h.ApplyCommand(200, &Command{Type: TypeTick, Now: 61_000})
	}
	if !bytes.Equal(f.SnapshotBytes(), g.SnapshotBytes()) || g.LockCount() != 0 || len(g.s.sems) != 0 || len(g.s.elections) != 0 {
		t.Fatal("after every lease expired the states differ or keep grants")
	}
}

// Snapshots that break the primitives' invariants are refused: a flipped byte anywhere in
// the primitives' part either fails to decode or is refused, never restored into a state
// that differs from its bytes.
func TestFSM_PrimsCorruptSnapshotsRefused(t *testing.T) {
	snap := primsState(t).SnapshotBytes()
	// The primitives' part is at the end; flip every byte of the last 300.
	for i := max(0, len(snap)-300); i < len(snap); i++ {
		bad := bytes.Clone(snap)
		bad[i] ^= 0x41
		g := New(nil)
		if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
			if !bytes.Equal(g.SnapshotBytes(), bad) {
				t.Fatalf("byte %d: a corrupt snapshot restored into other bytes", i)
			}
			checkPrimsConsistent(t, uint64(i), g)
		}
	}
}

// Every command of the primitives decodes to what was encoded.
func TestCommand_PrimsRoundTrip(t *testing.T) {
	g := newPGen(3, New(nil))
	seen := map[Type]bool{}
	for i := 0; i < 3000; i++ {
		c := g.next()
		seen[c.Type] = true
		got, err := DecodeCommand(c.Encode(nil))
		if err != nil {
			t.Fatalf("decode %+v: %v", c, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c) {
			t.Fatalf("round trip: %+v != %+v", got, c)
		}
	}
	for _, ty := range []Type{TypeAcquireShared, TypeSemAcquire, TypeSemRelease, TypeSemDequeue, TypeCampaign, TypeResign, TypeElectionDequeue} {
		if !seen[ty] {
			t.Errorf("the generator never wrote %s", ty)
		}
	}
	// A proclaim's token and a value survive too.
	c := Command{Type: TypeCampaign, Now: 9, Lease: LeaseID{7}, Name: "e", Value: "v\x00\n", Token: 1 << 40}
	if got, err := DecodeCommand(c.Encode(nil)); err != nil || fmt.Sprint(got) != fmt.Sprint(c) {
		t.Fatalf("campaign round trip: %+v %v", got, err)
	}
}

// withPrimitive returns a copy of primitives whose row named name is changed by edit.
// The copy has its own slices, so that an edit never reaches the real table.
func withPrimitive(t *testing.T, name string, edit func(p *primitive)) []primitive {
	t.Helper()
	prims := make([]primitive, len(primitives))
	found := false
	for i, p := range primitives {
		p.commands = append([]command(nil), p.commands...)
		p.sections = append([]section(nil), p.sections...)
		p.history = append([]historyKind(nil), p.history...)
		p.statuses = append([]statusName(nil), p.statuses...)
		if p.name == name {
			edit(&p)
			found = true
		}
		prims[i] = p
	}
	if !found {
		t.Fatalf("no primitive %s", name)
	}
	return prims
}

// TestTables_InitChecks runs the checks that init stops on over the real tables, which
// pass, and over tables with one row doubled or broken, which each check refuses with an
// error that names the row. The panics of init are those errors, so this is what keeps a
// type, snapshot place or history kind from being taken twice.
func TestTables_InitChecks(t *testing.T) {
	registryOf := func(core []command, prims []primitive) error {
		_, err := registry(core, prims)
		return err
	}
	sectionsOf := func(prims []primitive) error {
		_, err := sectionOrder(prims)
		return err
	}
	historyOf := func(prims []primitive) error {
		_, err := historyTable(prims)
		return err
	}
	coreWith := func(rows ...command) []command {
		return append(append([]command(nil), coreCommands...), rows...)
	}
	cases := []struct {
		name string
		err  func() error
		want string // a part of the error; empty: no error
	}{
		{"hooks of the real table", func() error { return checkHooks(primitives) }, ""},
		{"registry of the real tables", func() error { return registryOf(coreCommands, primitives) }, ""},
		{"sections of the real table", func() error { return sectionsOf(primitives) }, ""},
		{"history kinds of the real table", func() error { return historyOf(primitives) }, ""},
		{"statuses and spaces of the real table", func() error { return checkStatuses(primitives) }, ""},

		{"a primitive without dropOne", func() error {
			return checkHooks(withPrimitive(t, "election", func(p *primitive) { p.dropOne = nil }))
		}, "primitive election lacks a hook"},
		{"a core type taken twice", func() error {
			again := coreCommands[0]
			again.name = "again"
			return registryOf(coreWith(again), primitives)
		}, "command type 1 (again): taken twice, by create_lease too"},
		{"a primitive's type taken by a core row", func() error {
			return registryOf(coreWith(command{typ: semCommands[0].typ, name: "core", apply: (*state).tick}), primitives)
		}, "(" + semCommands[0].name + "): taken twice, by core too"},
		{"a type with the skippable flag", func() error {
			return registryOf(coreWith(command{typ: FlagSkippable, name: "flagged", apply: (*state).tick}), primitives)
		}, "command type 128 (flagged): out of range"},
		{"a type without a handler", func() error {
			return registryOf(coreWith(command{typ: FlagSkippable - 1, name: "idle"}), primitives)
		}, "command type 127 (idle): without a name or handler"},
		{"a snapshot place taken twice", func() error {
			return sectionsOf(withPrimitive(t, "election", func(p *primitive) {
				p.sections = append(p.sections, numberPart(2, 2, elecFreed))
			}))
		}, "snapshot part of election at version 2, place 2: taken twice, by semaphore too"},
		{"a history kind taken twice", func() error {
			return historyOf(withPrimitive(t, "semaphore", func(p *primitive) {
				p.history = []historyKind{{kind: HistoryMaxHold, name: "sem_max_hold", since: 3}}
			}))
		}, "history kind 9 (sem_max_hold) of semaphore: taken twice, by max_hold_ended too"},
		{"a primitive's status the core names", func() error {
			return checkStatuses(withPrimitive(t, "election", func(p *primitive) {
				p.statuses = append(p.statuses, statusName{StatusDeadlock, "held_deadlock"})
			}))
		}, "(held_deadlock) of election: the core's deadlock"},
		{"a status taken twice", func() error {
			return checkStatuses(withPrimitive(t, "election", func(p *primitive) {
				p.statuses = append(p.statuses, statusName{semStatuses[0].status, "full_too"})
			}))
		}, "(full_too) of election: taken twice, by semaphore too"},
		{"a row out of its place", func() error {
			return checkStatuses(withPrimitive(t, "election", func(p *primitive) { p.space = SpaceSemaphore }))
		}, "primitive election has space 1 at place 2 of the table"},
		{"a history kind out of range", func() error {
			return historyOf(withPrimitive(t, "lock", func(p *primitive) {
				p.history = append(p.history, historyKind{kind: historyKindEnd, name: "beyond", since: 3})
			}))
		}, "(beyond) of lock: out of range"},
	}
	for _, c := range cases {
		err := c.err()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
}

// TestTables_SectionOrder checks that the derived parts are those of the rows, every one
// once, in (since, order) order: the order the snapshot writes them in.
func TestTables_SectionOrder(t *testing.T) {
	parts, err := sectionOrder(primitives)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range primitives {
		n += len(p.sections)
	}
	if len(parts) != n || len(snapshotSections) != n {
		t.Fatalf("%d parts derived, %d in snapshotSections, %d in the rows", len(parts), len(snapshotSections), n)
	}
	for i := 1; i < len(parts); i++ {
		a, b := parts[i-1], parts[i]
		if a.since > b.since || a.since == b.since && a.order >= b.order {
			t.Errorf("part %d at (%d, %d) after (%d, %d)", i, b.since, b.order, a.since, a.order)
		}
	}
}
