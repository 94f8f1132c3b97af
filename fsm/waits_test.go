package fsm

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A queue reads in order with each request's owner, the cluster time it began and its
// deadline, its mode and whether it is one lock of a lockset; the limit cuts it, and a
// semaphore's and an election's queues read alike.
func TestWaits_QueueInOrderWithOwnersAndTimes(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b, c, d := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 100, Lease: a, NewLease: true, TTL: 60_000, Name: "x", Owner: "holder"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 200, Lease: b, NewLease: true, TTL: 60_000, Name: "x", Owner: "w-b", Wait: 5000}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeAcquireShared, Now: 300, Lease: c, NewLease: true, TTL: 60_000, Name: "x", Owner: "w-c", Wait: 7000}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeLockSet, Now: 400, Lease: d, NewLease: true, TTL: 60_000, Names: []string{"x", "y"}, Owner: "w-d", Wait: 9000}, StatusQueued)
	v := f.LockQueue("x", 10)
	want := []Waiting{
		{Lease: b, Owner: "w-b", Since: 200, Deadline: 5200},
		{Lease: c, Owner: "w-c", Since: 300, Deadline: 7300, Shared: true},
		{Lease: d, Owner: "w-d", Since: 400, Deadline: 9400, LockSet: true},
	}
	if !slices.Equal(v.Queue, want) || len(v.Waiters) != 3 {
		t.Fatalf("queue %+v, want %+v", v.Queue, want)
	}
	if v := f.LockQueue("x", 2); len(v.Queue) != 2 || v.Queue[1].Lease != c || len(v.Waiters) != 3 {
		t.Fatalf("queue limited to 2: %+v", v.Queue)
	}
	if v := f.Lock("x"); v.Queue != nil {
		t.Fatalf("a plain read lists the queue: %+v", v.Queue)
	}
	// The overview lists the first waiters of each lock of its page.
	if o := f.Overview("", "", 10, 0, 1); len(o.Locks) != 2 || len(o.Locks[0].Queue) != 1 || o.Locks[0].Queue[0].Lease != b || o.Locks[1].Name != "y" {
		t.Fatalf("overview with one waiter a lock: %+v", o.Locks)
	}
	v3apply(t, f, &index, Command{Type: TypeSemAcquire, Now: 500, Lease: a, Name: "s", Limit: 1, Owner: "p"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeSemAcquire, Now: 600, Lease: b, Name: "s", Limit: 1, Owner: "q", Wait: 1000}, StatusQueued)
	if v := f.SemaphoreQueue("s", 5); !slices.Equal(v.Queue, []Waiting{{Lease: b, Owner: "q", Since: 600, Deadline: 1600}}) {
		t.Fatalf("semaphore queue %+v", v.Queue)
	}
	v3apply(t, f, &index, Command{Type: TypeCampaign, Now: 700, Lease: a, Name: "e", Owner: "lead", Value: "v1"}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeCampaign, Now: 800, Lease: c, Name: "e", Owner: "cand", Value: "v2", Wait: 2000}, StatusQueued)
	if v := f.ElectionQueue("e", 5); !slices.Equal(v.Queue, []Waiting{{Lease: c, Owner: "cand", Since: 800, Deadline: 2800}}) || v.Owner != "lead" {
		t.Fatalf("election queue %+v", v)
	}
}

// The wait-for edges follow the deadlock detector's rules: an exclusive request waits for
// every request queued ahead of it back to the nearest exclusive one, and for every
// holder when none is; a shared request waits for the nearest exclusive request ahead,
// or the grant of a shared lockset ahead, or an exclusive holder.
func TestWaits_EdgesByTheDetectorsRules(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	r1, r2, x1, s1, x2, h, w := LeaseID{1}, LeaseID{2}, LeaseID{3}, LeaseID{4}, LeaseID{5}, LeaseID{6}, LeaseID{7}
	nl := func(c Command) Command { c.NewLease, c.TTL, c.Now = true, 60_000, 10; return c }
	// Lock r: held shared by r1 and r2; x1 (exclusive), s1 (shared), x2 (exclusive) wait.
	v3apply(t, f, &index, nl(Command{Type: TypeAcquireShared, Lease: r1, Name: "r", Owner: "r1"}), StatusOK)
	v3apply(t, f, &index, nl(Command{Type: TypeAcquireShared, Lease: r2, Name: "r", Owner: "r2"}), StatusOK)
	v3apply(t, f, &index, nl(Command{Type: TypeAcquire, Lease: x1, Name: "r", Owner: "x1", Wait: 10_000}), StatusQueued)
	v3apply(t, f, &index, nl(Command{Type: TypeAcquireShared, Lease: s1, Name: "r", Owner: "s1", Wait: 10_000}), StatusQueued)
	v3apply(t, f, &index, nl(Command{Type: TypeAcquire, Lease: x2, Name: "r", Owner: "x2", Wait: 10_000}), StatusQueued)
	// Lock z: held exclusive by h; w (shared) waits.
	v3apply(t, f, &index, nl(Command{Type: TypeAcquire, Lease: h, Name: "z", Owner: "h"}), StatusOK)
	v3apply(t, f, &index, nl(Command{Type: TypeAcquireShared, Lease: w, Name: "z", Owner: "w", Wait: 10_000}), StatusQueued)

	got, truncated := f.WaitsFor("", "", 10, -1)
	if truncated || len(got) != 2 || got[0].Lock != "r" || got[1].Lock != "z" {
		t.Fatalf("waits for %+v (truncated %v)", got, truncated)
	}
	type e struct {
		waiter, blocker LeaseID
		holds           bool
	}
	edges := func(lw LockWaits) (out []e) {
		for _, ed := range lw.Edges {
			out = append(out, e{ed.Waiter, ed.Blocker, ed.Holds})
		}
		return out
	}
	wantR := []e{{x1, r1, true}, {x1, r2, true}, {s1, x1, false}, {x2, s1, false}, {x2, x1, false}}
	if !slices.Equal(edges(got[0]), wantR) {
		t.Fatalf("lock r: %+v, want %+v", edges(got[0]), wantR)
	}
	if wantZ := []e{{w, h, true}}; !slices.Equal(edges(got[1]), wantZ) || got[1].Edges[0].BlockerOwner != "h" || got[1].Edges[0].WaiterOwner != "w" || !got[1].Edges[0].WaiterShared {
		t.Fatalf("lock z: %+v", got[1].Edges)
	}
	// Limits: one lock a page with a cursor, and two edges a lock with the rest counted.
	if p, more := f.WaitsFor("", "", 1, 2); !more || len(p) != 1 || len(p[0].Edges) != 2 || p[0].More != 3 {
		t.Fatalf("a page of one lock and two edges: %+v %v", p, more)
	}
	if p, more := f.WaitsFor("", "r", 1, -1); more || len(p) != 1 || p[0].Lock != "z" {
		t.Fatalf("the page after r: %+v %v", p, more)
	}
	if p, _ := f.WaitsFor("q", "", 10, -1); len(p) != 0 {
		t.Fatalf("prefix q: %+v", p)
	}
	// A lock whose queue emptied stays in the index but shows no edges.
	v3apply(t, f, &index, Command{Type: TypeDequeue, Now: 10, Lease: w, Name: "z"}, StatusNotHolder)
	if p, _ := f.WaitsFor("", "", 10, -1); len(p) != 1 || p[0].Lock != "r" {
		t.Fatalf("after z's waiter left: %+v", p)
	}
}

// ruleEdges is the wait-for graph of lock name written from the rules in deadlock.go's
// comment, independently of blockers: the reference the random test compares with.
func ruleEdges(s *state, name string, lk *lock) []WaitEdge {
	var q []*waiter
	for w := lk.ro().queue.head; w != nil; w = w.next {
		if !s.waitsForEnded(w) {
			q = append(q, w)
		}
	}
	var holders []LeaseID
	switch {
	case lk.ro().v3.vacant:
	case lk.isShared():
		for g := lk.ro().readers.head; g != nil; g = g.next {
			holders = append(holders, g.lease)
		}
	default:
		holders = append(holders, lk.holder)
	}
	holders = slices.DeleteFunc(holders, s.deadID)
	var out []WaitEdge
	for i, w := range q {
		add := func(b LeaseID, holds, forSet bool) {
			out = append(out, WaitEdge{Lock: name, Waiter: w.lease, Blocker: b, Holds: holds, ForSet: forSet})
		}
		if !w.shared {
			stopped := false
			for j := i - 1; j >= 0 && !stopped; j-- {
				add(q[j].lease, false, false)
				stopped = !q[j].shared
			}
			if !stopped {
				for _, h := range holders {
					add(h, true, false)
				}
			}
			continue
		}
		found := false
		for j := i - 1; j >= 0 && !found; j-- {
			switch {
			case !q[j].shared:
				add(q[j].lease, false, false)
				found = true
			case q[j].set != nil:
				add(q[j].lease, false, true)
				found = true
			}
		}
		if !found && !lk.isShared() && len(holders) == 1 {
			add(holders[0], true, false)
		}
	}
	return out
}

// On random version 3 states (locksets, shared and exclusive requests, expiries, lock
// delays), the edges WaitsFor reads are those the rules give, and every lock with a waiter
// is in the index it scans.
func TestWaits_EdgesMatchTheRulesOnRandomStates(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			f := atVersion3(t)
			g := newV3Gen(seed)
			for step := 2; step < 1500; step++ {
				c := g.next(f)
				f.ApplyCommand(uint64(step), &c)
				got, _ := f.WaitsFor("", "", -1, -1)
				byLock := map[string][]WaitEdge{}
				for _, lw := range got {
					for _, e := range lw.Edges {
						e.WaiterOwner, e.BlockerOwner, e.WaiterShared, e.BlockerSet = "", "", false, false
						byLock[lw.Lock] = append(byLock[lw.Lock], e)
					}
				}
				f.mu.RLock()
				for name, lk := range f.s.locks {
					if want := ruleEdges(f.s, name, lk); !slices.Equal(byLock[name], want) {
						f.mu.RUnlock()
						t.Fatalf("step %d: lock %q edges %+v, the rules give %+v", step, name, byLock[name], want)
					}
					if _, in := f.s.waited.Get(name); lk.ro().queue.len > 0 && !in {
						f.mu.RUnlock()
						t.Fatalf("step %d: lock %q has waiters and is not in the index", step, name)
					}
				}
				f.mu.RUnlock()
			}
		})
	}
}

// The detector's refusals are read back from the lock histories, newest first, under a
// prefix.
func TestWaits_RefusalsNewestFirst(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	a, b := LeaseID{1}, LeaseID{2}
	nl := func(c Command) Command { c.NewLease, c.TTL, c.Now = true, 60_000, 10; return c }
	v3apply(t, f, &index, nl(Command{Type: TypeAcquire, Lease: a, Name: "t/x", Owner: "A"}), StatusOK)
	v3apply(t, f, &index, nl(Command{Type: TypeAcquire, Lease: b, Name: "t/y", Owner: "B"}), StatusOK)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: a, Name: "t/y", Wait: 10_000, Owner: "A"}, StatusQueued)
	v3apply(t, f, &index, Command{Type: TypeAcquire, Now: 10, Lease: b, Name: "t/x", Wait: 10_000, Owner: "B"}, StatusDeadlock)
	first := index
	v3apply(t, f, &index, Command{Type: TypeLockSet, Now: 20, Lease: b, Names: []string{"t/x", "u/z"}, Wait: 10_000, Owner: "B"}, StatusDeadlock)
	rs := f.Refusals("", 10, 100)
	if len(rs) != 3 || rs[0].Index != index || rs[0].Name != "t/x" || rs[1].Name != "u/z" || rs[2].Index != first || rs[2].Owner != "B" {
		t.Fatalf("refusals %+v", rs)
	}
	if !strings.Contains(rs[2].Detail, LeaseFingerprint(a).String()) || rs[2].Lease != LeaseFingerprint(b) {
		t.Fatalf("refusal %+v", rs[2])
	}
	if rs := f.Refusals("t/", 10, 100); len(rs) != 2 || rs[0].Name != "t/x" || rs[1].Name != "t/x" {
		t.Fatalf("refusals under t/: %+v", rs)
	}
	if rs := f.Refusals("", 1, 100); len(rs) != 1 {
		t.Fatalf("one refusal: %+v", rs)
	}
}

// Semaphores and elections are listed in name order under a prefix, a page at a time,
// with their queues; the name indexes follow deletions and a restore.
func TestWaits_SemaphoresAndElectionsPaged(t *testing.T) {
	f := atVersion3(t)
	index := uint64(1)
	for i, name := range []string{"db/b", "db/a", "web/c"} {
		id := LeaseID{byte(i + 1)}
		v3apply(t, f, &index, Command{Type: TypeSemAcquire, Now: 10, Lease: id, NewLease: true, TTL: 60_000, Name: name, Limit: 2, Owner: fmt.Sprint("o", i)}, StatusOK)
		v3apply(t, f, &index, Command{Type: TypeCampaign, Now: 10, Lease: id, Name: name, Owner: fmt.Sprint("o", i), Value: "v"}, StatusOK)
	}
	names := func(sv []SemaphoreView, ev []ElectionView) (out []string) {
		for _, v := range sv {
			out = append(out, v.Name)
		}
		for _, v := range ev {
			out = append(out, v.Name)
		}
		return out
	}
	sv, more := f.Semaphores("db/", "", 1, 0)
	if !more || !slices.Equal(names(sv, nil), []string{"db/a"}) || sv[0].Limit != 2 || sv[0].Permits[0].Owner != "o1" {
		t.Fatalf("first page: %+v %v", sv, more)
	}
	sv, more = f.Semaphores("db/", "db/a", 1, 0)
	if more || !slices.Equal(names(sv, nil), []string{"db/b"}) {
		t.Fatalf("second page: %+v %v", sv, more)
	}
	ev, more := f.Elections("", "", 0, 0)
	if more || !slices.Equal(names(nil, ev), []string{"db/a", "db/b", "web/c"}) || ev[2].Owner != "o2" {
		t.Fatalf("elections: %+v", ev)
	}
	v3apply(t, f, &index, Command{Type: TypeSemRelease, Now: 10, Lease: LeaseID{2}, Name: "db/a", Token: f.Semaphore("db/a").Permits[0].Token}, StatusOK)
	v3apply(t, f, &index, Command{Type: TypeResign, Now: 10, Lease: LeaseID{3}, Name: "web/c", Token: f.Election("web/c").Token}, StatusOK)
	r := New(nil)
	if err := r.Restore(nopReader(f.SnapshotBytes())); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*FSM{f, r} {
		sv, _ := g.Semaphores("", "", 0, 0)
		ev, _ := g.Elections("", "", 0, 0)
		if got := names(sv, ev); !slices.Equal(got, []string{"db/b", "web/c", "db/a", "db/b"}) {
			t.Fatalf("after a release and a resign (restored %v): %v", g == r, got)
		}
	}
}
