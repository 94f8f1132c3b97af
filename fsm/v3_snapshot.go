package fsm

import (
	"encoding/binary"
)

// The version 3 part of a snapshot, written after the primitives' part once the active
// version is 3 (a cluster at version 2 writes exactly what version 2 code writes). A
// lock that nobody holds (reserved for a lockset, or in a lock delay) is written in the
// lock section with the zero lease as its holder, token 0 and no owner; this part adds:
//
//	lock options:   count, then per lock in name order with a lock delay running or a
//	                grant with a lock delay: name, delay until (0: none), grant's delay
//	maximum holds:  count, then in (deadline, name, lease) order: name, lease, deadline
//	locksets:       count, then per waiting set in (first name, queue) order: lease,
//	                mode byte, maximum hold, lock delay, names
//	wait options:   count, then per lock in name order, per single wait in queue order
//	                with options: name, position in the queue, maximum hold, lock delay
//	semaphore holds: as maximum holds, for semaphore permits
//	semaphore waits: count, then per semaphore in name order, per wait in queue order with
//	                a maximum hold: name, position, maximum hold

// encodeV3 writes the version 3 part (version 3 only).
func (s *state) encodeV3(e *snapEncoder) {
	if s.version < 3 {
		return
	}
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

	buf = binary.AppendUvarint(buf, uint64(s.holdExp.Len()))
	s.holdExp.Ascend(func(key string, deadline int64) bool {
		name, id := splitWaitKey(key)
		buf = appendString(buf, name)
		buf = append(buf, id[:]...)
		buf = binary.AppendUvarint(buf, uint64(deadline))
		buf = e.spillAt(buf)
		return true
	})

	var sets []*lockSet
	type waitOpt struct {
		name     string
		pos      uint64
		hold, dl int64
	}
	var wopts []waitOpt
	s.names.Ascend(func(n string) bool {
		pos := uint64(0)
		for w := s.locks[n].ro().queue.head; w != nil; w = w.next {
			switch {
			case w.set != nil && w.set.names[0] == n:
				sets = append(sets, w.set)
			case w.set == nil && (w.maxHold != 0 || w.lockDelay != 0):
				wopts = append(wopts, waitOpt{n, pos, w.maxHold, w.lockDelay})
			}
			pos++
		}
		return true
	})
	buf = binary.AppendUvarint(buf, uint64(len(sets)))
	for _, set := range sets {
		buf = append(buf, set.lease[:]...)
		if set.shared {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		buf = binary.AppendUvarint(buf, uint64(set.maxHold))
		buf = binary.AppendUvarint(buf, uint64(set.delay))
		buf = appendStrings(buf, set.names)
		buf = e.spillAt(buf)
	}
	buf = binary.AppendUvarint(buf, uint64(len(wopts)))
	for _, o := range wopts {
		buf = appendString(buf, o.name)
		buf = binary.AppendUvarint(buf, o.pos)
		buf = binary.AppendUvarint(buf, uint64(o.hold))
		buf = binary.AppendUvarint(buf, uint64(o.dl))
		buf = e.spillAt(buf)
	}

	buf = binary.AppendUvarint(buf, uint64(s.semHoldExp.Len()))
	s.semHoldExp.Ascend(func(key string, deadline int64) bool {
		name, id := splitWaitKey(key)
		buf = appendString(buf, name)
		buf = append(buf, id[:]...)
		buf = binary.AppendUvarint(buf, uint64(deadline))
		buf = e.spillAt(buf)
		return true
	})
	wopts = wopts[:0]
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

// decodeV3 reads what appendV3 wrote, after the rest of the state, and refuses what
// contradicts it (options of a missing lock, a hold of a lease without that grant, a set
// whose lease does not wait for its locks, a vacant lock with neither a set to wait for
// nor a delay). The canonical-form check catches the rest.
func (s *state) decodeV3(d *decoder) error {
	if s.version < 3 {
		return nil
	}
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
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		set := &lockSet{lease: d.leaseID()}
		switch d.byte() {
		case 0:
		case 1:
			set.shared = true
		default:
			d.fail(ErrCorruptCommand)
		}
		set.maxHold, set.delay = d.int64(), d.int64()
		set.names = d.strings()
		if d.err != nil {
			break
		}
		l := s.leases[set.lease]
		if l == nil || !validSetNames(set.names) {
			return badSnapshot("lockset of a missing lease or with bad names")
		}
		for _, name := range set.names {
			w := l.waiting[name]
			if w == nil || w.set != nil || w.shared != set.shared {
				return badSnapshot("lockset: lease does not wait for lock %q as the set", name)
			}
			w.set = set
			set.waiters = append(set.waiters, w)
		}
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name, pos := d.string(), d.uvarint()
		hold, delay := d.int64(), d.int64()
		lk := s.locks[name]
		if d.err != nil {
			break
		}
		if lk == nil {
			return badSnapshot("wait options of lock %q: no such lock", name)
		}
		w := lk.ro().queue.head
		for j := uint64(0); j < pos && w != nil; j++ {
			w = w.next
		}
		if w == nil || w.set != nil || hold == 0 && delay == 0 {
			return badSnapshot("wait options of lock %q: bad position %d", name, pos)
		}
		w.maxHold, w.lockDelay = hold, delay
	}
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
	for name, lk := range s.locks {
		if lk.ro().v3.vacant && lk.ro().v3.delayUntil == 0 && (lk.ro().queue.head == nil || lk.ro().queue.head.set == nil) {
			return badSnapshot("lock %q: held by nobody, with no lock delay and no lockset at its head", name)
		}
	}
	return nil
}
