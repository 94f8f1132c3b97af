package fsm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// The coordination primitives beside the exclusive lock (issue 14): shared locks (the
// lock table's shared mode, shared.go), counting semaphores and leader elections. They
// follow the lock's rules: a grant's token is the index of the entry that granted it; a
// lease's expiry or revoke frees what it holds and takes it out of every queue in the
// same entry; waiting is FIFO with a deadline in cluster time, and a freed grant goes to
// the head of the queue in the entry that freed it. Each kind has its own namespace: the
// same name may be a lock, a semaphore and an election at once.

// Space is the namespace an Event's Name belongs to.
type Space uint8

// Namespaces. The zero value is the lock table, so every lock event is what it was before
// the other primitives existed.
const (
	SpaceLock Space = iota
	SpaceSemaphore
	SpaceElection
)

// String names the namespace.
func (sp Space) String() string {
	switch sp {
	case SpaceLock:
		return "lock"
	case SpaceSemaphore:
		return "semaphore"
	case SpaceElection:
		return "election"
	}
	return "space(?)"
}

// MaxSemaphoreLimit bounds a semaphore's number of permits in the state machine. The API
// allows less (api.MaxSemaphoreLimit); this bound only keeps a corrupt entry from
// describing an absurd semaphore.
const MaxSemaphoreLimit = 1 << 20

// grant is one holder of a shared lock or one permit of a semaphore, linked in grant
// order.
type grant struct {
	lease      LeaseID
	token      uint64
	owner      string
	prev, next *grant
}

// grantSet is a set of grants in grant order, with O(1) lookup and removal by lease: a
// lease leaving (release, expiry) costs the same whatever the number of holders.
type grantSet struct {
	head, tail *grant
	byLease    map[LeaseID]*grant
}

func (g *grantSet) len() int { return len(g.byLease) }

func (g *grantSet) get(id LeaseID) *grant { return g.byLease[id] }

// add appends x, whose lease holds nothing in g yet.
func (g *grantSet) add(x *grant) {
	if g.byLease == nil {
		g.byLease = make(map[LeaseID]*grant, 1)
	}
	g.byLease[x.lease] = x
	x.prev, x.next = g.tail, nil
	if g.tail == nil {
		g.head = x
	} else {
		g.tail.next = x
	}
	g.tail = x
}

// remove takes lease id's grant out of g, if it has one.
func (g *grantSet) remove(id LeaseID) *grant {
	x := g.byLease[id]
	if x == nil {
		return nil
	}
	delete(g.byLease, id)
	if x.prev == nil {
		g.head = x.next
	} else {
		x.prev.next = x.next
	}
	if x.next == nil {
		g.tail = x.prev
	} else {
		x.next.prev = x.prev
	}
	x.prev, x.next = nil, nil
	return x
}

// holdings lists the grants in grant order.
func (g *grantSet) holdings() []Holding {
	out := make([]Holding, 0, g.len())
	for x := g.head; x != nil; x = x.next {
		out = append(out, Holding{Lease: x.lease, Token: x.token, Owner: x.owner})
	}
	return out
}

// semaphore is a semaphore in use: at least one permit held. A semaphore whose last permit
// is released with nobody waiting is deleted, so one not in use takes no memory and its
// next acquirer sets a new limit. While anyone waits, every permit is held: a freed
// permit goes to the head waiter at once.
type semaphore struct {
	limit   uint64
	permits grantSet
	queue   waitQueue
	modify  uint64
}

// election is an election with a leader. A leader that resigns (or whose lease ends)
// hands leadership to the head candidate in the same entry; with no candidate the
// election is deleted.
type election struct {
	leader LeaseID
	token  uint64
	owner  string
	value  string
	modify uint64
	queue  waitQueue // candidates, each with its own value
}

// leasePrims is what a lease holds and waits for among semaphores and elections. It is
// nil until the lease uses one, so that a lease that only takes locks costs nothing more.
type leasePrims struct {
	permits   map[string]struct{} // semaphores it holds a permit of
	semWaits  map[string]*waiter  // semaphores it waits for
	leads     map[string]struct{} // elections it leads
	campaigns map[string]*waiter  // elections it is a candidate in
}

func (l *lease) p() *leasePrims {
	if l.prims == nil {
		l.prims = &leasePrims{}
	}
	return l.prims
}

// count returns how many locks, permits and leaderships the lease holds and waits for,
// together: the MaxLocksPerLease quota bounds this sum.
func (l *lease) count() int {
	n := len(l.held) + len(l.waiting)
	if p := l.prims; p != nil {
		n += len(p.permits) + len(p.semWaits) + len(p.leads) + len(p.campaigns)
	}
	return n
}

// primState is the replicated state of semaphores and elections. It is empty at version
// 1 (the commands are refused there), so a version 1 snapshot needs no place for it.
type primState struct {
	sems        map[string]*semaphore
	elections   map[string]*election
	semWaitExp  leases.Table // keyed by waitKey(name, lease)
	elecWaitExp leases.Table // keyed by waitKey(name, lease)
	// semFreed and elecFreed are the indexes of the last entries that deleted a semaphore
	// or an election: what a status read reports as the modify index of one not in use.
	semFreed, elecFreed uint64
	// admit is scratch for one entry: locks held shared whose queue lost a waiter, whose
	// head may now be shared waiters to admit (settle).
	admit []string
}

func newPrimState() primState {
	return primState{sems: make(map[string]*semaphore), elections: make(map[string]*election)}
}

// validName is the state machine's own rule for names of every primitive; the API's is
// stricter.
func validName(name string) bool {
	return name != "" && len(name) <= maxStringLen && strings.IndexByte(name, 0) < 0
}

func invalid(r *Result, what string) {
	r.Status, r.Err = StatusInvalid, fmt.Errorf("%w: %s", ErrCorruptCommand, what)
}

// primQuota reports whether a request for a grant of a semaphore or an election would
// break a limit, and refuses r if so: the lock quotas count every primitive (see
// lease.count), and MaxWaitersPerLock bounds every queue. Asking again for what the lease
// already has or waits for (already) is never refused.
func (s *state) primQuota(c *Command, l *lease, already bool, queueLen int, r *Result) bool {
	if l == nil && s.leaseQuota(c.Lease, r) {
		return true
	}
	if already {
		return false
	}
	count := 0
	if l != nil {
		count = l.count()
	}
	if max := s.limits.MaxLocksPerLease; max != 0 && uint64(count) >= max {
		return refuse(r, QuotaLocksPerLease)
	}
	if max := s.limits.MaxWaitersPerLock; max != 0 && uint64(queueLen) >= max {
		return refuse(r, QuotaWaitersPerLock)
	}
	return false
}

// leaseFor creates the lease of a request with NewLease, or renews the lease named.
func (s *state) leaseFor(c *Command, l *lease) *lease {
	if l == nil {
		return s.createLease(c.Lease, c.TTL)
	}
	s.touch(l)
	return l
}

// enqueue queues lease l for a primitive (or extends the wait it is in: a re-issued wait
// extends the old one) and returns its waiter.
func (s *state) enqueue(q *waitQueue, m *map[string]*waiter, exp *leases.Table, name string, l *lease, c *Command) (w *waiter, added bool) {
	deadline := satAdd(s.stamp, c.Wait)
	if w = (*m)[name]; w == nil {
		w = &waiter{lease: l.id, owner: c.Owner, deadline: deadline, since: s.time + 1}
		q.push(w)
		if *m == nil {
			*m = make(map[string]*waiter, 1)
		}
		(*m)[name] = w
		added = true
	} else {
		w.deadline = deadline
	}
	exp.Set(waitKey(name, l.id), deadline)
	return w, added
}

// ---- semaphores ----

func (s *state) semAcquire(index uint64, c *Command, r *Result) {
	if !validName(c.Name) {
		invalid(r, "bad semaphore name")
		return
	}
	if c.Limit == 0 || c.Limit > MaxSemaphoreLimit {
		invalid(r, "bad semaphore limit")
		return
	}
	l := s.leases[c.Lease]
	if l == nil && !c.NewLease {
		r.Status = StatusLeaseNotFound
		return
	}
	sm := s.sems[c.Name]
	if sm != nil && sm.limit != c.Limit {
		r.Status, r.Limit = StatusLimitConflict, sm.limit
		return
	}
	var mine *grant
	var waiting bool
	if sm != nil && l != nil {
		mine = sm.permits.get(l.id)
		if l.prims != nil {
			_, waiting = l.prims.semWaits[c.Name]
		}
	}
	free := sm == nil || uint64(sm.permits.len()) < sm.limit && sm.queue.len == 0
	if mutant.Is("semaphore-extra-permit") && sm != nil && uint64(sm.permits.len()) == sm.limit && sm.queue.len == 0 {
		free = true
	}
	if mine == nil && !free && c.Wait <= 0 {
		r.Status, r.Limit = StatusSemaphoreFull, sm.limit
		return
	}
	queueLen := 0
	if sm != nil {
		queueLen = sm.queue.len
	}
	if s.primQuota(c, l, mine != nil || waiting, queueLen, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL, r.Limit = l.ttl, c.Limit
	switch {
	case sm == nil:
		sm = &semaphore{limit: c.Limit}
		s.sems[c.Name] = sm
		s.addPermit(index, c.Name, sm, l, c.Owner)
		r.Token, r.Owner = index, c.Owner
	case mine != nil:
		r.Token, r.Owner = mine.token, mine.owner // idempotent: the same permit again
	case free:
		s.addPermit(index, c.Name, sm, l, c.Owner)
		r.Token, r.Owner = index, c.Owner
	default:
		p := l.p()
		if _, added := s.enqueue(&sm.queue, &p.semWaits, &s.semWaitExp, c.Name, l, c); added {
			sm.modify = index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: c.Name, Index: index})
		}
		r.Status = StatusQueued
	}
}

// addPermit grants lease l a permit of sm at index.
func (s *state) addPermit(index uint64, name string, sm *semaphore, l *lease, owner string) {
	sm.permits.add(&grant{lease: l.id, token: index, owner: owner})
	addName(&l.p().permits, name)
	sm.modify = index
	s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index})
}

func (s *state) semRelease(index uint64, c *Command, r *Result) {
	if s.leases[c.Lease] == nil {
		r.Status = StatusLeaseNotFound
		return
	}
	sm := s.sems[c.Name]
	var g *grant
	if sm != nil {
		g = sm.permits.get(c.Lease)
	}
	if g == nil || g.token != c.Token {
		r.Status = StatusNotHolder
		return
	}
	s.dropPermit(index, c.Name, sm, c.Lease)
}

// dropPermit frees lease id's permit of sm and hands free permits to the head waiters.
func (s *state) dropPermit(index uint64, name string, sm *semaphore, id LeaseID) {
	sm.permits.remove(id)
	if l := s.leases[id]; l != nil && l.prims != nil {
		delete(l.prims.permits, name)
	}
	sm.modify = index
	s.fillPermits(index, name, sm)
}

// fillPermits grants free permits to the head waiters, in queue order, at index; a
// semaphore left with no permit and no waiter is deleted.
func (s *state) fillPermits(index uint64, name string, sm *semaphore) {
	for uint64(sm.permits.len()) < sm.limit && sm.queue.head != nil {
		w := sm.queue.head
		sm.queue.remove(w)
		next := s.leases[w.lease]
		delete(next.prims.semWaits, name)
		s.semWaitExp.Delete(waitKey(name, w.lease))
		sm.permits.add(&grant{lease: w.lease, token: index, owner: w.owner})
		addName(&next.p().permits, name)
		sm.modify = index
		s.notify(Event{Kind: EventGranted, Space: SpaceSemaphore, Name: name, Lease: w.lease, Token: index, Owner: w.owner, Index: index})
	}
	if sm.permits.len() == 0 && sm.queue.len == 0 {
		delete(s.sems, name)
		s.semFreed = index
		s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index, Freed: true})
		return
	}
	s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index})
}

func (s *state) semDequeue(index uint64, c *Command, r *Result) {
	sm := s.sems[c.Name]
	if sm != nil {
		if g := sm.permits.get(c.Lease); g != nil {
			r.Token, r.Owner, r.Limit = g.token, g.owner, sm.limit
			return
		}
	}
	r.Status = StatusNotHolder
	if l := s.leases[c.Lease]; l != nil && l.prims != nil && sm != nil {
		if _, queued := l.prims.semWaits[c.Name]; queued {
			s.leaveSemQueue(index, c.Name, l)
		}
	}
}

// leaveSemQueue takes lease l, which waits for semaphore name, out of its queue.
func (s *state) leaveSemQueue(index uint64, name string, l *lease) {
	w := l.prims.semWaits[name]
	delete(l.prims.semWaits, name)
	s.semWaitExp.Delete(waitKey(name, l.id))
	sm := s.sems[name]
	sm.queue.remove(w)
	sm.modify = index
	s.notify(Event{Kind: EventWaitEnded, Space: SpaceSemaphore, Name: name, Lease: l.id, Index: index})
	s.fillPermits(index, name, sm) // a no-op while the semaphore is full, as it is with waiters
}

// ---- elections ----

func (s *state) campaign(index uint64, c *Command, r *Result) {
	if !validName(c.Name) {
		invalid(r, "bad election name")
		return
	}
	l := s.leases[c.Lease]
	if l == nil && (!c.NewLease || c.Token != 0) {
		r.Status = StatusLeaseNotFound
		return
	}
	el := s.elections[c.Name]
	leads := el != nil && l != nil && el.leader == l.id
	if c.Token != 0 && (!leads || el.token != c.Token) {
		r.Status = StatusNotHolder // a proclaim only: never campaigns
		return
	}
	// The mutant lets a campaign take office beside the sitting leader.
	usurp := el != nil && !leads && c.Wait <= 0 && mutant.Is("election-two-leaders")
	if el != nil && !leads && c.Wait <= 0 && !usurp {
		r.Status = StatusElectionHeld
		return
	}
	var waiting bool
	if l != nil && l.prims != nil {
		_, waiting = l.prims.campaigns[c.Name]
	}
	queueLen := 0
	if el != nil {
		queueLen = el.queue.len
	}
	if s.primQuota(c, l, leads || waiting, queueLen, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL = l.ttl
	switch {
	case el == nil || usurp:
		if el == nil {
			el = &election{}
			s.elections[c.Name] = el
		}
		el.leader, el.token, el.owner, el.value, el.modify = l.id, index, c.Owner, c.Value, index
		addName(&l.p().leads, c.Name)
		s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
	case leads:
		// Proclaim: the value changes, the leadership (and its token) does not.
		if el.value != c.Value {
			el.value, el.modify = c.Value, index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
		}
	default:
		p := l.p()
		w, added := s.enqueue(&el.queue, &p.campaigns, &s.elecWaitExp, c.Name, l, c)
		w.value = c.Value // a re-issued campaign brings its latest value
		if added {
			el.modify = index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: c.Name, Index: index})
		}
		r.Status = StatusQueued
		return
	}
	r.Token, r.Owner, r.Value, r.Modify = el.token, el.owner, el.value, el.modify
}

func (s *state) resign(index uint64, c *Command, r *Result) {
	if s.leases[c.Lease] == nil {
		r.Status = StatusLeaseNotFound
		return
	}
	el := s.elections[c.Name]
	if el == nil || el.leader != c.Lease || el.token != c.Token {
		r.Status = StatusNotHolder
		return
	}
	s.dropLeader(index, c.Name, el)
}

// dropLeader ends el's leadership and elects the head candidate at index.
func (s *state) dropLeader(index uint64, name string, el *election) {
	if old := s.leases[el.leader]; old != nil && old.prims != nil {
		delete(old.prims.leads, name)
	}
	if el.queue.head == nil {
		delete(s.elections, name)
		s.elecFreed = index
		s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index, Freed: true})
		return
	}
	w := el.queue.head
	el.queue.remove(w)
	next := s.leases[w.lease]
	delete(next.prims.campaigns, name)
	s.elecWaitExp.Delete(waitKey(name, w.lease))
	addName(&next.p().leads, name)
	el.leader, el.token, el.owner, el.value, el.modify = w.lease, index, w.owner, w.value, index
	s.notify(Event{Kind: EventGranted, Space: SpaceElection, Name: name, Lease: w.lease, Token: index, Owner: w.owner, Value: w.value, Index: index})
	s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
}

func (s *state) electionDequeue(index uint64, c *Command, r *Result) {
	el := s.elections[c.Name]
	if el != nil && el.leader == c.Lease {
		r.Token, r.Owner, r.Value, r.Modify = el.token, el.owner, el.value, el.modify
		return
	}
	r.Status = StatusNotHolder
	if l := s.leases[c.Lease]; l != nil && l.prims != nil && el != nil {
		if _, queued := l.prims.campaigns[c.Name]; queued {
			s.leaveCampaign(index, c.Name, l)
		}
	}
}

// leaveCampaign takes candidate l out of election name's queue.
func (s *state) leaveCampaign(index uint64, name string, l *lease) {
	w := l.prims.campaigns[name]
	delete(l.prims.campaigns, name)
	s.elecWaitExp.Delete(waitKey(name, l.id))
	el := s.elections[name]
	el.queue.remove(w)
	el.modify = index
	s.notify(Event{Kind: EventWaitEnded, Space: SpaceElection, Name: name, Lease: l.id, Index: index})
	s.notify(Event{Kind: EventLockChanged, Space: SpaceElection, Name: name, Index: index})
}

// ---- leases ending, waits ending ----

// expirePrimWaits ends the semaphore and election waits whose deadline has passed.
func (s *state) expirePrimWaits(index uint64) {
	for _, k := range s.semWaitExp.PopExpired(s.time) {
		name, id := splitWaitKey(k)
		if l := s.leases[id]; l != nil {
			s.leaveSemQueue(index, name, l)
		}
	}
	for _, k := range s.elecWaitExp.PopExpired(s.time) {
		name, id := splitWaitKey(k)
		if l := s.leases[id]; l != nil {
			s.leaveCampaign(index, name, l)
		}
	}
}

// leavePrimQueues takes a lease that ends out of every semaphore and election queue.
func (s *state) leavePrimQueues(index uint64, l *lease) {
	if l.prims == nil {
		return
	}
	for _, name := range sortedNames(l.prims.semWaits) {
		s.leaveSemQueue(index, name, l)
	}
	for _, name := range sortedNames(l.prims.campaigns) {
		s.leaveCampaign(index, name, l)
	}
}

// releasePrims frees the permits and leaderships of leases that ended (already out of
// every queue and of the lease table), in name order, handing each over.
func (s *state) releasePrims(index uint64, ls []*lease) {
	for _, l := range ls {
		if l.prims == nil {
			continue
		}
		for _, name := range sortedNames(l.prims.permits) {
			s.dropPermit(index, name, s.sems[name], l.id)
		}
		for _, name := range sortedNames(l.prims.leads) {
			if el := s.elections[name]; el != nil && el.leader == l.id {
				s.dropLeader(index, name, el)
			}
		}
		l.prims = nil
	}
}

// ---- read-side views ----

// Holding is one grant of a lock or one permit of a semaphore.
type Holding struct {
	Lease LeaseID
	Token uint64
	Owner string
}

// SemaphoreView is a read-only copy of a semaphore's state. A semaphore not in use has
// Limit 0, no permits and no waiters, and the index of the last entry that deleted any
// semaphore as its ModifyIndex.
type SemaphoreView struct {
	Name        string
	Limit       uint64
	Permits     []Holding
	Waiters     []LeaseID
	ModifyIndex uint64
}

// Semaphore returns the state of semaphore name.
func (f *FSM) Semaphore(name string) SemaphoreView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sm := f.s.sems[name]
	if sm == nil {
		return SemaphoreView{Name: name, Permits: []Holding{}, ModifyIndex: f.s.semFreed}
	}
	v := SemaphoreView{Name: name, Limit: sm.limit, Permits: sm.permits.holdings(), ModifyIndex: sm.modify}
	for w := sm.queue.head; w != nil; w = w.next {
		v.Waiters = append(v.Waiters, w.lease)
	}
	return v
}

// ElectionView is a read-only copy of an election's state. With nobody leading, Elected
// is false and ModifyIndex is the index of the last entry that deleted any election.
type ElectionView struct {
	Name        string
	Elected     bool
	Leader      LeaseID
	Token       uint64
	Owner       string
	Value       string
	Candidates  []LeaseID
	ModifyIndex uint64
}

// Election returns the state of election name.
func (f *FSM) Election(name string) ElectionView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	el := f.s.elections[name]
	if el == nil {
		return ElectionView{Name: name, ModifyIndex: f.s.elecFreed}
	}
	v := ElectionView{Name: name, Elected: true, Leader: el.leader, Token: el.token, Owner: el.owner, Value: el.value, ModifyIndex: el.modify}
	for w := el.queue.head; w != nil; w = w.next {
		v.Candidates = append(v.Candidates, w.lease)
	}
	return v
}

// PrimCounts returns the number of semaphores in use, of permits held, and of elections
// with a leader, for metrics.
func (f *FSM) PrimCounts() (semaphores, permits, elections int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, sm := range f.s.sems {
		permits += sm.permits.len()
	}
	return len(f.s.sems), permits, len(f.s.elections)
}

// primNames returns the names of m sorted.
func primNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// applyPrim applies the semaphore and election commands, once the version gate passed.
func (s *state) applyPrim(index uint64, c *Command, r *Result) {
	switch c.Type {
	case TypeSemAcquire:
		s.semAcquire(index, c, r)
	case TypeSemRelease:
		s.semRelease(index, c, r)
	case TypeSemDequeue:
		s.semDequeue(index, c, r)
	case TypeCampaign:
		s.campaign(index, c, r)
	case TypeResign:
		s.resign(index, c, r)
	case TypeElectionDequeue:
		s.electionDequeue(index, c, r)
	}
}
