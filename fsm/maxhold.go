package fsm

import (
	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// Maximum holds and lock delays (protocol version 3).
//
// A grant asked for with MaxHold ends at its grant's stamp plus MaxHold on cluster time,
// whether or not its lease is kept alive: the entry whose time reaches that deadline ends
// it (advance) and hands the lock to the next waiter in the same entry, with that entry's
// index as the new token. The old holder's release is then refused (StatusNotHolder).
//
// A grant asked for with LockDelay (exclusive locks only) that ends because its lease
// expired or was revoked, not because it was released or reached its maximum hold, leaves
// the lock held by nobody until LockDelay later on cluster time: waiters stay queued, new
// requests queue behind them (or are refused without a wait), and the entry whose time
// reaches the end hands the lock to the head of the queue.

// v3State is the replicated state of maximum holds and lock delays.
type v3State struct {
	holdExp leases.Table // grants with a maximum hold, keyed by waitKey(name, lease)
	// semHoldExp are the semaphore permits with a maximum hold, keyed the same way.
	semHoldExp leases.Table
	delayExp   leases.Table // locks in a lock delay, keyed by name
	// noCycleCheck turns deadlock detection off. Only the reference of TestDeadlock_Model
	// sets it, on a copy of a state, to see what a refused request would have led to.
	noCycleCheck bool
}

// startHold records the options of lease id's new grant of lock name: its maximum hold
// and, for an exclusive grant, its lock delay.
func (s *state) startHold(name string, lk *lock, id LeaseID, maxHold, delay int64, shared bool) {
	if maxHold > 0 {
		s.holdExp.Set(waitKey(name, id), satAdd(s.stamp, maxHold))
	}
	if !shared && (delay != 0 || lk.x != nil) { // a lock without its extra part has no delay
		lk.rw().v3.delay = delay
	}
}

// endHold forgets the maximum hold of lease id's grant of lock name, which ends.
func (s *state) endHold(name string, id LeaseID) {
	if s.holdExp.Len() > 0 {
		s.holdExp.Delete(waitKey(name, id))
	}
}

// expireHolds ends every grant whose maximum hold has passed at the current time, in
// (deadline, name, lease) order, handing each lock over.
func (s *state) expireHolds(index uint64) {
	if s.holdExp.Len() == 0 || mutant.Is("max-hold-ignored") {
		return
	}
	for _, k := range s.holdExp.PopExpired(s.time) {
		name, id := splitWaitKey(k)
		lk, l := s.locks[name], s.leases[id]
		if lk == nil || l == nil {
			continue
		}
		if _, _, ok := lk.grantOf(id); !ok {
			continue
		}
		s.recordEnd(name, lk, l, HistoryMaxHold)
		s.releaseGrant(index, name, lk, id)
	}
}

// startDelay ends lease l's exclusive grant of lock name, whose lease ended, with the
// grant's lock delay: nobody holds the lock until delay later on cluster time.
func (s *state) startDelay(index uint64, name string, lk *lock, l *lease) {
	s.endHold(name, l.id)
	delete(l.held, name)
	until := satAdd(s.time, lk.ro().v3.delay)
	lk.holder, lk.token, lk.owner = LeaseID{}, 0, ""
	lk.rw().v3 = lockV3{vacant: true, delayUntil: until}
	lk.modify = index
	s.delayExp.Set(name, until)
	s.record(name, HistoryEvent{Kind: HistoryLockDelay, Lease: l.fingerprint(), Deadline: until})
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

// endGrantOfEndedLease ends lease l's grant of lock name because the lease expired or
// was revoked: with the grant's lock delay when it has one, handed over otherwise.
func (s *state) endGrantOfEndedLease(index uint64, name string, lk *lock, l *lease) {
	s.recordEnd(name, lk, l, s.hist.endCause)
	if !lk.isShared() && lk.ro().v3.delay > 0 && !mutant.Is("lock-delay-ignored") {
		s.startDelay(index, name, lk, l)
		return
	}
	s.releaseGrant(index, name, lk, l.id)
}

// expireDelays ends the lock delays that have passed at the current time, in (deadline,
// name) order: each lock goes to the head of its queue, or is freed (settle).
func (s *state) expireDelays(index uint64) {
	if s.delayExp.Len() == 0 {
		return
	}
	for _, name := range s.delayExp.PopExpired(s.time) {
		lk := s.locks[name]
		if lk == nil {
			continue
		}
		lk.rw().v3.delayUntil = 0
		lk.modify = index
		s.record(name, HistoryEvent{Kind: HistoryLockDelayEnded})
		s.admit = append(s.admit, name)
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
	}
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
	for _, k := range s.semHoldExp.PopExpired(s.time) {
		name, id := splitWaitKey(k)
		if sm := s.sems[name]; sm != nil && sm.permits.get(id) != nil {
			s.dropPermit(index, name, sm, id)
		}
	}
}
