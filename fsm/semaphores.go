package fsm

import (
	"encoding/binary"
	"strings"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// The semaphore's command types (since version 2, SemAcquireEx since 3). Values are part
// of the log format: never renumber them.
const (
	// TypeSemAcquire asks for one permit of a semaphore (Limit permits).
	TypeSemAcquire Type = 19
	// TypeSemRelease releases a permit (Lease, Token).
	TypeSemRelease Type = 20
	// TypeSemDequeue takes a lease out of a semaphore's queue (a waiting client gave up).
	TypeSemDequeue Type = 21
	// TypeSemAcquireEx asks for a semaphore permit with a maximum hold (MaxHold); its body
	// is TypeSemAcquire's followed by MaxHold.
	TypeSemAcquireEx Type = 28
)

// semCommands are the semaphore's rows of the command registry (its row in primitives).
var semCommands = []command{
	{typ: TypeSemAcquire, name: "sem_acquire", since: 2, apply: (*state).semAcquire, body: []field{fieldAcquire, fieldLimit}, lease: leaseCreatesIfNew, exact: true},
	{typ: TypeSemRelease, name: "sem_release", since: 2, apply: (*state).semRelease, body: bodyRelease, lease: leaseUses, exact: true},
	{typ: TypeSemDequeue, name: "sem_dequeue", since: 2, apply: (*state).semDequeue, body: bodyDequeue, lease: leaseUses, exact: true},
	{typ: TypeSemAcquireEx, name: "sem_acquire_ex", since: 3, apply: (*state).semAcquire, body: []field{fieldAcquire, fieldLimit, fieldMaxHold}, lease: leaseCreatesIfNew, exact: true},
}

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

// semState is the replicated state of semaphores. It is empty at version 1 (the commands
// are refused there), so a version 1 snapshot needs no place for it.
type semState struct {
	sems       map[string]*semaphore
	semWaitExp leases.Table // keyed by waitKey(name, lease)
	// semHoldExp are the permits with a maximum hold (version 3), keyed the same way.
	semHoldExp leases.Table
	// semFreed is the index of the last entry that deleted a semaphore: what a status
	// read reports as the modify index of one not in use.
	semFreed uint64
	// semNames are the keys of sems in order, so that a list page is not a scan of them
	// all (Semaphores). Derived state: never encoded, rebuilt on restore.
	semNames *btree.BTreeG[string]
}

// The semaphore's hooks (its row in primitives).

func (s *state) startSems() {
	s.sems = make(map[string]*semaphore)
	s.semNames = btree.NewOrderedG[string](nameIndexDegree)
}

func semWaitTable(s *state) *leases.Table { return &s.semWaitExp }

// dropPermitOf ends lease l's permit of semaphore name, whose lease ended (expired or
// revoked: endCause).
func (s *state) dropPermitOf(index uint64, name string, l *lease) {
	if sm := s.sems[name]; sm != nil && sm.permits.get(l.id) != nil {
		s.dropPermit(index, name, sm, l.id, l, s.hist.endCause)
	}
}

// leaveSemQueueOf takes lease l, which ended, out of the queue of semaphore name.
func (s *state) leaveSemQueueOf(index uint64, name string, l *lease) {
	if l.prims != nil && l.prims.semWaits[name] != nil {
		s.hist.waitCause = HistoryWaitLeaseEnded
		s.leaveSemQueue(index, name, l)
	}
}

// semWaitTimedOut takes lease l out of the queue of semaphore name because its wait
// deadline passed (advance).
func (s *state) semWaitTimedOut(index uint64, name string, l *lease) {
	s.hist.waitCause = HistoryWaitTimedOut
	s.leaveSemQueue(index, name, l)
}

func semCount(_ *state, l *lease) int {
	if l.prims == nil {
		return 0
	}
	return len(l.prims.permits) + len(l.prims.semWaits)
}

func semDeadlines(s *state) []*leases.Table { return []*leases.Table{&s.semWaitExp, &s.semHoldExp} }

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
	l, ok := s.requester(c, r)
	if !ok {
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
	if s.primQuota(c, l, mine != nil || waiting, sm == nil || free, queueLen, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL, r.Limit = l.ttl, c.Limit
	switch {
	case sm == nil:
		sm = &semaphore{limit: c.Limit}
		s.sems[c.Name] = sm
		s.semNames.ReplaceOrInsert(c.Name)
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
	s.took(l, &l.usePrims().permits, name)
	sm.modify = index
	s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index})
	s.recordGrantIn(SpaceSemaphore, name, l, index, owner, nil)
}

// semRelease applies SemRelease: the lease must hold a permit with the token it presents.
func (s *state) semRelease(index uint64, c *Command, r *Result) {
	if s.live(c.Lease) == nil {
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
	s.dropPermit(index, c.Name, sm, c.Lease, nil, HistoryReleased)
}

// dropPermit frees lease id's permit of sm, for cause (a lock kind: released, expired,
// revoked, max_hold_ended; who is the lease when the caller has it), and hands free
// permits to the head waiters.
func (s *state) dropPermit(index uint64, name string, sm *semaphore, id LeaseID, who *lease, cause HistoryKind) {
	if g := sm.permits.get(id); g != nil {
		s.recordEndIn(SpaceSemaphore, name, id, who, g.token, g.owner, cause)
	}
	sm.permits.remove(id)
	if s.semHoldExp.Len() > 0 {
		s.semHoldExp.Delete(waitKey(name, id))
	}
	if l := s.leases[id]; l != nil && l.prims != nil {
		s.gave(l, l.prims.permits, name)
	}
	sm.modify = index
	s.fillPermits(index, name, sm)
}

// fillPermits grants free permits to the head waiters, in queue order, at index; a
// semaphore left with no permit and no waiter is deleted.
func (s *state) fillPermits(index uint64, name string, sm *semaphore) {
	// Version 6: a head waiter whose lease ended holds the free permits back until the
	// sweep ends its wait (sweep.go).
	for uint64(sm.permits.len()) < sm.limit && sm.queue.head != nil && !s.waitsForEnded(sm.queue.head) {
		w := sm.queue.head
		sm.queue.remove(w)
		next := s.leases[w.lease]
		s.unqueued(next, next.prims.semWaits, name)
		s.semWaitExp.Delete(waitKey(name, w.lease))
		sm.permits.add(&grant{lease: w.lease, token: index, owner: w.owner})
		s.startSemHold(name, w.lease, w.maxHold)
		s.took(next, &next.usePrims().permits, name)
		sm.modify = index
		s.notify(Event{Kind: EventGranted, Space: SpaceSemaphore, Name: name, Lease: w.lease, Token: index, Owner: w.owner, Index: index})
		s.recordGrantIn(SpaceSemaphore, name, next, index, w.owner, w)
	}
	if sm.permits.len() == 0 && sm.queue.len == 0 {
		delete(s.sems, name)
		s.semNames.Delete(name)
		s.semFreed = index
		s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index, Freed: true})
		return
	}
	s.notify(Event{Kind: EventLockChanged, Space: SpaceSemaphore, Name: name, Index: index})
}

// semDequeue applies SemDequeue: a waiting client gave up. A lease that holds a permit by
// now is told its grant instead.
func (s *state) semDequeue(index uint64, c *Command, r *Result) {
	if s.ended(c.Lease) {
		r.Status = StatusNotHolder // the sweep ends what it holds and waits for
		return
	}
	if sm := s.sems[c.Name]; sm != nil {
		if g := sm.permits.get(c.Lease); g != nil {
			r.Token, r.Owner, r.Limit = g.token, g.owner, sm.limit
			return
		}
		s.hist.waitCause = HistoryWaitAbandoned
		s.giveUp(index, c.Name, c.Lease, semWaits, (*state).leaveSemQueue)
	}
	r.Status = StatusNotHolder
}

// leaveSemQueue takes lease l, which waits for semaphore name, out of its queue, for the
// current waitCause.
func (s *state) leaveSemQueue(index uint64, name string, l *lease) {
	sm := s.sems[name]
	s.recordWaitEndIn(SpaceSemaphore, name, l.prims.semWaits[name], l)
	s.unqueue(l.prims.semWaits, &s.semWaitExp, &sm.queue, name, l)
	sm.modify = index
	s.notify(Event{Kind: EventWaitEnded, Space: SpaceSemaphore, Name: name, Lease: l.id, Index: index})
	s.fillPermits(index, name, sm) // a no-op while the semaphore is full, as it is with waiters
}

// startSemHold records the maximum hold of lease id's new permit of semaphore name.
func (s *state) startSemHold(name string, id LeaseID, maxHold int64) {
	if maxHold > 0 {
		s.semHoldExp.Set(waitKey(name, id), satAdd(s.stamp, maxHold))
	}
}

// expireSemHolds ends every semaphore permit whose maximum hold has passed at the current
// time, in (deadline, name, lease) order, handing each permit to the head waiter.
func (s *state) expireSemHolds(index uint64) {
	if s.semHoldExp.Len() == 0 || mutant.Is("max-hold-ignored") {
		return
	}
	for {
		k, ok := s.popExpired(&s.semHoldExp)
		if !ok {
			return
		}
		name, id := splitWaitKey(k)
		if sm := s.sems[name]; sm != nil && sm.permits.get(id) != nil {
			s.dropPermit(index, name, sm, id, nil, HistoryMaxHold)
		}
		s.unitDone(index)
	}
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
	// Queue is the first waiters in queue order with their owners and times, when the
	// read asked for them (SemaphoreQueue); nil otherwise.
	Queue []Waiting
}

// Semaphore returns the state of semaphore name.
func (f *FSM) Semaphore(name string) SemaphoreView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.semView(name, 0)
}

// semView is the view of semaphore name with its first queue waiters in Queue.
func (s *state) semView(name string, queue int) SemaphoreView {
	sm := s.sems[name]
	if sm == nil {
		return SemaphoreView{Name: name, Permits: []Holding{}, ModifyIndex: s.semFreed}
	}
	v := SemaphoreView{Name: name, Limit: sm.limit, Permits: sm.permits.holdings(), ModifyIndex: sm.modify}
	if s.version >= 6 { // the permits of ended leases are held by nobody (sweep.go)
		live := v.Permits[:0]
		for _, h := range v.Permits {
			if !s.deadID(h.Lease) {
				live = append(live, h)
			}
		}
		v.Permits = live
	}
	for w := sm.queue.head; w != nil; w = w.next {
		v.Waiters = append(v.Waiters, w.lease)
	}
	v.Queue = s.queueOf(&sm.queue, queue)
	return v
}

// Semaphores returns one page of the semaphores in use whose names start with prefix and
// sort after after, in name order, each with its first queue waiters: at most limit of
// them (truncated reports that more follow). The work under the read lock is one descent
// of the name index plus the page.
func (f *FSM) Semaphores(prefix, after string, limit, queue int) (views []SemaphoreView, truncated bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	truncated = pageNames(f.s.semNames, prefix, after, limit, func(n string) { views = append(views, f.s.semView(n, queue)) })
	return views, truncated
}

// pageNames calls add for each name of index that starts with prefix and sorts after
// after, in order, at most limit of them (every one when limit <= 0), and reports whether
// more follow.
func pageNames(index *btree.BTreeG[string], prefix, after string, limit int, add func(string)) (truncated bool) {
	n := 0
	index.AscendGreaterOrEqual(max(prefix, after), func(name string) bool {
		switch {
		case name == after:
			return true
		case !strings.HasPrefix(name, prefix):
			return false
		case limit > 0 && n == limit:
			truncated = true
			return false
		}
		add(name)
		n++
		return true
	})
	return truncated
}

// PrimCounts returns the number of semaphores in use, of permits held, and of elections
// with a leader, for metrics.
func (f *FSM) PrimCounts() (semaphores, permits, elections int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, sm := range f.s.sems {
		permits += sm.permits.len()
	}
	for _, el := range f.s.elections {
		if el.leader != (LeaseID{}) { // version 6: one may wait for the sweep with nobody leading
			elections++
		}
	}
	return len(f.s.sems), permits, elections
}

// The semaphore's parts of the snapshot:
//
//	format 2:  semFreed (before the elections' elecFreed), then, after it, the
//	           semaphores: count, then in name order: name, limit, modify, permits
//	           (count, then lease, token, owner each), waiters (count, then lease, owner,
//	           deadline, since each)
//	version 3: maximum holds of permits (as the locks', appendHolds), then wait
//	           options: count, then per semaphore in name order, per wait in queue
//	           order with a maximum hold: name, position, maximum hold

func semFreed(s *state) *uint64 { return &s.semFreed }

// encodeSems writes the semaphores of format 2.
func (s *state) encodeSems(e *snapEncoder) {
	buf := binary.AppendUvarint(e.buf, uint64(len(s.sems)))
	for _, name := range sortedNames(s.sems) {
		sm := s.sems[name]
		buf = appendString(buf, name)
		buf = binary.AppendUvarint(buf, sm.limit)
		buf = binary.AppendUvarint(buf, sm.modify)
		buf = binary.AppendUvarint(buf, uint64(sm.permits.len()))
		for g := sm.permits.head; g != nil; g = g.next {
			buf = appendGrant(buf, g)
		}
		buf = binary.AppendUvarint(buf, uint64(sm.queue.len))
		for w := sm.queue.head; w != nil; w = w.next {
			buf = appendWaiter(buf, w, true)
		}
		buf = e.spillAt(buf)
	}
	e.buf = buf
}

// decodeSems reads what encodeSems wrote, after the leases, and refuses a permit or a
// wait of a missing lease, a lease twice in one semaphore, more permits than the limit,
// and waiters beside free permits.
func (s *state) decodeSems(d *decoder) error {
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		sm := &semaphore{limit: d.uvarint(), modify: d.uvarint()}
		if d.err == nil && (!validName(name) || sm.limit == 0 || sm.limit > MaxSemaphoreLimit || s.sems[name] != nil) {
			return badSnapshot("semaphore %q: bad name or limit, or listed twice", name)
		}
		for j, m := 0, d.count(1); j < m && d.err == nil; j++ {
			g := d.grant()
			if d.err != nil {
				break
			}
			l := s.leases[g.lease]
			if l == nil || sm.permits.get(g.lease) != nil {
				return badSnapshot("semaphore %q: permit lease missing or twice", name)
			}
			sm.permits.add(g)
			addName(&l.usePrims().permits, name)
		}
		for j, m := 0, d.count(1); j < m && d.err == nil; j++ {
			w := d.waiter(true)
			if d.err != nil {
				break
			}
			l := s.leases[w.lease]
			if l == nil || sm.permits.get(w.lease) != nil || l.usePrims().semWaits[name] != nil {
				return badSnapshot("semaphore %q: waiter lease missing, holding, or twice", name)
			}
			sm.queue.push(w)
			addWaiter(&l.prims.semWaits, name, w)
			s.semWaitExp.Set(waitKey(name, w.lease), w.deadline)
		}
		if d.err != nil {
			break
		}
		// From version 6 a head waiter whose lease ended holds free permits back (sweep.go).
		if held := uint64(sm.permits.len()); held > sm.limit || (held == 0 || sm.queue.len > 0 && held < sm.limit) && !s.waitsForEnded(sm.queue.head) {
			return badSnapshot("semaphore %q: %d permits of %d with %d waiting", name, held, sm.limit, sm.queue.len)
		}
		s.sems[name] = sm
		s.semNames.ReplaceOrInsert(name)
	}
	return nil
}

// encodeSemHolds writes the semaphore's part of version 3.
func (s *state) encodeSemHolds(e *snapEncoder) {
	buf := appendHolds(e, e.buf, &s.semHoldExp)
	var wopts []waitOpt
	for _, n := range sortedNames(s.sems) {
		pos := uint64(0)
		for w := s.sems[n].queue.head; w != nil; w = w.next {
			if w.maxHold != 0 {
				wopts = append(wopts, waitOpt{n, pos, w.maxHold, 0})
			}
			pos++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(wopts)))
	for _, o := range wopts {
		buf = appendString(buf, o.name)
		buf = binary.AppendUvarint(buf, o.pos)
		buf = binary.AppendUvarint(buf, uint64(o.hold))
		buf = e.spillAt(buf)
	}
	e.buf = buf
}

// decodeSemHolds reads what encodeSemHolds wrote, and refuses a hold of a lease without a
// permit and options at a position with no wait.
func (s *state) decodeSemHolds(d *decoder) error {
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name, id, deadline := d.string(), d.leaseID(), d.int64()
		if d.err != nil {
			break
		}
		if sm := s.sems[name]; sm == nil || sm.permits.get(id) == nil {
			return badSnapshot("maximum hold of semaphore %q: not a permit holder", name)
		}
		s.semHoldExp.Set(waitKey(name, id), deadline)
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name, pos, hold := d.string(), d.uvarint(), d.int64()
		sm := s.sems[name]
		if d.err != nil {
			break
		}
		if sm == nil {
			return badSnapshot("wait options of semaphore %q: no such semaphore", name)
		}
		w := sm.queue.head
		for j := uint64(0); j < pos && w != nil; j++ {
			w = w.next
		}
		if w == nil || hold == 0 {
			return badSnapshot("wait options of semaphore %q: bad position %d", name, pos)
		}
		w.maxHold = hold
	}
	return nil
}
