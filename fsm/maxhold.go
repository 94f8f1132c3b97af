package fsm

import (
	"encoding/binary"

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

// The lock's part of them lives in lockState (locks.go): holdExp and delayExp; the
// semaphore's in semState (semaphores.go).

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
	for {
		k, ok := s.popExpired(&s.holdExp)
		if !ok {
			return
		}
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
		s.unitDone(index)
	}
}

// startDelay ends lease l's exclusive grant of lock name, whose lease ended, with the
// grant's lock delay: nobody holds the lock until delay later on cluster time.
func (s *state) startDelay(index uint64, name string, lk *lock, l *lease) {
	s.endHold(name, l.id)
	s.gaveLock(l, name)
	until := satAdd(s.time, lk.ro().v3.delay)
	lk.holder, lk.token, lk.owner = LeaseID{}, 0, ""
	lk.rw().v3 = lockV3{vacant: true, delayUntil: until}
	lk.modify = index
	s.delayExp.Set(name, until)
	s.record(name, l, HistoryEvent{Kind: HistoryLockDelay, Lease: l.fingerprint(), Deadline: until})
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
	for {
		name, ok := s.popExpired(&s.delayExp)
		if !ok {
			return
		}
		lk := s.locks[name]
		if lk == nil {
			continue
		}
		lk.rw().v3.delayUntil = 0
		lk.modify = index
		s.record(name, nil, HistoryEvent{Kind: HistoryLockDelayEnded})
		s.admit = append(s.admit, name)
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
		s.unitDone(index)
	}
}

// The lock's first part of the version 3 snapshot. A lock that nobody holds (reserved for
// a lockset, or in a lock delay) is written in the lock records with the zero lease as
// its holder, token 0 and no owner; this part adds:
//
//	lock options:   count, then per lock in name order with a lock delay running or a
//	                grant with a lock delay: name, delay until (0: none), grant's delay
//	maximum holds:  count, then in (deadline, name, lease) order: name, lease, deadline

// encodeHolds writes the lock options and the maximum holds.
func (s *state) encodeHolds(e *snapEncoder) {
	var opts []string
	s.names.Ascend(func(n string) bool {
		if lk := s.locks[n]; lk.ro().v3.delayUntil != 0 || lk.ro().v3.delay != 0 {
			opts = append(opts, n)
		}
		return true
	})
	buf := e.buf
	buf = binary.AppendUvarint(buf, uint64(len(opts)))
	for _, n := range opts {
		lk := s.locks[n]
		buf = appendString(buf, n)
		buf = binary.AppendUvarint(buf, uint64(lk.ro().v3.delayUntil))
		buf = binary.AppendUvarint(buf, uint64(lk.ro().v3.delay))
		buf = e.spillAt(buf)
	}
	e.buf = appendHolds(e, buf, &s.holdExp)
}

// appendHolds appends a table of maximum holds keyed by waitKey (of locks or of
// semaphore permits): count, then in (deadline, name, lease) order: name, lease, deadline.
func appendHolds(e *snapEncoder, buf []byte, t *leases.Table) []byte {
	buf = binary.AppendUvarint(buf, uint64(t.Len()))
	t.Ascend(func(key string, deadline int64) bool {
		name, id := splitWaitKey(key)
		buf = appendString(buf, name)
		buf = append(buf, id[:]...)
		buf = binary.AppendUvarint(buf, uint64(deadline))
		buf = e.spillAt(buf)
		return true
	})
	return buf
}

// decodeHolds reads what encodeHolds wrote, and refuses options of a missing lock, a
// delay running on a lock somebody holds, and a hold of a lease without that grant.
func (s *state) decodeHolds(d *decoder) error {
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		until, delay := d.int64(), d.int64()
		lk := s.locks[name]
		if d.err == nil && (lk == nil || until != 0 && !lk.ro().v3.vacant || until == 0 && delay == 0) {
			return badSnapshot("lock options of %q", name)
		}
		if d.err != nil {
			break
		}
		x := lk.rw()
		x.v3.delayUntil, x.v3.delay = until, delay
		if until != 0 {
			s.delayExp.Set(name, until)
		}
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name, id, deadline := d.string(), d.leaseID(), d.int64()
		lk := s.locks[name]
		if d.err != nil {
			break
		}
		if lk == nil {
			return badSnapshot("maximum hold of lock %q: no such lock", name)
		}
		if _, _, ok := lk.grantOf(id); !ok {
			return badSnapshot("maximum hold of lock %q: not a holder", name)
		}
		s.holdExp.Set(waitKey(name, id), deadline)
	}
	return nil
}
