package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

// TestHistory_EvictsLeastRecentlyActive lowers the bound and checks that eviction drops
// the least recently active lock, and that a node restored from a snapshot in the middle
// evicts exactly as one that applied everything (same bytes at the end).
func TestHistory_EvictsLeastRecentlyActive(t *testing.T) {
	mk := func() *FSM {
		f := New(nil)
		f.s.hist.maxLocks = 4
		return f
	}
	f := mk()
	index := uint64(1)
	f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: 2, Now: 1})
	var id LeaseID
	id[0] = 1
	index++
	f.ApplyCommand(index, &Command{Type: TypeCreateLease, Now: 1, Lease: id, TTL: 60_000})
	step := func(f *FSM, name string) {
		index++
		f.ApplyCommand(index, &Command{Type: TypeAcquire, Now: int64(index), Lease: id, Name: name})
	}
	for i := 0; i < 4; i++ {
		step(f, fmt.Sprintf("l%d", i))
	}
	// Touch l0 again (a second acquire is idempotent and records nothing, so release it).
	index++
	f.ApplyCommand(index, &Command{Type: TypeRelease, Now: int64(index), Lease: id, Name: "l0", Token: 3})
	g := mk()
	if err := g.Restore(nopReader(f.SnapshotBytes())); err != nil {
		t.Fatal(err)
	}
	g.s.hist.maxLocks = 4
	saved := index
	step(f, "l4")
	index = saved
	step(g, "l4")
	for _, x := range []*FSM{f, g} {
		if x.History("l1") != nil || x.History("l0") == nil || x.HistoryCount() != 4 {
			t.Fatalf("evicted the wrong lock: l1 %v, l0 %v, %d histories", x.History("l1"), x.History("l0"), x.HistoryCount())
		}
	}
	if !bytes.Equal(f.SnapshotBytes(), g.SnapshotBytes()) {
		t.Fatal("restored node evicts differently")
	}
}

type nopCloserReader struct{ *bytes.Reader }

func (nopCloserReader) Close() error { return nil }

func nopReader(b []byte) nopCloserReader { return nopCloserReader{bytes.NewReader(b)} }

// TestHistory_SharesPerIdentity: from version 5 the history bound is shared between
// identities. One token's churn of new names evicts its own histories, never another
// identity's while that one has fewer; an identity with more than its fair share (the
// bound over the identities with a history) gives way to one with less; and a node
// restored from a snapshot evicts alike (the owners are in the snapshot). At version 4 the
// same churn evicts the victim's history, which is what the shares are for.
func TestHistory_SharesPerIdentity(t *testing.T) {
	const bound = 10
	run := func(t *testing.T, version uint64) (victim bool, f *FSM) {
		w := newOwnerWorld(t)
		if version > 4 {
			w.must(StatusOK, Command{Type: TypeSetVersion, Version: version})
		}
		w.f.s.hist.maxLocks = bound
		w.must(StatusOK, Command{Type: TypeAcquire, Lease: leaseN(1), NewLease: true, TTL: 600_000, Name: "b/victim", Creator: "bb"})
		for i := 0; i < 5*bound; i++ {
			w.now++
			name := fmt.Sprintf("a/%d", i)
			w.must(StatusOK, Command{Type: TypeAcquire, Lease: leaseN(2), NewLease: true, TTL: 600_000, Name: name, Creator: "aa"})
			w.must(StatusOK, Command{Type: TypeRelease, Lease: leaseN(2), Name: name, Token: w.index, Creator: "aa"})
		}
		if n := w.f.HistoryCount(); n != bound {
			t.Fatalf("version %d: %d histories, bound %d", version, n, bound)
		}
		return w.f.History("b/victim") != nil, w.f
	}
	if kept, _ := run(t, 4); kept {
		t.Fatal("version 4 kept the victim's history under another token's churn: the test shows nothing")
	}
	if kept, _ := run(t, 5); !kept {
		t.Fatal("version 5: another token's churn evicted the victim's history")
	}

	// An identity over its fair share gives way: bb makes 8 histories, then aa churns; bb
	// keeps its fair share (bound / 2), its most recent ones.
	w := quotaWorld(t)
	w.f.s.hist.maxLocks = bound
	for i := 0; i < 8; i++ {
		w.must(StatusOK, Command{Type: TypeAcquire, Lease: leaseN(1), NewLease: true, TTL: 600_000, Name: fmt.Sprintf("b/%d", i), Creator: "bb"})
	}
	var g *FSM // a node restored from a snapshot midway, fed the rest of the log
	both := func(c Command) {
		w.must(StatusOK, c)
		if g != nil {
			c.Now = w.now
			g.ApplyCommand(w.index, &c)
		}
	}
	for i := 0; i < 3*bound; i++ {
		name := fmt.Sprintf("a/%d", i)
		both(Command{Type: TypeAcquire, Lease: leaseN(2), NewLease: true, TTL: 600_000, Name: name, Creator: "aa"})
		both(Command{Type: TypeRelease, Lease: leaseN(2), Name: name, Token: w.index, Creator: "aa"})
		if i == bound {
			g = New(nil)
			if err := g.Restore(nopReader(w.f.SnapshotBytes())); err != nil {
				t.Fatal(err)
			}
			g.s.hist.maxLocks = bound
		}
	}
	var bs int
	for i := 0; i < 8; i++ {
		if w.f.History(fmt.Sprintf("b/%d", i)) != nil {
			bs++
			if i < 8-bound/2 {
				t.Errorf("bb kept b/%d, one of its oldest", i)
			}
		}
	}
	if bs != bound/2 {
		t.Fatalf("bb keeps %d histories, its fair share is %d", bs, bound/2)
	}
	if !bytes.Equal(w.f.SnapshotBytes(), g.SnapshotBytes()) {
		t.Fatal("a restored node evicts differently")
	}
}
