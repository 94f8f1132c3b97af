package fsm

import "github.com/raftlock/raftlock/internal/mutant"

// MaxSemaphoreLimit bounds a semaphore's number of permits in the state machine. The API
// allows less (api.MaxSemaphoreLimit); this bound only keeps a corrupt entry from
// describing an absurd semaphore.
const MaxSemaphoreLimit = 1 << 20

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

// semAcquire applies SemAcquire: a permit when one is free and nobody waits, the same
// permit again for a lease that holds one, a place in the queue otherwise (with a wait).
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
		s.startSemHold(c.Name, l.id, c.MaxHold)
		r.Token, r.Owner = index, c.Owner
	case mine != nil:
		r.Token, r.Owner = mine.token, mine.owner // idempotent: the same permit again
	case free:
		s.addPermit(index, c.Name, sm, l, c.Owner)
		s.startSemHold(c.Name, l.id, c.MaxHold)
		r.Token, r.Owner = index, c.Owner
	default:
		p := l.usePrims()
		if w, added := s.enqueue(&sm.queue, &p.semWaits, &s.semWaitExp, c.Name, l, c); added {
			w.maxHold = c.MaxHold
			sm.modify = index
			s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: c.Name, Index: index})
		}
		r.Status = StatusQueued
	}
}

// addPermit grants lease l a permit of sm at index.
func (s *state) addPermit(index uint64, name string, sm *semaphore, l *lease, owner string) {
	sm.permits.add(&grant{lease: l.id, token: index, owner: owner})
	addName(&l.usePrims().permits, name)
	sm.modify = index
	s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index})
}

// semRelease applies SemRelease: the lease must hold a permit with the token it presents.
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
	if s.semHoldExp.Len() > 0 {
		s.semHoldExp.Delete(waitKey(name, id))
	}
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
		s.startSemHold(name, w.lease, w.maxHold)
		addName(&next.usePrims().permits, name)
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

// semDequeue applies SemDequeue: a waiting client gave up. A lease that holds a permit by
// now is told its grant instead.
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
