package fsm

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

func TestFSM_RandomSequencesMatchModel(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runRandom(t, seed, 4000) })
	}
}

func runRandom(t *testing.T, seed int64, steps int, opts ...func(*gen)) {
	var events []Event
	f := New(func(e Event) { events = append(events, e) })
	replica := New(nil)
	var restored *FSM
	m := newModel()
	g := newGen(seed, func(name string) uint64 { return f.Lock(name).Token })
	for _, o := range opts {
		o(g)
	}
	lastToken := map[string]uint64{}
	restoreAt := uint64(steps / 3)
	sc := newStepChecks()

	for index := uint64(1); index <= uint64(steps); index++ {
		c := g.next()
		before := map[LeaseID]LeaseView{}
		for _, id := range g.ids {
			if v, ok := f.Lease(id); ok {
				before[id] = v
			}
		}
		events = events[:0]
		sc.before(f, g)
		got := f.ApplyCommand(index, &c)
		replica.ApplyCommand(index, &c)
		if restored != nil {
			restored.ApplyCommand(index, &c)
		}
		want := m.apply(index, &c)
		if got.Status != want || got.Quota != m.quota {
			t.Fatalf("step %d %s: status %s %q, model says %s %q", index, c.Type, got.Status, got.Quota, want, m.quota)
		}
		sc.after(t, index, &c, got, f, g)
		if got.Status == StatusOK && c.Type == TypeAcquire && m.locks[c.Name].token == index && got.Token != index {
			t.Fatalf("step %d: fresh grant token %d, want the entry's index", index, got.Token)
		}
		checkAgainstModel(t, index, f, m, g)
		checkIndexAgainstModel(t, index, f, m)
		checkACLAgainstModel(t, index, f, &m.acl, &g.acl)
		if restored != nil {
			checkIndexAgainstModel(t, index, restored, m)
			checkACLAgainstModel(t, index, restored, &m.acl, &g.acl)
		}
		if isACL(c.Type) && index%16 == 0 {
			checkACLRestore(t, index, f, &m.acl, &g.acl)
		}

		// Invariant 2: a token changes only to the index of the entry that granted it.
		for _, name := range g.names {
			v := f.Lock(name)
			if v.Held && v.Token != lastToken[name] {
				if v.Token != index || v.Token <= lastToken[name] {
					t.Fatalf("step %d: lock %q token moved %d -> %d", index, name, lastToken[name], v.Token)
				}
				lastToken[name] = v.Token
			}
		}
		for _, e := range events {
			if e.Kind != EventGranted {
				continue
			}
			// Expiry may hand a lock to a waiter that the command of the same entry then
			// revokes; otherwise the granted lease holds the lock after the entry.
			revokedNow := c.Type == TypeRevoke && c.Lease == e.Lease
			if e.Token != index || e.Index != index || (f.Lock(e.Name).Holder != e.Lease && !revokedNow) {
				t.Fatalf("step %d (%s %+v): grant event %+v does not match state %+v", index, c.Type, c, e, f.Lock(e.Name))
			}
		}
		// Invariant 3 (state machine half): a lease that was not revoked disappears only once
		// cluster time has reached its deadline.
		for id, v := range before {
			if _, ok := f.Lease(id); !ok && !(c.Type == TypeRevoke && c.Lease == id) && f.Time() < v.Deadline {
				t.Fatalf("step %d: lease %s expired at %d before its deadline %d", index, id, f.Time(), v.Deadline)
			}
		}
		if index == restoreAt {
			restored = New(nil)
			if err := restored.Restore(io.NopCloser(bytes.NewReader(f.SnapshotBytes()))); err != nil {
				t.Fatalf("restore: %v", err)
			}
		}
	}
	// Invariant 6: the same log gives the same bytes, replayed or restored midway.
	want := f.SnapshotBytes()
	if !bytes.Equal(want, replica.SnapshotBytes()) {
		t.Fatal("replica replaying the same log has different snapshot bytes")
	}
	if !bytes.Equal(want, restored.SnapshotBytes()) {
		t.Fatal("replica restored from a snapshot midway has different snapshot bytes")
	}
}

func checkAgainstModel(t *testing.T, index uint64, f *FSM, m *model, g *gen) {
	t.Helper()
	if f.Time() != m.time {
		t.Fatalf("step %d: time %d, model %d", index, f.Time(), m.time)
	}
	holders := map[LeaseID][]string{}
	for _, name := range g.names {
		v := f.Lock(name)
		mk := m.locks[name]
		if v.Held != (mk != nil) {
			t.Fatalf("step %d: lock %q held=%v, model %v", index, name, v.Held, mk != nil)
		}
		if mk == nil {
			if len(v.Waiters) != 0 {
				t.Fatalf("step %d: free lock %q has waiters", index, name)
			}
			continue
		}
		var mw []LeaseID
		for _, w := range mk.queue {
			mw = append(mw, w.lease)
		}
		if v.Holder != mk.holder || v.Token != mk.token || v.Owner != mk.owner || !slices.Equal(v.Waiters, mw) {
			t.Fatalf("step %d: lock %q = %+v, model %+v", index, name, v, *mk)
		}
		if v.ModifyIndex < v.Token || v.ModifyIndex > index {
			t.Fatalf("step %d: lock %q modify index %d out of [token %d, index]", index, name, v.ModifyIndex, v.Token)
		}
		holders[v.Holder] = append(holders[v.Holder], name)
	}
	for _, id := range g.ids {
		v, ok := f.Lease(id)
		ml := m.leases[id]
		if ok != (ml != nil) {
			t.Fatalf("step %d: lease %s exists=%v, model %v", index, id, ok, ml != nil)
		}
		if !ok {
			if len(holders[id]) != 0 {
				t.Fatalf("step %d: missing lease %s holds %v", index, id, holders[id])
			}
			continue
		}
		// Invariant 1: each lock has one holder, and the holder's lease agrees.
		if v.Deadline != ml.deadline || v.TTL != ml.ttl || !slices.Equal(v.Locks, holders[id]) {
			t.Fatalf("step %d: lease %s = %+v, model %+v holding %v", index, id, v, *ml, holders[id])
		}
	}
}

func TestFSM_HandoverInOneEntryWithHigherToken(t *testing.T) {
	f := New(nil)
	a, b := LeaseID{1}, LeaseID{2}
	f.ApplyCommand(1, &Command{Type: TypeCreateLease, Now: 0, Lease: a, TTL: 10_000})
	f.ApplyCommand(2, &Command{Type: TypeCreateLease, Now: 0, Lease: b, TTL: 10_000})
	r := f.ApplyCommand(3, &Command{Type: TypeAcquire, Now: 10, Lease: a, Name: "card/42", Owner: "A"})
	if r.Status != StatusOK || r.Token != 3 {
		t.Fatalf("first acquire = %+v", r)
	}
	if r := f.ApplyCommand(4, &Command{Type: TypeAcquire, Now: 20, Lease: b, Name: "card/42"}); r.Status != StatusLockHeld {
		t.Fatalf("acquire without wait on a held lock = %s, want lock_held", r.Status)
	}
	if r := f.ApplyCommand(5, &Command{Type: TypeAcquire, Now: 30, Lease: b, Name: "card/42", Wait: 5000, Owner: "B"}); r.Status != StatusQueued {
		t.Fatalf("acquire with wait = %s, want queued", r.Status)
	}
	if r := f.ApplyCommand(6, &Command{Type: TypeRelease, Now: 40, Lease: a, Name: "card/42", Token: 2}); r.Status != StatusNotHolder {
		t.Fatalf("release with a stale token = %s, want not_holder", r.Status)
	}
	if r := f.ApplyCommand(7, &Command{Type: TypeRelease, Now: 50, Lease: a, Name: "card/42", Token: 3}); r.Status != StatusOK {
		t.Fatalf("release = %s", r.Status)
	}
	v := f.Lock("card/42")
	if v.Holder != b || v.Token != 7 || v.Owner != "B" || v.ModifyIndex != 7 {
		t.Fatalf("after release the waiter should hold it with token 7: %+v", v)
	}
}

func TestFSM_FreeLockTakesNoMemory(t *testing.T) {
	f := New(nil)
	a := LeaseID{1}
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Lease: a, NewLease: true, TTL: 1000, Name: "x"})
	f.ApplyCommand(2, &Command{Type: TypeRelease, Lease: a, Name: "x", Token: 1})
	if n := len(f.s.locks); n != 0 {
		t.Fatalf("%d lock entries remain after the only holder released", n)
	}
	if v := f.Lock("x"); v.Held || v.ModifyIndex != 2 {
		t.Fatalf("free lock view = %+v, want modify index 2", v)
	}
}

func TestFSM_HeldAcquireWithNewLeaseLeavesNothing(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Name: "x"})
	r := f.ApplyCommand(2, &Command{Type: TypeAcquire, Lease: LeaseID{2}, NewLease: true, TTL: 1000, Name: "x"})
	if r.Status != StatusLockHeld {
		t.Fatalf("status %s", r.Status)
	}
	if _, ok := f.Lease(LeaseID{2}); ok {
		t.Fatal("a refused one-shot acquire created its lease anyway")
	}
}

func TestFSM_ExpiryNeverHandsToALeaseExpiringInTheSameEntry(t *testing.T) {
	f := New(nil)
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 0, Lease: a, NewLease: true, TTL: 1000, Name: "x"})
	f.ApplyCommand(2, &Command{Type: TypeAcquire, Now: 0, Lease: b, NewLease: true, TTL: 1000, Name: "x", Wait: 60_000})
	f.ApplyCommand(3, &Command{Type: TypeAcquire, Now: 500, Lease: c, NewLease: true, TTL: 5000, Name: "x", Wait: 60_000})
	f.ApplyCommand(4, &Command{Type: TypeTick, Now: 1000})
	if v := f.Lock("x"); v.Holder != c || v.Token != 4 {
		t.Fatalf("after a and b expire together, c should hold x with token 4: %+v", v)
	}
}

func TestFSM_InvalidEntriesChangeNothing(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 5, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Name: "x"})
	before := f.SnapshotBytes()
	for i, data := range [][]byte{nil, {0}, {200}, {byte(TypeAcquire)}, {byte(TypeRelease), 1, 2}, append((&Command{Type: TypeTick, Now: 9}).Encode(nil), 7)} {
		r := f.Apply(&raft.Log{Index: uint64(10 + i), Type: raft.LogCommand, Data: data}).(*Result)
		if r.Status != StatusInvalid || r.Err == nil {
			t.Fatalf("entry %x: status %s err %v, want invalid", data, r.Status, r.Err)
		}
	}
	after := f.SnapshotBytes()
	// Only the applied index moves.
	if f.Time() != 5 || len(after) != len(before) {
		t.Fatalf("an invalid entry changed the state")
	}
	if r := f.Apply(&raft.Log{Index: 20, Type: raft.LogCommand, Data: []byte{byte(FlagSkippable | 0x70), 0x80, 0x01, 0xFF}}).(*Result); r.Status != StatusSkipped || f.Time() != 128 {
		t.Fatalf("skippable unknown command: status %s time %d", r.Status, f.Time())
	}
}

func TestFSM_RestoreRefusesCorruptSnapshots(t *testing.T) {
	f := New(nil)
	runInto(f, 7, 500)
	good := f.SnapshotBytes()
	for cut := 0; cut < len(good); cut += 1 + len(good)/97 {
		g := New(nil)
		if err := g.Restore(io.NopCloser(bytes.NewReader(good[:cut]))); err == nil && cut < len(good) {
			t.Fatalf("restore of a snapshot cut at %d/%d succeeded", cut, len(good))
		}
	}
}

func runInto(f *FSM, seed int64, steps int) {
	g := newGen(seed, func(name string) uint64 { return f.Lock(name).Token })
	for i := uint64(1); i <= uint64(steps); i++ {
		c := g.next()
		f.ApplyCommand(i, &c)
	}
}

func TestCommand_RoundTrip(t *testing.T) {
	g := newGen(3, func(string) uint64 { return 77 })
	for i := 0; i < 2000; i++ {
		c := g.next()
		got, err := DecodeCommand(c.Encode(nil))
		if err != nil {
			t.Fatalf("decode %+v: %v", c, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c) {
			t.Fatalf("round trip: %+v != %+v", got, c)
		}
	}
}

func FuzzDecodeCommand(f *testing.F) {
	g := newGen(5, func(string) uint64 { return 9 })
	for i := 0; i < 30; i++ {
		c := g.next()
		f.Add(c.Encode(nil))
	}
	f.Add([]byte{byte(TypeRegisterNode), 0, 2, 'n', '1', 0, 0})
	for _, c := range versionCommands() {
		f.Add(c.Encode(nil))
	}
	pg := newPGen(5, New(nil))
	for i := 0; i < 40; i++ {
		c := pg.next()
		f.Add(c.Encode(nil))
	}
	for _, c := range v3Seeds(f, 60) { // locksets, maximum holds, lock delays (version 3)
		f.Add(c.Encode(nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes to the same command, and
		// applying it never panics.
		again, err := DecodeCommand(c.Encode(nil))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(c) {
			t.Fatalf("re-encode mismatch: %+v vs %+v (%v)", c, again, err)
		}
		New(nil).Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
	})
}

func FuzzRestore(f *testing.F) {
	s := New(nil)
	runInto(s, 11, 300)
	f.Add(s.SnapshotBytes())
	for i, c := range versionCommands() {
		s.ApplyCommand(uint64(301+i), &c)
	}
	f.Add(s.SnapshotBytes())                        // format 2, with limits, node versions and ACLs
	f.Add(primsState(&testing.T{}).SnapshotBytes()) // format 2, with every primitive in use
	f.Add(v3Sample(f, 600).SnapshotBytes())         // version 3: reserved and delayed locks, holds, waiting sets
	f.Add(refusedAt(f, 8).SnapshotBytes())          // version 8: a refusal's cycle kept as its steps
	f.Fuzz(func(t *testing.T, data []byte) {
		g := New(nil)
		if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			return
		}
		// A snapshot that restores is a consistent state: it re-encodes identically.
		if !bytes.Equal(g.SnapshotBytes(), data) {
			t.Fatal("restored state re-encodes differently")
		}
	})
}

// TestFSM_RandomACLMatchesModel runs the randomized test at version 2 from the first entry
// and with many ACL commands, so that policies and tokens pile up, overlap and change
// under the tokens that hold them.
func TestFSM_RandomACLMatchesModel(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runRandom(t, seed, 3000, func(g *gen) { g.startV2, g.aclRate = true, 400 })
		})
	}
}
