package fsm

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// checkNoExtra fails when anything has written to noExtra, the empty extra part that ro
// hands out for every lock without one of its own: a write through ro instead of rw would
// give every small lock that waiter, reader or delay at once. The property tests call it
// after every step.
func checkNoExtra(t *testing.T, step uint64) {
	t.Helper()
	if noExtra != (lockExtra{}) {
		t.Fatalf("step %d: the shared empty extra part of locks was written: %+v", step, noExtra)
	}
}

// TestLockExtra_SmallLockHasNone checks the point of the split: a lock taken exclusive
// with nobody waiting, by a lock delay-free grant, has no extra part, and one whose queue
// has emptied again is back to none.
func TestLockExtra_SmallLockHasNone(t *testing.T) {
	f := New(nil)
	a, b := LeaseID{1}, LeaseID{2}
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 1, Lease: a, NewLease: true, TTL: 60_000, Name: "x"})
	if lk := f.s.locks["x"]; lk == nil || lk.x != nil {
		t.Fatalf("an exclusive lock with nobody waiting has an extra part: %+v", lk)
	}
	f.ApplyCommand(2, &Command{Type: TypeAcquire, Now: 1, Lease: b, NewLease: true, TTL: 60_000, Name: "x", Wait: 30_000})
	if lk := f.s.locks["x"]; lk.ro().queue.len != 1 || lk.x == nil {
		t.Fatalf("the waiter is not queued in the lock's extra part: %+v", lk)
	}
	r := f.ApplyCommand(3, &Command{Type: TypeRelease, Now: 1, Lease: a, Name: "x", Token: 1})
	if r.Status != StatusOK {
		t.Fatalf("release: %v", r.Status)
	}
	lk := f.s.locks["x"]
	if lk == nil || lk.holder != b || lk.token != 3 {
		t.Fatalf("lock not handed to the waiter at 3: %+v", lk)
	}
	if lk.x != nil {
		t.Fatalf("the lock keeps an empty extra part after its queue emptied: %+v", lk.x)
	}
	checkNoExtra(t, 3)
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

// listPrefixes and listAfters are the listing queries checked against the model after
// every step: prefixes that match all, some, one or none of the generator's names, and
// cursors before, on, between and after them.
var (
	listPrefixes = []string{"", "a", "accounts/", "accounts/A", "accounts/B/", "b", "z", "z/\u00e9", "~"}
	listAfters   = []string{"", "a", "accounts", "accounts/A", "accounts/AA", "accounts/B", "m", "z/\u00e9", "~"}
)

// checkIndexAgainstModel checks the derived structures (the lock name index and the
// linked wait queues) after a step: the name index holds exactly the held locks, every queue is a well-formed list in the model's
// order and agrees with its leases' waiting maps, and listing pages match the model.
func checkIndexAgainstModel(t *testing.T, index uint64, f *FSM, m *model) {
	t.Helper()
	checkNoExtra(t, index)
	want := m.lockNames()
	var got []string
	f.s.names.Ascend(func(n string) bool { got = append(got, n); return true })
	if !slices.Equal(got, want) || f.s.names.Len() != len(f.s.locks) {
		t.Fatalf("step %d: name index %q (len %d, %d locks), model holds %q", index, got, f.s.names.Len(), len(f.s.locks), want)
	}

	queued := 0
	for name, lk := range f.s.locks {
		var order []LeaseID
		var prev *waiter
		for w := lk.ro().queue.head; w != nil; w = w.next {
			if w.prev != prev {
				t.Fatalf("step %d: lock %q queue has a broken back link at %s", index, name, w.lease)
			}
			if l := f.s.leases[w.lease]; l == nil || l.waiting[name] != w {
				t.Fatalf("step %d: lock %q waiter %s is not its lease's waiting entry", index, name, w.lease)
			}
			order = append(order, w.lease)
			prev = w
		}
		if lk.ro().queue.tail != prev || lk.ro().queue.len != len(order) {
			t.Fatalf("step %d: lock %q queue tail or length (%d) does not match its %d nodes", index, name, lk.ro().queue.len, len(order))
		}
		var mw []LeaseID
		for _, w := range m.locks[name].queue {
			mw = append(mw, w.lease)
		}
		if !slices.Equal(order, mw) {
			t.Fatalf("step %d: lock %q queue %v, model %v", index, name, order, mw)
		}
		queued += len(order)
	}
	waiting := 0
	for _, l := range f.s.leases {
		waiting += len(l.waiting)
	}
	if waiting != queued {
		t.Fatalf("step %d: leases wait %d times but queues hold %d waiters", index, waiting, queued)
	}

	for _, prefix := range listPrefixes {
		var match []string
		for _, n := range want {
			if strings.HasPrefix(n, prefix) {
				match = append(match, n)
			}
		}
		// Walking the pages with the cursor gives every match once, in order.
		for _, limit := range []int{0, 1, 2, 3} {
			var walked []string
			after := ""
			for page := 0; ; page++ {
				views, truncated := f.Locks(prefix, after, limit)
				if views == nil || (limit > 0 && len(views) > limit) || page > len(want) {
					t.Fatalf("step %d: Locks(%q, %q, %d) = %d views (nil=%v) on page %d", index, prefix, after, limit, len(views), views == nil, page)
				}
				for _, v := range views {
					walked = append(walked, v.Name)
					if w := f.Lock(v.Name); v.Holder != w.Holder || v.Token != w.Token || v.ModifyIndex != w.ModifyIndex || !slices.Equal(v.Waiters, w.Waiters) {
						t.Fatalf("step %d: listed %+v, Lock says %+v", index, v, f.Lock(v.Name))
					}
				}
				if !truncated {
					break
				}
				if len(views) == 0 {
					t.Fatalf("step %d: Locks(%q, %q, %d) is truncated but empty", index, prefix, after, limit)
				}
				after = views[len(views)-1].Name
			}
			if !slices.Equal(walked, match) {
				t.Fatalf("step %d: pages of Locks(%q, limit %d) = %q, model %q", index, prefix, limit, walked, match)
			}
		}
		// Any cursor, in the set or not, starts strictly after itself.
		for _, after := range listAfters {
			var rest []string
			for _, n := range match {
				if n > after {
					rest = append(rest, n)
				}
			}
			views, truncated := f.Locks(prefix, after, 1)
			if len(views) != min(len(rest), 1) || (len(views) == 1 && views[0].Name != rest[0]) || truncated != (len(rest) > 1) {
				t.Fatalf("step %d: Locks(%q, %q, 1) = %v truncated=%v, model rest %q", index, prefix, after, names(views), truncated, rest)
			}
		}
	}
}

func names(views []LockView) []string {
	out := make([]string, len(views))
	for i, v := range views {
		out[i] = v.Name
	}
	return out
}

func TestFSM_LocksPages(t *testing.T) {
	f := New(nil)
	if views, truncated := f.Locks("", "", 10); views == nil || len(views) != 0 || truncated {
		t.Fatalf("empty state: %v truncated=%v, want an empty non-nil page", views, truncated)
	}
	index := uint64(0)
	for _, n := range []string{"b/2", "a", "b/1", "b/3", "c", "b"} {
		index++
		f.ApplyCommand(index, &Command{Type: TypeAcquire, Lease: LeaseID{byte(index)}, NewLease: true, TTL: 10_000, Name: n})
	}
	for _, c := range []struct {
		prefix, after string
		limit         int
		want          []string
		truncated     bool
	}{
		{"", "", 0, []string{"a", "b", "b/1", "b/2", "b/3", "c"}, false},
		{"", "", -1, []string{"a", "b", "b/1", "b/2", "b/3", "c"}, false},
		{"", "", 6, []string{"a", "b", "b/1", "b/2", "b/3", "c"}, false},
		{"", "", 5, []string{"a", "b", "b/1", "b/2", "b/3"}, true},
		{"b/", "", 2, []string{"b/1", "b/2"}, true},
		{"b/", "b/2", 2, []string{"b/3"}, false},
		{"b/", "b/1x", 1, []string{"b/2"}, true}, // a cursor that is not a lock name
		{"b/", "a", 0, []string{"b/1", "b/2", "b/3"}, false},
		{"b/", "b/3", 0, []string{}, false},
		{"b/", "c", 0, []string{}, false},
		{"b", "", 0, []string{"b", "b/1", "b/2", "b/3"}, false},
		{"d", "", 0, []string{}, false},
	} {
		views, truncated := f.Locks(c.prefix, c.after, c.limit)
		if !slices.Equal(names(views), c.want) || truncated != c.truncated {
			t.Errorf("Locks(%q, %q, %d) = %q truncated=%v, want %q truncated=%v", c.prefix, c.after, c.limit, names(views), truncated, c.want, c.truncated)
		}
	}
	// Freeing a lock takes it out of the index.
	f.ApplyCommand(index+1, &Command{Type: TypeRevoke, Lease: LeaseID{3}})
	if views, _ := f.Locks("b/", "", 0); !slices.Equal(names(views), []string{"b/2", "b/3"}) {
		t.Fatalf("after freeing b/1: %q", names(views))
	}
}

// TestFSM_RestoreRebuildsQueuesAndIndex restores a state with long queues and many locks
// and checks the rebuilt queues, the name index, and that the restored machine then
// behaves exactly as the original.
func TestFSM_RestoreRebuildsQueuesAndIndex(t *testing.T) {
	f := New(nil)
	index := uint64(0)
	apply := func(fs []*FSM, c Command) {
		index++
		for _, f := range fs {
			f.ApplyCommand(index, &c)
		}
	}
	for i := 0; i < 200; i++ {
		apply([]*FSM{f}, Command{Type: TypeAcquire, Lease: LeaseID{byte(i)}, NewLease: true, TTL: 10_000, Name: fmt.Sprintf("lock/%03d", i%50), Wait: int64(1_000 + i)})
	}
	g := New(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(f.SnapshotBytes()))); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock/000", "lock/017", "lock/049"} {
		if a, b := f.Lock(name), g.Lock(name); !slices.Equal(a.Waiters, b.Waiters) || len(a.Waiters) != 3 {
			t.Fatalf("%s: queue %v restored as %v", name, a.Waiters, b.Waiters)
		}
	}
	a, _ := f.Locks("lock/", "lock/010", 5)
	b, _ := g.Locks("lock/", "lock/010", 5)
	if !slices.Equal(names(a), names(b)) || len(b) != 5 || b[0].Name != "lock/011" {
		t.Fatalf("restored listing %q, original %q", names(b), names(a))
	}
	// Waits end one by one from the middle of queues, leases are revoked, locks handed
	// over: both machines stay byte for byte equal.
	for i := 0; i < 200; i += 7 {
		apply([]*FSM{f, g}, Command{Type: TypeDequeue, Lease: LeaseID{byte(i)}, Name: fmt.Sprintf("lock/%03d", i%50)})
		apply([]*FSM{f, g}, Command{Type: TypeRevoke, Lease: LeaseID{byte(i + 3)}})
	}
	apply([]*FSM{f, g}, Command{Type: TypeTick, Now: 1_100})
	if !bytes.Equal(f.SnapshotBytes(), g.SnapshotBytes()) {
		t.Fatal("restored machine diverged from the original")
	}
	a, _ = f.Locks("", "", 0)
	b, _ = g.Locks("", "", 0)
	if !slices.Equal(names(a), names(b)) || g.s.names.Len() != g.LockCount() {
		t.Fatalf("restored index %q, original %q", names(b), names(a))
	}
}
