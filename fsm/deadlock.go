package fsm

import (
	"strings"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Deadlock detection (protocol version 3). docs/DECISIONS.md "Deadlock detection" defines
// the graph; in short:
//
// The nodes are leases. A lease that waits for a lock (a single lock's wait or one lock of
// a lockset) waits for every lease that must let go before its request can be granted:
//
//   - an exclusive request waits for each request queued ahead of it back to and including
//     the nearest exclusive one, and, when no exclusive request is ahead, for every holder
//     of the lock (the nearest exclusive request ahead waits for everything before it);
//   - a shared request waits for the nearest request ahead of it that is exclusive, or
//     for the grant (not the release) of the nearest shared lockset ahead of it, which the
//     shared requests behind it cannot pass before it is granted; when there is neither,
//     for the holder when the lock is held exclusive.
//
// A lease lets go only once it waits for nothing, so a wait for a lease is a wait for all
// of that lease's requests; a wait for a shared lockset's grant is a wait for that set's
// own blockers only.
//
// A lock without a holder (reserved for a lockset, or in a lock delay) adds no holder
// edge: a lock delay ends by time alone. Semaphores and elections are out of the graph: a
// wait for any one of several permits or for a leadership is not a wait for one lease.
//
// A waiting request that would close a cycle through its own lease is refused with
// StatusDeadlock and nothing is queued; every other request queues as before. Because
// every cycle is refused at the request that closes it, the graph never holds a cycle,
// which TestDeadlock_Model checks against a brute-force release simulation.

// CycleStep is one step of a wait-for cycle: the lease with fingerprint Lease waits for
// lock Lock, and there for the lease with fingerprint Holder, which holds the lock (Holds)
// or asked for it ahead of Lease's request, under the owner label HolderOwner (that grant's
// or that request's). Holder is the next step's Lease (the first step's after the last).
// From protocol version 8 a lock's history keeps the steps as these fields (cycleSince).
type CycleStep struct {
	Lease       Fingerprint
	Lock        string
	Holder      Fingerprint
	HolderOwner string
	Holds       bool
}

// cycleSince is the protocol version from which a refusal's history event keeps the cycle
// as steps (RecordedCycle.Steps); before it, as DescribeCycle's text.
const cycleSince = 8

// RecordedCycle is the cycle of a refused request as its lock's history keeps it
// (HistoryDeadlock): its steps, from protocol version 8; or, for a refusal recorded
// before, only the text DescribeCycle wrote of them, which cannot be read back into steps
// without ambiguity (a lock name may contain the text's separators), so nothing does.
type RecordedCycle struct {
	Steps []CycleStep
	Text  string
}

// String is the cycle as the API and the history show it: DescribeCycle of the steps, or
// the text of a refusal recorded before version 8.
func (c *RecordedCycle) String() string {
	if c == nil {
		return ""
	}
	if c.Steps != nil {
		return DescribeCycle(c.Steps)
	}
	return c.Text
}

// DescribeCycle writes a cycle as the API and the history show it:
// "lease 1a2b3c4d waits for lock a, held or asked for before it by lease 5e6f7a8b, ...".
func DescribeCycle(cycle []CycleStep) string {
	var b strings.Builder
	for i, st := range cycle {
		if i > 0 {
			b.WriteString(", which ")
		} else {
			b.WriteString("lease " + st.Lease.String() + " ")
		}
		next := cycle[(i+1)%len(cycle)].Lease
		b.WriteString("waits for lock " + st.Lock + " (held or asked for ahead of it by lease " + next.String() + ")")
	}
	return b.String()
}

// dlNode is a node of the wait-for graph: a lease (set nil), which lets go of its locks
// only once it waits for nothing, or a waiting shared lockset (set), which shared requests
// queued behind it wait to see granted, not released.
type dlNode struct {
	id  LeaseID
	set *lockSet
}

// blockers calls visit for each node that a request of mode shared, queued on lk just
// behind w (at the tail when w is nil), waits for, in queue order from the nearest, then
// holders in grant order. It stops when visit returns false. The waits and grants of
// leases that ended (version 6, not yet swept) are passed over: nobody waits for them.
func (s *state) blockers(lk *lock, w *waiter, shared bool, visit func(dlNode) bool) bool {
	p := lk.ro().queue.tail
	if w != nil {
		p = w.prev
	}
	if shared {
		for ; p != nil; p = p.prev {
			switch {
			case s.deadID(p.lease):
			case !p.shared:
				return visit(dlNode{id: p.lease})
			case p.set != nil:
				// A shared lockset ahead is granted whole or not at all; once it is, the
				// shared requests behind it join it. They wait for its grant.
				return visit(dlNode{id: p.lease, set: p.set})
			}
		}
		if !lk.ro().v3.vacant && !lk.isShared() && !s.deadID(lk.holder) {
			return visit(dlNode{id: lk.holder})
		}
		return true
	}
	for ; p != nil; p = p.prev {
		if s.deadID(p.lease) {
			continue
		}
		if !visit(dlNode{id: p.lease}) {
			return false
		}
		if !p.shared {
			return true // the nearest exclusive request waits for everything before it
		}
	}
	switch {
	case lk.ro().v3.vacant:
	case lk.isShared():
		for g := lk.ro().readers.head; g != nil; g = g.next {
			if !s.deadID(g.lease) && !visit(dlNode{id: g.lease}) {
				return false
			}
		}
	case !s.deadID(lk.holder):
		return visit(dlNode{id: lk.holder})
	}
	return true
}

// cycleHop is how the search reached a node: from node from, waiting for lock name.
type cycleHop struct {
	from dlNode
	name string
}

// cycleSearch is one breadth-first search of findCycle: from and name are the node being
// expanded and the lock whose blockers are being visited.
type cycleSearch struct {
	root, from dlNode
	name       string
	via        map[dlNode]cycleHop
	frontier   []dlNode
	found      bool
	foundHop   cycleHop
}

// visit records node to, reached from sr.from through lock sr.name; it stops the search
// when to is the requester.
func (sr *cycleSearch) visit(to dlNode) bool {
	if to == sr.root {
		sr.found, sr.foundHop = true, cycleHop{from: sr.from, name: sr.name}
		return false
	}
	if _, seen := sr.via[to]; !seen {
		sr.via[to] = cycleHop{from: sr.from, name: sr.name}
		sr.frontier = append(sr.frontier, to)
	}
	return true
}

// findCycle reports the cycle that lease l would close by waiting for the locks names,
// in the given mode, behind everything queued for them now (nil when none). The search is
// breadth-first from the request's own blockers, visiting a lease's waits in name order,
// so the cycle found (the shortest, ties broken by that order) is the same on every node.
// A lease that neither holds a lock nor waits for one cannot be waited for (a request
// waits for holders and for requests queued ahead of it), so it closes no cycle: that is
// the common case, and costs nothing.
func (s *state) findCycle(l *lease, names []string, shared bool) []CycleStep {
	if l == nil || len(l.held) == 0 && len(l.waiting) == 0 {
		return nil
	}
	sr := &cycleSearch{root: dlNode{id: l.id}, via: make(map[dlNode]cycleHop, 64)}
	visit := sr.visit // one method value for the whole search
	sr.from = sr.root
	for _, name := range names {
		sr.name = name
		if lk := s.locks[name]; lk != nil && !s.blockers(lk, nil, shared, visit) {
			break
		}
	}
	for len(sr.frontier) > 0 && !sr.found {
		n := sr.frontier[0]
		sr.frontier = sr.frontier[1:]
		sr.from = n
		if n.set != nil { // a shared set's grant waits for its own blockers only
			for i, name := range n.set.names {
				sr.name = name
				if !s.blockers(s.locks[name], n.set.waiters[i], true, visit) {
					break
				}
			}
			continue
		}
		wl := s.leases[n.id]
		if wl == nil {
			continue
		}
		expand := func(name string, w *waiter) bool {
			shared := w.shared
			if w.set != nil {
				shared = w.set.shared
			}
			sr.name = name
			return s.blockers(s.locks[name], w, shared, visit)
		}
		if len(wl.waiting) == 1 { // the common case: no sort
			for name, w := range wl.waiting {
				expand(name, w)
			}
			continue
		}
		for _, name := range sortedNames(wl.waiting) {
			if !expand(name, wl.waiting[name]) {
				break
			}
		}
	}
	found, foundHop, via, root := sr.found, sr.foundHop, sr.via, sr.root
	if !found {
		return nil
	}
	// Walk back from the hop that reached the requester to the requester's own request:
	// each hop's node waits, for its lock, for the node the hop reached.
	var rev []CycleStep
	to := root
	for hop := foundHop; ; hop = via[hop.from] {
		st := CycleStep{Lease: LeaseFingerprint(hop.from.id), Lock: hop.name, Holder: LeaseFingerprint(to.id)}
		st.HolderOwner, st.Holds = s.blockerOn(hop.name, to)
		rev = append(rev, st)
		if hop.from == root {
			break
		}
		to = hop.from
	}
	cycle := make([]CycleStep, len(rev))
	for i := range rev {
		cycle[i] = rev[len(rev)-1-i]
	}
	return cycle
}

// blockerOn returns how node n stands in the way on lock name, for a cycle's step: the
// owner of its grant there (holds), or of its request queued there.
func (s *state) blockerOn(name string, n dlNode) (owner string, holds bool) {
	if lk := s.locks[name]; lk != nil && n.set == nil {
		if _, owner, ok := lk.grantOf(n.id); ok {
			return owner, true
		}
	}
	if l := s.leases[n.id]; l != nil && l.waiting[name] != nil {
		return l.waiting[name].owner, false
	}
	return "", false
}

// refuseDeadlock refuses request c of lease l (nil when c creates it) for lock lk, which
// it would wait for, when waiting would close a wait-for cycle: StatusDeadlock, the cycle
// in r.Cycle and in the history of the lock asked for, nothing queued. A request the lease
// already waits with adds no edge and is never refused. Only from version 3 on: a cluster
// at version 2 queues such requests, as version 2 code does.
func (s *state) refuseDeadlock(c *Command, l *lease, lk *lock, shared bool, r *Result) bool {
	if c.Wait <= 0 || l == nil || l.waiting[c.Name] != nil {
		return false
	}
	return s.refuseCycle(c, l, []string{c.Name}, shared, r)
}

// refuseCycle is refuseDeadlock for a request of lease l waiting for names at once (a
// single lock or a lockset); the history of each lock asked for records the refusal.
func (s *state) refuseCycle(c *Command, l *lease, names []string, shared bool, r *Result) bool {
	if s.version < 3 || s.noCycleCheck || mutant.Is("deadlock-check-off") {
		return false
	}
	cycle := s.findCycle(l, names, shared)
	if cycle == nil {
		return false
	}
	r.Status, r.Cycle = StatusDeadlock, cycle
	// Until the cluster runs version 8 every node keeps the text, as older code does.
	kept := &RecordedCycle{Steps: cycle}
	if s.version < cycleSince {
		kept = &RecordedCycle{Text: DescribeCycle(cycle)}
	}
	for _, name := range names {
		s.record(name, l, HistoryEvent{Kind: HistoryDeadlock, Lease: l.fingerprint(), Owner: c.Owner, Cycle: kept})
	}
	return true
}
