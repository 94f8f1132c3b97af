package fsm

import (
	"encoding/binary"
	"sort"
	"strings"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// A lock is held in one of two modes: exclusive (one holder: lock.holder) or shared
// (readers: any number of holders, and lock.holder, token and owner mirror the oldest of
// them, so that everything written for exclusive locks, the snapshot's lock records
// included, reads a shared lock as held by its oldest reader).
//
// One FIFO queue serves both modes. A shared request is granted at once only when the lock
// is held shared and nobody waits, so a queued exclusive request holds back every later
// shared one (writers do not starve). Whenever the head of the queue is a shared waiter
// and the lock is free or held shared, that waiter and every shared waiter behind it up to
// the first exclusive one are granted in the same entry, each with the entry's index as
// its token.

// lockCommands are the lock's rows of the command registry (its row in primitives), its
// locksets' included; their types are in command.go. acquire tells the modes apart by the
// exact type byte: an AcquireShared that also carries FlagSkippable acquires in exclusive
// mode, on every node.
var lockCommands = []command{
	{typ: TypeAcquire, name: "acquire", since: 1, apply: (*state).acquire, body: []field{fieldAcquire}, lease: leaseCreatesIfNew},
	{typ: TypeRelease, name: "release", since: 1, apply: (*state).release, body: bodyRelease, lease: leaseUses},
	{typ: TypeDequeue, name: "dequeue", since: 1, apply: (*state).dequeue, body: bodyDequeue, lease: leaseUses},
	{typ: TypeAcquireShared, name: "acquire_shared", since: 2, apply: (*state).acquire, body: []field{fieldAcquire}, lease: leaseCreatesIfNew},
	{typ: TypeAcquireEx, name: "acquire_ex", since: 3, apply: (*state).acquire, body: []field{fieldAcquire, fieldOptions}, lease: leaseCreatesIfNew, exact: true},
	{typ: TypeLockSet, name: "lockset", since: 3, apply: (*state).lockSetAcquire, body: []field{fieldAcquire, fieldNames, fieldOptions}, lease: leaseCreatesIfNew, exact: true},
	{typ: TypeLockSetRelease, name: "lockset_release", since: 3, apply: (*state).lockSetRelease, body: []field{fieldLease, fieldNames, fieldTokens}, lease: leaseUses, exact: true},
}

// lockState is the replicated state of locks: the lock table, the waits, and what version
// 3 added (maximum holds and lock delays, maxhold.go).
type lockState struct {
	freedIndex uint64 // index of the last entry that freed a lock (dropped its state)
	locks      map[string]*lock
	names      *btree.BTreeG[string] // the keys of locks in order, so a list page is not a scan
	// waited holds, in order, the names of the locks that had waiters since they were
	// last created: every lock with a waiter is in it (a lock leaves it when it is
	// deleted), so that the wait-for view (waits.go) scans the queues, not every lock.
	// Derived state: never encoded, rebuilt on restore.
	waited   *btree.BTreeG[string]
	waitExp  leases.Table // lock waits, keyed by waitKey(name, lease)
	holdExp  leases.Table // grants with a maximum hold, keyed by waitKey(name, lease)
	delayExp leases.Table // locks in a lock delay, keyed by name
	// admit is scratch for one entry: locks held shared whose queue lost a waiter, whose
	// head may now be shared waiters to admit (settle).
	admit []string
	// noCycleCheck turns deadlock detection off. Only the reference of TestDeadlock_Model
	// sets it, on a copy of a state, to see what a refused request would have led to.
	noCycleCheck bool
}

// nameIndexDegree is the B-tree degree of the lock name index: nodes of up to 63 names
// keep the tree shallow (4 levels at 1,000,000 locks) and a page's names mostly in one
// node.
const nameIndexDegree = 32

// startLocks makes the empty lock table (the lock's row in primitives).
func (s *state) startLocks() {
	s.locks = make(map[string]*lock)
	s.names = btree.NewOrderedG[string](nameIndexDegree)
	s.waited = btree.NewOrderedG[string](nameIndexDegree)
}

// The lock's hooks (its row in primitives).

func lockWaitTable(s *state) *leases.Table { return &s.waitExp }

// expireLockDeadlines ends the grants past their maximum hold, then the lock delays that
// are over (maxhold.go).
func (s *state) expireLockDeadlines(index uint64) {
	s.expireHolds(index)
	s.expireDelays(index)
}

// leaveLockQueue takes lease l, which ended, out of the queue of lock name (with its
// whole lockset, when it waits there as one).
func (s *state) leaveLockQueue(index uint64, name string, l *lease) {
	s.hist.waitCause = HistoryWaitLeaseEnded
	s.leaveQueue(index, name, l)
}

// dropLockOf ends lease l's grant of lock name, whose lease ended: with the grant's lock
// delay when it has one (maxhold.go), handed over otherwise.
func (s *state) dropLockOf(index uint64, name string, l *lease) {
	if lk := s.locks[name]; lk != nil {
		if _, _, ok := lk.grantOf(l.id); ok {
			s.endGrantOfEndedLease(index, name, lk, l)
		}
	}
}

func lockCount(_ *state, l *lease) int { return len(l.held) + len(l.waiting) }

func lockDeadlines(s *state) []*leases.Table {
	return []*leases.Table{&s.waitExp, &s.holdExp, &s.delayExp}
}

// lock is a held lock. A lock that is free has no waiters (a release hands it to the first
// one) and so is deleted from the table: free locks take no memory.
type lock struct {
	holder LeaseID
	token  uint64
	owner  string
	modify uint64
	// x is what almost every lock leaves empty: its waiters, its readers and what
	// protocol version 3 adds. It is nil until one of them is used, so that a lock held
	// exclusive with nobody waiting takes 56 bytes (the 64-byte size class) instead of
	// 104 (112): at 1,000,000 locks, 96 MB less across the live state and the snapshot
	// shadow, and fewer pointers for the collector to scan. Read it through ro, change it
	// through rw.
	x *lockExtra
}

// lockExtra is the part of a lock that a lock held exclusive with nobody waiting and no
// lock delay leaves empty.
type lockExtra struct {
	queue waitQueue
	// readers holds every holder while the lock is held shared, and is nil while it is
	// held exclusive.
	readers *grantSet
	// v3 is what protocol version 3 adds (locksets.go, maxhold.go): a lock without a
	// holder that is reserved for a waiting lockset or kept unavailable by a lock delay,
	// and the current exclusive grant's lock delay.
	v3 lockV3
}

// noExtra is what ro returns for a lock without its extra part. Nothing may change it
// (checkNoExtra checks that after every step of the property tests).
var noExtra lockExtra

// ro returns the lock's extra part for reading: the shared empty one when it has none.
// Reads under the FSM's read lock go through ro, so they never allocate.
func (lk *lock) ro() *lockExtra {
	if lk.x == nil {
		return &noExtra
	}
	return lk.x
}

// rw returns the lock's extra part for changing it, allocating it on first use.
func (lk *lock) rw() *lockExtra {
	if lk.x == nil {
		lk.x = &lockExtra{}
	}
	return lk.x
}

// addReader adds g to the lock's readers, making it shared if it was not.
func (lk *lock) addReader(g *grant) {
	x := lk.rw()
	if x.readers == nil {
		x.readers = &grantSet{}
	}
	x.readers.add(g)
}

// shrink drops the extra part once it is empty again, so that a lock that had waiters and
// has none left is back to its small size. States that differ only in an empty extra part
// encode to the same bytes: the snapshot writes the fields, not the pointer.
func (lk *lock) shrink() {
	if x := lk.x; x != nil && x.queue.len == 0 && x.readers == nil && x.v3 == (lockV3{}) {
		lk.x = nil
	}
}

// isShared reports whether the lock is held in shared mode.
func (lk *lock) isShared() bool { return lk.x != nil && lk.x.readers != nil }

// grantOf returns lease id's grant of the lock, if it holds it in either mode.
func (lk *lock) grantOf(id LeaseID) (token uint64, owner string, ok bool) {
	if lk.ro().v3.vacant {
		return 0, "", false
	}
	if lk.ro().readers != nil {
		if g := lk.ro().readers.get(id); g != nil {
			return g.token, g.owner, true
		}
		return 0, "", false
	}
	if lk.holder == id {
		return lk.token, lk.owner, true
	}
	return 0, "", false
}

// syncHead makes holder, token and owner mirror the oldest reader.
func (lk *lock) syncHead() {
	h := lk.ro().readers.head
	lk.holder, lk.token, lk.owner = h.lease, h.token, h.owner
}

// acquire applies Acquire and AcquireShared. A free lock is granted with this entry's
// index as its token; the lease that holds the lock gets the same grant again; a shared
// request joins the readers of a lock held shared while nobody waits; any other request
// waits in the queue when it may (Wait), and is refused with StatusLockHeld when not.
func (s *state) acquire(index uint64, c *Command, r *Result) {
	shared := c.Type == TypeAcquireShared || c.Type == TypeAcquireEx && c.Shared
	if !validName(c.Name) {
		invalid(r, "bad lock name")
		return
	}
	l, ok := s.requester(c, r)
	if !ok {
		return
	}
	lk := s.locks[c.Name]
	mine := false
	if lk != nil && l != nil {
		if _, _, ok := lk.grantOf(l.id); ok {
			mine = true
			if lk.isShared() != shared {
				r.Status = StatusModeConflict // no upgrade, no downgrade
				return
			}
		} else if w := l.waiting[c.Name]; w != nil && w.shared != shared {
			r.Status = StatusModeConflict
			return
		}
	}
	// A shared request joins the readers only when nobody waits: a waiting exclusive
	// request comes first.
	join := shared && lk != nil && !mine && lk.ro().queue.len == 0 &&
		(lk.isShared() || mutant.Is("shared-beside-exclusive"))
	if lk != nil && !mine && !join && c.Wait <= 0 {
		// Held, no wait: refuse without creating the lease, so a failed one-shot acquire
		// leaves nothing behind.
		r.Status = StatusLockHeld
		return
	}
	if lk != nil && !mine && !join && s.refuseDeadlock(c, l, lk, shared, r) {
		return
	}
	if s.acquireQuota(c, l, lk, lk == nil || join, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL = l.ttl
	switch {
	case lk == nil:
		lk = &lock{holder: l.id, token: index, owner: c.Owner, modify: index}
		if shared {
			lk.addReader(&grant{lease: l.id, token: index, owner: c.Owner})
		}
		s.locks[c.Name] = lk
		s.names.ReplaceOrInsert(c.Name)
		s.took(l, &l.held, c.Name)
		s.startHold(c.Name, lk, l.id, c.MaxHold, c.LockDelay, shared)
		s.notify(Event{Kind: EventLockChanged, Name: c.Name, Index: index})
		s.record(c.Name, l, HistoryEvent{Kind: HistoryGranted, Lease: l.fingerprint(), Token: index, Owner: c.Owner})
		r.Token, r.Owner = index, c.Owner
	case mine:
		r.Token, r.Owner, _ = lk.grantOf(l.id) // idempotent: the same grant again
	case join:
		if !lk.isShared() { // only the mutant joins an exclusive holder
			lk.addReader(&grant{lease: lk.holder, token: lk.token, owner: lk.owner})
		}
		lk.addReader(&grant{lease: l.id, token: index, owner: c.Owner})
		lk.modify = index
		s.took(l, &l.held, c.Name)
		s.startHold(c.Name, lk, l.id, c.MaxHold, 0, true)
		s.notify(Event{Kind: EventLockChanged, Name: c.Name, Index: index})
		s.record(c.Name, l, HistoryEvent{Kind: HistoryGranted, Lease: l.fingerprint(), Token: index, Owner: c.Owner})
		r.Token, r.Owner = index, c.Owner
	default:
		if w, added := s.enqueue(&lk.rw().queue, &l.waiting, &s.waitExp, c.Name, l, c); added {
			w.shared = shared
			w.maxHold, w.lockDelay = c.MaxHold, c.LockDelay
			lk.modify = index
			s.waited.ReplaceOrInsert(c.Name)
			s.notify(Event{Kind: EventLockChanged, Name: c.Name, Index: index})
		}
		r.Status = StatusQueued
	}
}

// release applies Release: the lease must hold the lock with the token it presents.
func (s *state) release(index uint64, c *Command, r *Result) {
	l := s.live(c.Lease)
	lk := s.locks[c.Name]
	var token uint64
	var holds bool
	if lk != nil {
		token, _, holds = lk.grantOf(c.Lease)
	}
	switch {
	case l == nil:
		r.Status = StatusLeaseNotFound
	case !holds || token != c.Token && !mutant.Is("release-ignores-token"):
		r.Status = StatusNotHolder
	default:
		s.recordEnd(c.Name, lk, l, HistoryReleased)
		s.releaseGrant(index, c.Name, lk, l.id)
	}
}

// dequeue applies Dequeue: a waiting client gave up. A lease that holds the lock by now
// is told its grant instead.
func (s *state) dequeue(index uint64, c *Command, r *Result) {
	lk := s.locks[c.Name]
	if s.ended(c.Lease) {
		r.Status = StatusNotHolder // the sweep ends what it holds and waits for
		return
	}
	if lk != nil {
		if token, owner, ok := lk.grantOf(c.Lease); ok {
			r.Token, r.Owner = token, owner
			return
		}
	}
	r.Status = StatusNotHolder
	if l := s.leases[c.Lease]; l != nil && lk != nil {
		if _, queued := l.waiting[c.Name]; queued && !mutant.Is("abandon-not-dequeued") {
			s.hist.waitCause = HistoryWaitAbandoned
			s.leaveQueue(index, c.Name, l)
		}
	}
}

// leaveQueue takes lease l, which waits for lock name, out of that lock's queue.
func (s *state) leaveQueue(index uint64, name string, l *lease) {
	w := l.waiting[name]
	if w == nil {
		return // a lockset's wait, which left every queue with its first name
	}
	if w.set != nil {
		s.leaveSet(index, l, w.set)
		return
	}
	s.unqueued(l, l.waiting, name)
	s.waitExp.Delete(waitKey(name, l.id))
	lk := s.locks[name]
	lk.rw().queue.remove(w)
	lk.modify = index
	if lk.isShared() && lk.ro().queue.head != nil && lk.ro().queue.head.shared || lk.ro().v3.vacant {
		s.admit = append(s.admit, name) // granted by settle, once the entry's removals are done
	}
	lk.shrink()
	s.recordWaitEnd(name, w, l)
	s.notify(Event{Kind: EventWaitEnded, Name: name, Lease: l.id, Index: index})
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

// lockWaitTimedOut takes lease l out of the queue of lock name because its wait deadline
// passed (advance).
func (s *state) lockWaitTimedOut(index uint64, name string, l *lease) {
	if mutant.Is("expired-waiters-stay") || l.waiting[name] == nil {
		return
	}
	s.hist.waitCause = HistoryWaitTimedOut
	s.leaveQueue(index, name, l)
}

// releaseGrant ends lease id's grant of lock name (either mode) at index. The lock is
// handed over when it becomes free: at once when exclusive, when the last reader leaves
// when shared.
func (s *state) releaseGrant(index uint64, name string, lk *lock, id LeaseID) {
	s.endHold(name, id)
	if !lk.isShared() {
		s.releaseExclusive(index, name, lk)
		return
	}
	lk.rw().readers.remove(id)
	if l := s.leases[id]; l != nil {
		s.gaveLock(l, name)
	}
	lk.modify = index
	if lk.ro().readers.len() > 0 {
		lk.syncHead()
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
		return
	}
	lk.rw().readers = nil
	s.handOver(index, name, lk)
}

// releaseExclusive frees lock name, held exclusive by lk, and hands it to the first waiter
// in the same entry: the new grant's token is this entry's index.
func (s *state) releaseExclusive(index uint64, name string, lk *lock) {
	if old := s.leases[lk.holder]; old != nil {
		s.gaveLock(old, name)
	}
	s.handOver(index, name, lk)
}

// handOver gives lock name, which has just become free, to the head of its queue at index:
// to the head waiter when it is exclusive, to the shared waiters at the head otherwise. A
// lock with nobody waiting is deleted.
func (s *state) handOver(index uint64, name string, lk *lock) {
	if lk.ro().queue.len == 0 {
		delete(s.locks, name)
		s.names.Delete(name)
		s.waited.Delete(name)
		s.freedIndex = index
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index, Freed: true})
		return
	}
	w := lk.ro().queue.head
	if s.waitsForEnded(w) {
		// Version 6: the head's lease ended. The lock is held by nobody, reserved, until
		// the sweep ends that wait and hands it on (sweep.go).
		if !lk.ro().v3.vacant {
			s.vacate(index, name, lk)
		}
		return
	}
	if w.set != nil {
		// The head is a lockset: the lock waits for it, reserved, until every lock of the
		// set is free for it (locksets.go).
		s.vacate(index, name, lk)
		s.tryGrantSet(index, w.set)
		return
	}
	if w.shared {
		s.grantShared(index, name, lk)
		return
	}
	if mutant.Is("handover-skips-head") && w.next != nil && w.next.set == nil {
		w = w.next
	}
	lk.rw().queue.remove(w)
	next := s.leases[w.lease]
	s.unqueued(next, next.waiting, name)
	s.waitExp.Delete(waitKey(name, w.lease))
	s.took(next, &next.held, name)
	token := index
	if mutant.Is("handover-token-plus-one") {
		token = lk.token + 1
	}
	if mutant.Is("regrant-keeps-token") {
		token = lk.token
	}
	lk.holder, lk.token, lk.owner, lk.modify = w.lease, token, w.owner, index
	lk.rw().v3.vacant = false
	s.startHold(name, lk, w.lease, w.maxHold, w.lockDelay, false)
	lk.shrink()
	s.grantedFromQueue(index, name, next, w, token)
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

// grantShared grants the lock, free or held shared, to the shared waiters at the head of
// its queue, up to the first exclusive one, all at index.
func (s *state) grantShared(index uint64, name string, lk *lock) {
	if lk.ro().queue.head != nil && lk.ro().queue.head.set != nil {
		s.tryGrantSet(index, lk.ro().queue.head.set) // a lockset at the head is granted whole or not at all
		return
	}
	x := lk.rw() // its queue has a shared waiter at the head: the part exists
	if x.readers == nil {
		x.readers = &grantSet{}
	}
	if s.waitsForEnded(x.queue.head) {
		return // held shared already (handOver reserves a free lock): wait for the sweep
	}
	x.v3.vacant = false
	for w := x.queue.head; w != nil && w.shared && w.set == nil && !s.waitsForEnded(w); w = x.queue.head {
		x.queue.remove(w)
		next := s.leases[w.lease]
		s.unqueued(next, next.waiting, name)
		s.waitExp.Delete(waitKey(name, w.lease))
		s.took(next, &next.held, name)
		x.readers.add(&grant{lease: w.lease, token: index, owner: w.owner})
		s.startHold(name, lk, w.lease, w.maxHold, 0, true)
		s.grantedFromQueue(index, name, next, w, index)
	}
	lk.syncHead()
	lk.modify = index
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
	if h := lk.ro().queue.head; h != nil && h.set != nil && h.set.shared {
		s.tryGrantSet(index, h.set)
	}
}

// grantedFromQueue tells the watchers and the history of lock name that waiter w, of
// lease l, was granted the lock with token at index; the history keeps how long it
// waited (w.since is one more than the time its wait began, zero where that is unknown).
func (s *state) grantedFromQueue(index uint64, name string, l *lease, w *waiter, token uint64) {
	s.notify(Event{Kind: EventGranted, Name: name, Lease: l.id, Token: token, Owner: w.owner, Index: index})
	granted := HistoryEvent{Kind: HistoryGranted, FromQueue: true, Lease: l.fingerprint(), Token: token, Owner: w.owner}
	if w.since > 0 {
		granted.Waited = s.time - (w.since - 1)
	}
	s.record(name, l, granted)
}

// settle admits the shared waiters that a waiter leaving the queue put at its head while
// the lock is held shared (s.admit), in name order. It runs once the entry's removals are
// done, so that nothing is granted to a lease that ends in the same entry.
func (s *state) settle(index uint64) {
	// Granting a lockset may put shared waiters at the head of more queues (tryGrantSet
	// adds them to s.admit): settle until none is left, so that nothing of an entry is
	// left for the next one (a node restored from a snapshot has no s.admit).
	for len(s.admit) > 0 {
		s.settleOnce(index)
	}
}

// settleOnce admits the waiters of the locks in s.admit as settle describes.
func (s *state) settleOnce(index uint64) {
	names := s.admit
	s.admit = nil
	sort.Strings(names)
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		lk := s.locks[name]
		switch {
		case lk == nil:
		case lk.ro().v3.vacant:
			s.settleVacant(index, name, lk)
		case lk.isShared() && lk.ro().queue.head != nil && lk.ro().queue.head.shared:
			s.grantShared(index, name, lk)
		}
	}
}

// LockView is a read-only copy of a lock's state.
type LockView struct {
	Name string
	Held bool
	// Shared reports a lock held in shared mode.
	Shared bool
	// Holder, Token and Owner are the exclusive holder's grant. For a lock held shared,
	// Holder and Owner are the oldest reader's and Token the newest (highest) token.
	Holder LeaseID
	Token  uint64
	Owner  string
	// Holders are every grant in grant order (one when exclusive).
	Holders     []Holding
	Waiters     []LeaseID
	ModifyIndex uint64
	// DelayedUntil is the cluster time until which a lock delay keeps the lock from
	// every waiter (0: none); MaxHoldUntil is when the exclusive grant ends at the
	// latest (0: no maximum hold).
	DelayedUntil int64
	MaxHoldUntil int64
	// DelayRemaining and MaxHoldRemaining are the same as durations from the cluster time
	// of the read, in ms (0: none).
	DelayRemaining, MaxHoldRemaining int64
	// Queue is the first waiters in queue order with their owners and times, when the
	// read asked for them (LockQueue, an overview with a queue); nil otherwise.
	Queue []Waiting
	// Sets are the lockset groups its holders' grants belong to, in holder order: a grant
	// made by a lockset, with every lock the group still holds (version 7).
	Sets []LockSetView
}

func (s *state) view(name string) LockView {
	lk := s.locks[name]
	if lk == nil {
		return LockView{Name: name, ModifyIndex: s.freedIndex}
	}
	v := LockView{Name: name, Held: true, Holder: lk.holder, Token: lk.token, Owner: lk.owner, ModifyIndex: lk.modify}
	switch {
	case lk.ro().v3.vacant:
		v.Held, v.Holder, v.Token, v.Owner, v.DelayedUntil = false, LeaseID{}, 0, "", lk.ro().v3.delayUntil
	case lk.isShared():
		v.Shared, v.Holders, v.Token = true, lk.ro().readers.holdings(), lk.ro().readers.tail.token
	default:
		v.Holders = []Holding{{Lease: lk.holder, Token: lk.token, Owner: lk.owner}}
		v.MaxHoldUntil, _ = s.holdExp.Deadline(waitKey(name, lk.holder))
	}
	if v.DelayedUntil > 0 {
		v.DelayRemaining = max(v.DelayedUntil-s.time, 1)
	}
	if v.MaxHoldUntil > 0 {
		v.MaxHoldRemaining = max(v.MaxHoldUntil-s.time, 1)
	}
	for w := lk.ro().queue.head; w != nil; w = w.next {
		v.Waiters = append(v.Waiters, w.lease)
	}
	if s.version >= 6 {
		s.withoutEnded(&v)
	}
	if s.version >= 7 {
		for _, h := range v.Holders {
			if sv := s.setOf(name, h.Lease, h.Token); sv != nil {
				v.Sets = append(v.Sets, *sv)
			}
		}
	}
	return v
}

// withoutEnded takes the grants of ended leases out of a view (version 6): until the sweep
// reaches them they are held by nobody, as far as any reader is told.
func (s *state) withoutEnded(v *LockView) {
	live := v.Holders[:0:0]
	for _, h := range v.Holders {
		if !s.deadID(h.Lease) {
			live = append(live, h)
		}
	}
	if len(live) == len(v.Holders) {
		return
	}
	v.Holders = live
	if len(live) == 0 {
		v.Held, v.Shared, v.Holder, v.Token, v.Owner = false, false, LeaseID{}, 0, ""
		v.Holders, v.MaxHoldUntil, v.MaxHoldRemaining = nil, 0, 0
		return
	}
	v.Holder, v.Owner, v.Token = live[0].Lease, live[0].Owner, 0
	for _, h := range live {
		v.Token = max(v.Token, h.Token)
	}
}

// Lock returns the state of lock name. A free lock reports the index of the last entry
// that freed any lock as its ModifyIndex: at least the index that freed this one, and
// never lower than an index reported before.
func (f *FSM) Lock(name string) LockView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.view(name)
}

// Locks returns one page of the held locks whose names start with prefix, in name order:
// those whose names sort strictly after the cursor after (all of them when after is ""),
// at most limit of them when limit > 0 (no limit otherwise). truncated reports that at
// least one more such lock follows the page; the next page is asked for with after set
// to the last name of this one. The work under the read lock is one descent of the name
// index plus the page itself, whatever the number of locks, so that a listing holds up
// Apply only for as long as its page takes. views is empty, not nil, when nothing matches.
func (f *FSM) Locks(prefix, after string, limit int) (views []LockView, truncated bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	views = make([]LockView, 0, min(max(limit, 0), maxPagePrealloc))
	// The names with a prefix are contiguous in name order: start at the later of prefix
	// and after, and stop at the first name without the prefix.
	f.s.names.AscendGreaterOrEqual(max(prefix, after), func(n string) bool {
		switch {
		case n == after:
			return true // the cursor itself was on the previous page
		case !strings.HasPrefix(n, prefix):
			return false
		case limit > 0 && len(views) == limit:
			truncated = true
			return false
		}
		views = append(views, f.s.view(n))
		return true
	})
	return views, truncated
}

// maxPagePrealloc caps the room reserved for a page up front, so that a huge limit does
// not allocate for locks that may not exist.
const maxPagePrealloc = 1024

// LockCount returns the number of held locks (free locks take no state).
func (f *FSM) LockCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.locks)
}

// The lock's part of snapshot format 2 (version 2), after the histories. A lock held
// shared is written in the lock records as held by its oldest reader (which is what
// lock.holder mirrors); this part adds the other readers and which waiters ask for shared
// mode:
//
//	shared locks:   count, then per lock in name order: name, count of the other readers,
//	                and each as lease, token, owner
//	shared waiters: count, then per lock in name order: name, count, and the positions in
//	                its queue (ascending) of the shared waiters

// encodeShared writes the lock's part of format 2.
func (s *state) encodeShared(e *snapEncoder) {
	var shared, sharedWaits []string
	s.names.Ascend(func(name string) bool {
		lk := s.locks[name]
		if lk.isShared() {
			shared = append(shared, name)
		}
		for w := lk.ro().queue.head; w != nil; w = w.next {
			if w.shared {
				sharedWaits = append(sharedWaits, name)
				break
			}
		}
		return true
	})
	buf := e.buf
	buf = binary.AppendUvarint(buf, uint64(len(shared)))
	for _, name := range shared {
		lk := s.locks[name]
		buf = appendString(buf, name)
		buf = binary.AppendUvarint(buf, uint64(lk.ro().readers.len()-1))
		for g := lk.ro().readers.head.next; g != nil; g = g.next {
			buf = appendGrant(buf, g)
		}
		buf = e.spillAt(buf)
	}
	buf = binary.AppendUvarint(buf, uint64(len(sharedWaits)))
	for _, name := range sharedWaits {
		lk := s.locks[name]
		var pos []uint64
		i := uint64(0)
		for w := lk.ro().queue.head; w != nil; w = w.next {
			if w.shared {
				pos = append(pos, i)
			}
			i++
		}
		buf = appendString(buf, name)
		buf = binary.AppendUvarint(buf, uint64(len(pos)))
		for _, p := range pos {
			buf = binary.AppendUvarint(buf, p)
		}
		buf = e.spillAt(buf)
	}
	e.buf = buf
}

// decodeShared reads what encodeShared wrote, after the lock records, and refuses a reader
// of a missing lease, a lease twice among the readers, and shared waiters at the head of a
// lock that is free for them. Order and duplicates of names are left to the canonical-form
// check.
func (s *state) decodeShared(d *decoder) error {
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		lk := s.locks[name]
		if d.err == nil && (lk == nil || lk.isShared()) {
			return badSnapshot("shared lock %q: not held, or listed twice", name)
		}
		m := d.count(1)
		if d.err != nil {
			break
		}
		lk.addReader(&grant{lease: lk.holder, token: lk.token, owner: lk.owner})
		for j := 0; j < m && d.err == nil; j++ {
			g := d.grant()
			if d.err != nil {
				break
			}
			l := s.leases[g.lease]
			if l == nil || lk.ro().readers.get(g.lease) != nil || l.waiting[name] != nil || g.token < lk.ro().readers.tail.token {
				return badSnapshot("shared lock %q: reader lease missing, twice, waiting, or out of order", name)
			}
			lk.ro().readers.add(g)
			addName(&l.held, name)
		}
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		lk := s.locks[name]
		m := d.count(1)
		if d.err != nil {
			break
		}
		if lk == nil || m == 0 {
			return badSnapshot("shared waiters of lock %q: no such queue", name)
		}
		w, at := lk.ro().queue.head, uint64(0)
		for j := 0; j < m && d.err == nil; j++ {
			p := d.uvarint()
			if d.err != nil {
				break
			}
			if p < at || w == nil {
				return badSnapshot("shared waiters of lock %q: bad position %d", name, p)
			}
			for ; at < p && w != nil; at++ {
				w = w.next
			}
			if w == nil || w.shared {
				return badSnapshot("shared waiters of lock %q: bad position %d", name, p)
			}
			w.shared = true
		}
		// A lockset at the head (version 3) is not known yet here; decodeLockSets marks it.
		if d.err == nil && lk.isShared() && lk.ro().queue.head.shared && s.version < 3 {
			return badSnapshot("lock %q: shared waiters at the head of a lock held shared", name)
		}
	}
	return nil
}
