package fsm

import (
	"encoding/binary"
)

// The primitives' part of snapshot format 2, written after the lock histories. Format 1
// has none: the primitives' commands are refused at version 1, so a version 1 state has
// nothing to write here.
//
// A lock held shared is written in the lock section as held by its oldest reader (which
// is what lock.holder mirrors); this part adds the other readers and which waiters ask for
// shared mode:
//
//	shared locks:   count, then per lock in name order: name, count of the other readers,
//	                and each as lease, token, owner
//	shared waiters: count, then per lock in name order: name, count, and the positions in
//	                its queue (ascending) of the shared waiters
//	semFreed, elecFreed
//	semaphores:     count, then in name order: name, limit, modify, permits (count, then
//	                lease, token, owner each), waiters (count, then lease, owner, deadline,
//	                since each)
//	elections:      count, then in name order: name, leader, token, owner, value, modify,
//	                candidates (count, then lease, owner, value, deadline, since each)

func appendGrant(buf []byte, g *grant) []byte {
	buf = append(buf, g.lease[:]...)
	buf = binary.AppendUvarint(buf, g.token)
	return appendString(buf, g.owner)
}

// encodePrims writes the primitives' part (format 2 only).
func (s *state) encodePrims(e *snapEncoder) {
	if s.version < 2 {
		return
	}
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
	buf = binary.AppendUvarint(buf, s.semFreed)
	buf = binary.AppendUvarint(buf, s.elecFreed)

	buf = binary.AppendUvarint(buf, uint64(len(s.sems)))
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

	buf = binary.AppendUvarint(buf, uint64(len(s.elections)))
	for _, name := range sortedNames(s.elections) {
		el := s.elections[name]
		buf = appendString(buf, name)
		buf = append(buf, el.leader[:]...)
		buf = binary.AppendUvarint(buf, el.token)
		buf = appendString(buf, el.owner)
		buf = appendString(buf, el.value)
		buf = binary.AppendUvarint(buf, el.modify)
		buf = binary.AppendUvarint(buf, uint64(el.queue.len))
		for w := el.queue.head; w != nil; w = w.next {
			buf = append(buf, w.lease[:]...)
			buf = appendString(buf, w.owner)
			buf = appendString(buf, w.value)
			buf = binary.AppendUvarint(buf, uint64(w.deadline))
			buf = binary.AppendUvarint(buf, uint64(w.since))
		}
		buf = e.spillAt(buf)
	}
	e.buf = buf
}

// decodePrims reads what appendPrims wrote, after the leases and locks are restored, and
// refuses a state that breaks the primitives' invariants (a grant or a wait of a missing
// lease, a lease twice in one primitive, more permits than the limit, waiters beside free
// permits, shared waiters at the head of a lock that is free for them). Order and
// duplicates of names are left to the canonical-form check.
func (s *state) decodePrims(d *decoder, format uint64) error {
	if format < 2 {
		return nil
	}
	readGrant := func() *grant {
		return &grant{lease: d.leaseID(), token: d.uvarint(), owner: d.string()}
	}
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
			g := readGrant()
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
		// A lockset at the head (version 3) is not known yet here; decodeV3 marks it.
		if d.err == nil && lk.isShared() && lk.ro().queue.head.shared && s.version < 3 {
			return badSnapshot("lock %q: shared waiters at the head of a lock held shared", name)
		}
	}
	s.semFreed = d.uvarint()
	s.elecFreed = d.uvarint()

	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		sm := &semaphore{limit: d.uvarint(), modify: d.uvarint()}
		if d.err == nil && (!validName(name) || sm.limit == 0 || sm.limit > MaxSemaphoreLimit || s.sems[name] != nil) {
			return badSnapshot("semaphore %q: bad name or limit, or listed twice", name)
		}
		for j, m := 0, d.count(1); j < m && d.err == nil; j++ {
			g := readGrant()
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
		if held := uint64(sm.permits.len()); held == 0 || held > sm.limit || sm.queue.len > 0 && held < sm.limit {
			return badSnapshot("semaphore %q: %d permits of %d with %d waiting", name, held, sm.limit, sm.queue.len)
		}
		s.sems[name] = sm
	}

	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		el := &election{leader: d.leaseID(), token: d.uvarint(), owner: d.string(), value: d.string(), modify: d.uvarint()}
		if d.err != nil {
			break
		}
		leader := s.leases[el.leader]
		if !validName(name) || leader == nil || s.elections[name] != nil {
			return badSnapshot("election %q: bad name, leader lease missing, or listed twice", name)
		}
		addName(&leader.usePrims().leads, name)
		for j, m := 0, d.count(1); j < m && d.err == nil; j++ {
			w := &waiter{lease: d.leaseID(), owner: d.string(), value: d.string(), deadline: d.int64(), since: d.int64()}
			if d.err != nil {
				break
			}
			l := s.leases[w.lease]
			if l == nil || l == leader || l.usePrims().campaigns[name] != nil {
				return badSnapshot("election %q: candidate lease missing, leading, or twice", name)
			}
			el.queue.push(w)
			addWaiter(&l.prims.campaigns, name, w)
			s.elecWaitExp.Set(waitKey(name, w.lease), w.deadline)
		}
		s.elections[name] = el
	}
	return nil
}
