package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

// One FIFO queue across modes: readers share; a queued writer holds later readers back;
// the last reader's release hands the lock to the writer, and the writer's release admits
// every reader queued behind it, all in one entry with that entry's index as token.
func TestFSM_SharedLockFIFOAcrossModes(t *testing.T) {
	r1, r2, w, r3, r4 := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}, LeaseID{5}
	f := v2(t, r1, r2, w, r3, r4) // entries 1-6
	sh := func(id LeaseID, wait int64) Command {
		return Command{Type: TypeAcquireShared, Lease: id, Name: "db", Wait: wait, Owner: "r"}
	}
	expect(t, f, 7, sh(r1, 0), StatusOK, 7)
	expect(t, f, 8, sh(r2, 0), StatusOK, 8)
	expect(t, f, 9, sh(r2, 0), StatusOK, 8) // idempotent
	if v := f.Lock("db"); !v.Shared || len(v.Holders) != 2 || v.Holder != r1 || v.Token != 8 {
		t.Fatalf("two readers: %+v", v)
	}
	expect(t, f, 10, Command{Type: TypeAcquire, Lease: w, Name: "db"}, StatusLockHeld, 0)
	expect(t, f, 11, Command{Type: TypeAcquire, Lease: r1, Name: "db"}, StatusModeConflict, 0)
	expect(t, f, 12, Command{Type: TypeAcquire, Lease: w, Name: "db", Wait: 30_000, Owner: "w"}, StatusQueued, 0)
	expect(t, f, 13, sh(w, 30_000), StatusModeConflict, 0) // waits exclusive already
	expect(t, f, 14, sh(r3, 0), StatusLockHeld, 0)         // a writer waits: no joining
	expect(t, f, 15, sh(r3, 30_000), StatusQueued, 0)
	expect(t, f, 16, sh(r4, 30_000), StatusQueued, 0)
	expect(t, f, 17, Command{Type: TypeRelease, Lease: r1, Name: "db", Token: 7}, StatusOK, 0)
	if v := f.Lock("db"); !v.Shared || len(v.Holders) != 1 || v.Holder != r2 {
		t.Fatalf("one reader left: %+v", v)
	}
	expect(t, f, 18, Command{Type: TypeRelease, Lease: r2, Name: "db", Token: 8}, StatusOK, 0)
	if v := f.Lock("db"); v.Shared || v.Holder != w || v.Token != 18 || len(v.Waiters) != 2 {
		t.Fatalf("the writer should hold db with token 18: %+v", v)
	}
	expect(t, f, 19, Command{Type: TypeRelease, Lease: w, Name: "db", Token: 18}, StatusOK, 0)
	v := f.Lock("db")
	if !v.Shared || len(v.Holders) != 2 || v.Holders[0].Lease != r3 || v.Holders[1].Lease != r4 || v.Holders[0].Token != 19 || v.Holders[1].Token != 19 || len(v.Waiters) != 0 {
		t.Fatalf("both queued readers should hold db with token 19: %+v", v)
	}
	// A waiting writer that gives up lets the readers behind it in at once.
	expect(t, f, 20, Command{Type: TypeAcquire, Lease: w, Name: "db", Wait: 30_000}, StatusQueued, 0)
	expect(t, f, 21, sh(r1, 30_000), StatusQueued, 0)
	expect(t, f, 22, Command{Type: TypeDequeue, Lease: w, Name: "db"}, StatusNotHolder, 0)
	if v := f.Lock("db"); len(v.Holders) != 3 || v.Holders[2].Lease != r1 || v.Holders[2].Token != 22 || len(v.Waiters) != 0 {
		t.Fatalf("the reader behind a writer that left should be admitted by entry 22: %+v", v)
	}
	// Nobody shares with an exclusive holder, queue or no queue.
	expect(t, f, 23, Command{Type: TypeAcquire, Lease: w, Name: "solo"}, StatusOK, 23)
	expect(t, f, 24, sh(r1, 0), StatusOK, 22) // (db: r1 already reads it)
	expect(t, f, 25, Command{Type: TypeAcquireShared, Lease: r1, Name: "solo"}, StatusLockHeld, 0)
	if v := f.Lock("solo"); v.Shared || len(v.Holders) != 1 {
		t.Fatalf("a shared grant beside an exclusive holder: %+v", v)
	}
}

// A semaphore: permits up to the first acquirer's limit, one per lease, a conflicting limit
// refused, FIFO waiting, and a released permit granted to the head waiter in the same
// entry. Unused, it is deleted and its next acquirer sets a new limit.
func TestFSM_SemaphoreLimitAndHandover(t *testing.T) {
	a, b, c, d := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}
	f := v2(t, a, b, c, d) // entries 1-5
	acq := func(id LeaseID, wait int64) Command {
		return Command{Type: TypeSemAcquire, Lease: id, Name: "pool", Limit: 2, Wait: wait}
	}
	expect(t, f, 6, acq(a, 0), StatusOK, 6)
	expect(t, f, 7, acq(a, 0), StatusOK, 6) // one permit per lease
	expect(t, f, 8, acq(b, 0), StatusOK, 8)
	expect(t, f, 9, acq(c, 0), StatusSemaphoreFull, 0)
	if r := expect(t, f, 10, Command{Type: TypeSemAcquire, Lease: c, Name: "pool", Limit: 3}, StatusLimitConflict, 0); r.Limit != 2 {
		t.Fatalf("limit conflict reports limit %d", r.Limit)
	}
	expect(t, f, 11, acq(c, 30_000), StatusQueued, 0)
	expect(t, f, 12, acq(d, 30_000), StatusQueued, 0)
	if v := f.Semaphore("pool"); v.Limit != 2 || len(v.Permits) != 2 || len(v.Waiters) != 2 || v.Waiters[0] != c {
		t.Fatalf("full semaphore: %+v", v)
	}
	expect(t, f, 13, Command{Type: TypeSemRelease, Lease: a, Name: "pool", Token: 5}, StatusNotHolder, 0)
	expect(t, f, 14, Command{Type: TypeSemRelease, Lease: a, Name: "pool", Token: 6}, StatusOK, 0)
	v := f.Semaphore("pool")
	if len(v.Permits) != 2 || v.Permits[1].Lease != c || v.Permits[1].Token != 14 || len(v.Waiters) != 1 || v.ModifyIndex != 14 {
		t.Fatalf("the head waiter should hold a permit with token 14: %+v", v)
	}
	for i, id := range []LeaseID{b, c, d} {
		f.ApplyCommand(uint64(15+i), &Command{Type: TypeRevoke, Lease: id})
	}
	if v := f.Semaphore("pool"); v.Limit != 0 || len(v.Permits) != 0 || v.ModifyIndex != 17 {
		t.Fatalf("unused semaphore: %+v", v)
	}
	if n := len(f.s.sems); n != 0 {
		t.Fatalf("%d semaphores kept after the last permit went", n)
	}
	expect(t, f, 18, Command{Type: TypeSemAcquire, Lease: a, Name: "pool", Limit: 5}, StatusOK, 18)
}

// An election: the first campaign leads; the leader's lease proclaims (same token, new
// value, modify index moves); another campaign is refused or queues; resigning elects the
// head candidate with its own value in the same entry.
func TestFSM_ElectionCampaignProclaimResign(t *testing.T) {
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	f := v2(t, a, b, c) // entries 1-4
	expect(t, f, 5, Command{Type: TypeCampaign, Lease: a, Name: "svc", Value: "a1", Owner: "A"}, StatusOK, 5)
	expect(t, f, 6, Command{Type: TypeCampaign, Lease: b, Name: "svc", Value: "b1"}, StatusElectionHeld, 0)
	if r := expect(t, f, 7, Command{Type: TypeCampaign, Lease: a, Name: "svc", Value: "a2", Token: 5}, StatusOK, 5); r.Value != "a2" || r.Modify != 7 {
		t.Fatalf("proclaim: %+v", r)
	}
	expect(t, f, 8, Command{Type: TypeCampaign, Lease: a, Name: "svc", Value: "a3", Token: 4}, StatusNotHolder, 0)
	expect(t, f, 9, Command{Type: TypeCampaign, Lease: b, Name: "svc", Value: "b1", Token: 5}, StatusNotHolder, 0)
	expect(t, f, 10, Command{Type: TypeCampaign, Lease: b, Name: "svc", Value: "b1", Owner: "B", Wait: 30_000}, StatusQueued, 0)
	expect(t, f, 11, Command{Type: TypeCampaign, Lease: c, Name: "svc", Value: "c1", Wait: 30_000}, StatusQueued, 0)
	if v := f.Election("svc"); !v.Elected || v.Leader != a || v.Value != "a2" || v.Token != 5 || len(v.Candidates) != 2 || v.ModifyIndex != 11 {
		t.Fatalf("election: %+v", v)
	}
	expect(t, f, 12, Command{Type: TypeResign, Lease: a, Name: "svc", Token: 5}, StatusOK, 0)
	if v := f.Election("svc"); v.Leader != b || v.Value != "b1" || v.Owner != "B" || v.Token != 12 || v.ModifyIndex != 12 {
		t.Fatalf("the head candidate should lead with token 12 and its value: %+v", v)
	}
	expect(t, f, 13, Command{Type: TypeRevoke, Lease: b}, StatusOK, 0)
	if v := f.Election("svc"); v.Leader != c || v.Value != "c1" || v.Token != 13 {
		t.Fatalf("revoking the leader elects the next candidate in the same entry: %+v", v)
	}
	expect(t, f, 14, Command{Type: TypeResign, Lease: c, Name: "svc", Token: 13}, StatusOK, 0)
	if v := f.Election("svc"); v.Elected || v.ModifyIndex != 14 || len(f.s.elections) != 0 {
		t.Fatalf("no leader, no candidate: %+v", v)
	}
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
