package fsm

import (
	"cmp"
	"slices"
	"strings"
)

// Read-only views of who waits for what, for the API and the dashboard: the queues in
// order (owner, since when, until when), the wait-for edges by the deadlock detector's own
// rules (blockers, deadlock.go), and the refusals the detector recorded in the lock
// histories. They change nothing and need no protocol version: every field they show is
// in the state already. Each read holds the read lock for a bounded amount of work: a
// queue's first n waiters, a page of contended locks, a bounded scan of the histories.

// Waiting is one request in a queue as reads show it: its lease (an ID, which the API
// turns into a fingerprint), owner label, and times in cluster time.
type Waiting struct {
	Lease LeaseID
	Owner string
	// Since is the cluster time the wait began, -1 when unknown (a wait queued while the
	// cluster ran protocol version 1, which did not keep it).
	Since int64
	// Deadline is the cluster time at which the wait ends without a grant.
	Deadline int64
	// Shared marks a shared lock request; LockSet one lock of a waiting lockset (locks).
	Shared  bool
	LockSet bool
}

// queueOf returns the first limit requests of q in queue order (every one when limit is
// negative), leaving out the waits of leases that ended and that the sweep has not reached
// yet (version 6): they wait for nothing any more.
func (s *state) queueOf(q *waitQueue, limit int) []Waiting {
	if limit == 0 || q.len == 0 {
		return nil
	}
	out := make([]Waiting, 0, min(q.len, max(limit, 0)+1, maxPagePrealloc))
	for w := q.head; w != nil && (limit < 0 || len(out) < limit); w = w.next {
		if s.waitsForEnded(w) {
			continue
		}
		since := int64(-1)
		if w.since > 0 {
			since = w.since - 1
		}
		ww := Waiting{Lease: w.lease, Owner: w.owner, Since: since, Deadline: w.deadline, Shared: w.shared, LockSet: w.set != nil}
		if w.set != nil {
			ww.Shared = w.set.shared
		}
		out = append(out, ww)
	}
	return out
}

// LockQueue returns the state of lock name, as Lock does, with its first limit waiters
// in queue order in Queue, in one reading.
func (f *FSM) LockQueue(name string, limit int) LockView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v := f.s.view(name)
	if lk := f.s.locks[name]; lk != nil {
		v.Queue = f.s.queueOf(&lk.ro().queue, limit)
	}
	return v
}

// SemaphoreQueue returns the state of semaphore name, as Semaphore does, with its first
// limit waiters in queue order in Queue, in one reading.
func (f *FSM) SemaphoreQueue(name string, limit int) SemaphoreView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.semView(name, limit)
}

// ElectionQueue returns the state of election name, as Election does, with its first
// limit candidates in queue order in Queue, in one reading.
func (f *FSM) ElectionQueue(name string, limit int) ElectionView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.electionView(name, limit)
}

// WaitEdge is one edge of the wait-for graph, as the deadlock detector draws it
// (blockers, deadlock.go): the request of lease Waiter for lock Lock cannot be granted
// before Blocker lets go. Blocker holds the lock (Holds), or asked for it ahead of the
// waiter (an exclusive request waits for every request queued ahead of it back to the
// nearest exclusive one, a shared request for the nearest exclusive one ahead); ForSet
// marks a shared request that waits for the grant (not the release) of a shared lockset
// queued ahead of it.
type WaitEdge struct {
	Lock                      string
	Waiter                    LeaseID
	WaiterOwner               string
	WaiterShared              bool
	Blocker                   LeaseID
	BlockerOwner              string
	Holds, ForSet, BlockerSet bool
}

// LockWaits are the wait-for edges of one lock's queue, in queue order (each waiter's
// edges nearest first, then holders in grant order): at most the asked-for number, and
// how many more there are.
type LockWaits struct {
	Lock  string
	Edges []WaitEdge
	More  int
}

// WaitsFor returns the wait-for edges of the locks with waiters whose names start with
// prefix and sort after after, in name order: at most limit locks (truncated reports that
// more follow) and at most perLock edges each (LockWaits.More counts the others). The
// locks are found through the index of locks that have had waiters (waited), so that a
// state of many locks and few queues costs the queues, not the locks.
func (f *FSM) WaitsFor(prefix, after string, limit, perLock int) (out []LockWaits, truncated bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.s
	s.waited.AscendGreaterOrEqual(max(prefix, after), func(n string) bool {
		switch {
		case n == after:
			return true
		case !strings.HasPrefix(n, prefix):
			return false
		}
		lk := s.locks[n]
		if lk == nil || lk.ro().queue.len == 0 {
			return true // it had waiters; it has none now
		}
		if limit > 0 && len(out) == limit {
			truncated = true
			return false
		}
		out = append(out, s.lockWaits(n, lk, perLock))
		return true
	})
	return out, truncated
}

// lockWaits returns the wait-for edges of lock name's queue, at most perLock of them.
func (s *state) lockWaits(name string, lk *lock, perLock int) LockWaits {
	lw := LockWaits{Lock: name}
	for w := lk.ro().queue.head; w != nil; w = w.next {
		if s.waitsForEnded(w) {
			continue
		}
		shared := w.shared
		if w.set != nil {
			shared = w.set.shared
		}
		s.blockers(lk, w, shared, func(n dlNode) bool {
			if perLock >= 0 && len(lw.Edges) >= perLock {
				lw.More++
				return true
			}
			e := WaitEdge{Lock: name, Waiter: w.lease, WaiterOwner: w.owner, WaiterShared: shared, Blocker: n.id, ForSet: n.set != nil}
			if _, owner, ok := lk.grantOf(n.id); ok && n.set == nil {
				e.Holds, e.BlockerOwner = true, owner
			} else if bl := s.leases[n.id]; bl != nil && bl.waiting[name] != nil {
				e.BlockerOwner, e.BlockerSet = bl.waiting[name].owner, bl.waiting[name].set != nil
			}
			lw.Edges = append(lw.Edges, e)
			return true
		})
	}
	return lw
}

// Refusal is a waiting request the deadlock detector refused, as lock Name's history
// recorded it (HistoryDeadlock: the requester's lease and owner, and the cycle in Detail).
type Refusal struct {
	Name string
	HistoryEvent
}

// Refusals returns the newest refusals recorded in the histories of the locks whose
// names start with prefix, newest first: at most limit of them, looking at most at the
// scan most recently active histories (a refusal makes its lock's history the most
// recently active one, so recent refusals are found first).
func (f *FSM) Refusals(prefix string, limit, scan int) []Refusal {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Refusal
	for lh := f.s.hist.newest; lh != nil && scan > 0 && len(out) < limit; lh, scan = lh.prev, scan-1 {
		if lh.space != SpaceLock || !strings.HasPrefix(lh.name, prefix) {
			continue
		}
		for i := len(lh.events) - 1; i >= 0 && len(out) < limit; i-- {
			e := lh.events[(lh.head+i)%len(lh.events)]
			if e.Kind == HistoryDeadlock {
				out = append(out, Refusal{Name: lh.name, HistoryEvent: e})
			}
		}
	}
	// Newest first across locks (a refusal of a lockset is recorded on each of its
	// locks, at one index: by name then).
	slices.SortFunc(out, func(a, b Refusal) int {
		if c := cmp.Compare(b.Index, a.Index); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
