package fsm

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Locksets (protocol version 3): several locks asked for in one command, granted all in
// one entry or not at all. Each lock of a set is an ordinary lock once granted: its own
// grant and token (the granting entry's index, the same for every lock the entry
// grants), released by name, ended by its lease, fenced as any other.
//
// A set that cannot be granted at once and may wait is queued as one request on every
// lock it asks for, at the tail of each queue, with one deadline. A lock freed while a
// waiting set is at the head of its queue is not handed to anyone else: it stays
// reserved for the set (held by nobody, lock.v3.vacant) until every lock of the set is
// free for it, and then the set is granted in that entry.
//
// Fairness: every queue is FIFO and a request joins the tail of all its queues in one
// entry, so requests are ordered the same way (by the entry that queued them) in every
// queue they share. The oldest waiting request is therefore at the head of each of its
// queues; nothing younger can pass it, so it is granted as soon as the current holders
// let go. By induction no request waits forever for a younger one: neither a set behind
// singles nor singles behind a set starve. The price is that a lock reserved for a set
// stays unused while the set waits for its other locks.

// MaxLockSetNames is the most locks one lockset may name.
const MaxLockSetNames = 64

// lockSet is a waiting lockset: one waiter per lock, each with set pointing here.
type lockSet struct {
	lease   LeaseID
	names   []string // the locks it waits for, sorted (not those the lease holds already)
	waiters []*waiter
	shared  bool
	maxHold int64
	delay   int64
}

// lockV3 is what version 3 adds to a lock.
type lockV3 struct {
	// vacant: nobody holds the lock, which exists because a lockset at the head of its
	// queue reserves it or because a lock delay keeps it (delayUntil).
	vacant     bool
	delayUntil int64
	// delay is the lock delay of the current exclusive grant (0: none).
	delay int64
}

// validSetNames reports whether names is a lockset's list as the encoder writes it:
// 1 to MaxLockSetNames valid names in strictly ascending order.
func validSetNames(names []string) bool {
	if len(names) == 0 || len(names) > MaxLockSetNames {
		return false
	}
	for i, n := range names {
		if !validName(n) || i > 0 && names[i-1] >= n {
			return false
		}
	}
	return true
}

// lockSetAcquire applies LockSet: every lock of c.Names granted in this entry, or, when
// one is not free for the lease, none: StatusLockHeld with the others in r.Held when the
// request may not wait, StatusDeadlock when waiting would close a cycle, StatusQueued
// otherwise. Locks the lease holds already (in the same mode) keep their grants; r.Tokens
// gives each lock's token in c.Names order once the set is granted.
func (s *state) lockSetAcquire(index uint64, c *Command, r *Result) {
	if !validSetNames(c.Names) || c.Shared && c.LockDelay > 0 {
		invalid(r, "bad lockset")
		return
	}
	l, ok := s.requester(c, r)
	if !ok {
		return
	}
	var need, blocked []string // not yet the lease's; of those, not free for it now
	var waitingSet *lockSet
	for _, name := range c.Names {
		lk := s.locks[name]
		if lk != nil && l != nil {
			if _, _, ok := lk.grantOf(l.id); ok {
				if lk.isShared() != c.Shared {
					r.Status = StatusModeConflict
					return
				}
				continue
			}
			if w := l.waiting[name]; w != nil {
				if w.set == nil || w.set.shared != c.Shared || waitingSet != nil && waitingSet != w.set {
					r.Status = StatusModeConflict // it waits for the lock otherwise
					return
				}
				waitingSet = w.set
			}
		}
		need = append(need, name)
		free := lk == nil || c.Shared && lk.isShared() && lk.ro().queue.len == 0
		if !free {
			blocked = append(blocked, name)
		}
	}
	if waitingSet != nil {
		// Asked again only when the set waits for exactly these locks.
		same := len(waitingSet.names) == len(need)
		for _, name := range need {
			same = same && l.waiting[name] != nil && l.waiting[name].set == waitingSet
		}
		if !same {
			r.Status = StatusModeConflict // a set that waits for other locks than these
			return
		}
	}
	if len(blocked) > 0 && c.Wait <= 0 {
		r.Status, r.Held = StatusLockHeld, blocked
		return
	}
	if len(blocked) > 0 && waitingSet == nil && s.refuseCycle(c, l, need, c.Shared, r) {
		return
	}
	if s.lockSetQuota(c, l, need, waitingSet != nil, len(blocked) == 0, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL = l.ttl
	switch {
	case len(blocked) == 0 || mutant.Is("lockset-partial-grant") && waitingSet == nil:
		for _, name := range need {
			if lk := s.locks[name]; lk == nil || c.Shared && lk.isShared() && lk.ro().queue.len == 0 {
				s.grantNow(index, name, l, c)
			}
		}
		if len(blocked) > 0 { // the mutant: what was free is taken, the rest refused
			r.Status, r.Held = StatusLockHeld, blocked
			return
		}
		s.keepSet(l, index, need, c.Shared)
		r.Tokens = s.setTokens(c.Names, l.id)
		r.Token = r.Tokens[0]
	case waitingSet != nil: // asked again: the same wait, with the new deadline
		deadline := satAdd(s.stamp, c.Wait)
		for i, name := range waitingSet.names {
			waitingSet.waiters[i].deadline = deadline
			s.waitExp.Set(waitKey(name, l.id), deadline)
		}
		r.Status, r.Tokens = StatusQueued, s.setTokens(c.Names, l.id)
	default:
		set := &lockSet{lease: l.id, names: need, shared: c.Shared, maxHold: c.MaxHold, delay: c.LockDelay}
		for _, name := range need {
			lk := s.locks[name]
			if lk == nil { // free but not grantable yet: reserved for the set from now on
				lk = &lock{modify: index, x: &lockExtra{v3: lockV3{vacant: true}}}
				s.locks[name] = lk
				s.names.ReplaceOrInsert(name)
			}
			w, _ := s.enqueue(&lk.rw().queue, &l.waiting, &s.waitExp, name, l, c)
			w.shared, w.set = c.Shared, set
			s.waited.ReplaceOrInsert(name)
			set.waiters = append(set.waiters, w)
			lk.modify = index
			s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
		}
		// The tokens of the locks the lease holds already; 0 for those it waits for.
		r.Status, r.Tokens = StatusQueued, s.setTokens(c.Names, l.id)
	}
}

// grantNow grants free lock name (or joins the readers of one held shared that nobody
// waits for) to lease l for request c at index.
func (s *state) grantNow(index uint64, name string, l *lease, c *Command) {
	lk := s.locks[name]
	if lk == nil {
		lk = &lock{holder: l.id, token: index, owner: c.Owner, modify: index}
		if c.Shared {
			lk.addReader(&grant{lease: l.id, token: index, owner: c.Owner})
		}
		s.locks[name] = lk
		s.names.ReplaceOrInsert(name)
	} else {
		lk.ro().readers.add(&grant{lease: l.id, token: index, owner: c.Owner})
		lk.modify = index
	}
	s.took(l, &l.held, name)
	s.startHold(name, lk, l.id, c.MaxHold, c.LockDelay, c.Shared)
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
	s.record(name, l, HistoryEvent{Kind: HistoryGranted, Lease: l.fingerprint(), Token: index, Owner: c.Owner})
}

// setTokens returns lease id's token of each lock of names, in order.
func (s *state) setTokens(names []string, id LeaseID) []uint64 {
	out := make([]uint64, len(names))
	for i, name := range names {
		if lk := s.locks[name]; lk != nil {
			out[i], _, _ = lk.grantOf(id)
		}
	}
	return out
}

// lockSetQuota is acquireQuota for a lockset: the lease's count grows by the locks it
// does not hold or wait for yet (granted at once when grant, waited for otherwise), and
// every queue it joins is bounded.
func (s *state) lockSetQuota(c *Command, l *lease, need []string, already, grant bool, r *Result) bool {
	if l == nil && s.leaseQuota(c.Lease, r) {
		return true
	}
	if already || len(need) == 0 {
		return false
	}
	count := 0
	if l != nil {
		count = s.leaseCount(l)
	}
	if max := s.limits.MaxLocksPerLease; max != 0 && uint64(count+len(need)) > max {
		return refuse(r, QuotaLocksPerLease, count, max)
	}
	if max := s.limits.MaxWaitersPerLock; max != 0 {
		for _, name := range need {
			if lk := s.locks[name]; lk != nil && uint64(lk.waiterCount()) >= max {
				return refuse(r, QuotaWaitersPerLock, lk.waiterCount(), max)
			}
		}
	}
	return s.additionQuota(c, l, grant, len(need), r)
}

// vacate leaves lock name without a holder, reserved for the lockset at the head of its
// queue.
func (s *state) vacate(index uint64, name string, lk *lock) {
	x := lk.rw()
	lk.holder, lk.token, lk.owner, x.readers = LeaseID{}, 0, "", nil
	x.v3.vacant, x.v3.delay, lk.modify = true, 0, index
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

// setReadyOn reports whether lock i of set is free for it: the set is at the head of the
// lock's queue, no lock delay runs, and nobody holds the lock (or, for a shared set, the
// lock is held shared).
func (s *state) setReadyOn(set *lockSet, i int) bool {
	lk := s.locks[set.names[i]]
	return lk.ro().queue.head == set.waiters[i] && lk.ro().v3.delayUntil == 0 &&
		(lk.ro().v3.vacant || set.shared && lk.isShared())
}

// tryGrantSet grants set, in this entry, every lock it waits for when all are free for
// it, and does nothing otherwise.
func (s *state) tryGrantSet(index uint64, set *lockSet) {
	if s.version >= 6 && s.deadID(set.lease) {
		return // its lease ended: the sweep ends the wait, and its locks go on from there
	}
	for i := range set.names {
		if !s.setReadyOn(set, i) {
			return
		}
	}
	l := s.leases[set.lease]
	for i, name := range set.names {
		lk, w := s.locks[name], set.waiters[i]
		lk.rw().queue.remove(w)
		s.unqueued(l, l.waiting, name)
		s.waitExp.Delete(waitKey(name, l.id))
		if set.shared {
			lk.addReader(&grant{lease: l.id, token: index, owner: w.owner})
			lk.syncHead()
		} else {
			lk.holder, lk.token, lk.owner = l.id, index, w.owner
		}
		lk.rw().v3.vacant, lk.modify = false, index
		s.took(l, &l.held, name)
		s.startHold(name, lk, l.id, set.maxHold, set.delay, set.shared)
		lk.shrink()
		s.grantedFromQueue(index, name, l, w, index)
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
	}
	s.keepSet(l, index, set.names, set.shared)
	if set.shared { // shared requests behind the set may join it now
		for _, name := range set.names {
			if lk := s.locks[name]; lk.ro().queue.head != nil && lk.ro().queue.head.shared {
				s.admit = append(s.admit, name)
			}
		}
	}
}

// leaveSet takes lease l's waiting set out of every queue (its wait ended, its lease
// ended, or its client gave up). A lock that only the set reserved is freed; one whose
// queue goes on is handed to its new head by settle.
func (s *state) leaveSet(index uint64, l *lease, set *lockSet) {
	for i, name := range set.names {
		w := set.waiters[i]
		s.unqueued(l, l.waiting, name)
		s.waitExp.Delete(waitKey(name, l.id))
		lk := s.locks[name]
		lk.rw().queue.remove(w)
		lk.modify = index
		s.recordWaitEnd(name, w, l)
		s.notify(Event{Kind: EventWaitEnded, Name: name, Lease: l.id, Index: index})
		switch {
		case lk.ro().v3.vacant && lk.ro().queue.len == 0 && lk.ro().v3.delayUntil == 0:
			s.dropLock(index, name)
		case lk.ro().v3.vacant || lk.isShared() && lk.ro().queue.head != nil && lk.ro().queue.head.shared:
			s.admit = append(s.admit, name)
			s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
		default:
			s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
		}
	}
}

// dropLock deletes lock name, free with nobody waiting, at index.
func (s *state) dropLock(index uint64, name string) {
	delete(s.locks, name)
	s.names.Delete(name)
	s.waited.Delete(name)
	s.freedIndex = index
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index, Freed: true})
}

// settleVacant hands lock name, which nobody holds and no lock delay keeps, to the head
// of its queue (settle), or frees it when nobody waits.
func (s *state) settleVacant(index uint64, name string, lk *lock) {
	if lk.ro().v3.delayUntil != 0 {
		return
	}
	if lk.ro().queue.len == 0 {
		s.dropLock(index, name)
		return
	}
	s.handOver(index, name, lk)
}

// lockSetRelease applies LockSetRelease: every lock of c.Names, each with its token of
// c.Tokens, is released in this entry and handed to its next waiter, or, when the lease
// does not hold one of them with that token, none is (StatusNotHolder, those in r.Held).
func (s *state) lockSetRelease(index uint64, c *Command, r *Result) {
	if !validSetNames(c.Names) || len(c.Tokens) != len(c.Names) {
		invalid(r, "bad lockset release")
		return
	}
	l := s.live(c.Lease)
	if l == nil {
		r.Status = StatusLeaseNotFound
		return
	}
	for i, name := range c.Names {
		lk := s.locks[name]
		if lk == nil {
			r.Held = append(r.Held, name)
			continue
		}
		if token, _, ok := lk.grantOf(l.id); !ok || token != c.Tokens[i] {
			r.Held = append(r.Held, name)
		}
	}
	if len(r.Held) > 0 {
		r.Status = StatusNotHolder
		return
	}
	for _, name := range c.Names {
		lk := s.locks[name]
		s.recordEnd(name, lk, l, HistoryReleased)
		s.releaseGrant(index, name, lk, l.id)
	}
}

// Lockset groups (protocol version 7). A lockset granted whole in one entry is kept as
// one group: the locks the entry granted to its lease, its token (the entry's index) and
// its mode. Matching grants on token and lease instead would be ambiguous: one revoke can
// hand two freed locks, each waited for alone, to the same waiting lease in one entry.
// The group belongs to its grants: a lock leaves it when its grant ends (released, its
// lease ended, its maximum hold over), the others stay one group, and the group is gone
// with its last lock. Locks a lockset's lease held already are not in the group its
// entry grants (they keep their own grants).

// heldSet is a lockset group: the locks its lease still holds with the grant of token, in
// name order, and the mode they are held in.
type heldSet struct {
	token  uint64
	shared bool
	names  []string
}

// LockSetView is a lockset group as reads show it: the lease that holds it, its token,
// its mode, and the names of the locks it still holds with that grant, in order.
type LockSetView struct {
	Lease  LeaseID
	Token  uint64
	Shared bool
	Names  []string
}

// keepSet records, from version 7, that lease l was granted the locks names (sorted) at
// index as one lockset.
func (s *state) keepSet(l *lease, index uint64, names []string, shared bool) {
	if s.version < 7 || len(names) == 0 || mutant.Is("lockset-groups-off") {
		return
	}
	hs := &heldSet{token: index, shared: shared, names: append([]string(nil), names...)}
	if l.sets == nil {
		l.sets = make(map[string]*heldSet, len(names))
	}
	for _, name := range names {
		l.sets[name] = hs
	}
}

// gaveLock ends lease l's grant of lock name in its bookkeeping: the quota's count and,
// from version 7, its lockset group.
func (s *state) gaveLock(l *lease, name string) {
	s.gave(l, l.held, name)
	hs := l.sets[name]
	if hs == nil {
		return
	}
	delete(l.sets, name)
	if len(l.sets) == 0 {
		l.sets = nil
	}
	if i, ok := slices.BinarySearch(hs.names, name); ok {
		hs.names = slices.Delete(hs.names, i, i+1)
	}
}

// setOf returns the lockset group of lease id's grant of lock name with token, if that
// grant was made by a lockset (version 7).
func (s *state) setOf(name string, id LeaseID, token uint64) *LockSetView {
	l := s.leases[id]
	if l == nil || l.sets == nil {
		return nil
	}
	hs := l.sets[name]
	if hs == nil || hs.token != token {
		return nil
	}
	return &LockSetView{Lease: id, Token: hs.token, Shared: hs.shared, Names: append([]string(nil), hs.names...)}
}

// The lock's part of the version 7 snapshot, after the version 6 parts:
//
//	lockset groups: count, then per group in (first name, grant order) order: lease,
//	                token, mode byte, the names it holds

// encodeHeldSets writes the lockset groups, each once, at the first lock it holds.
func (s *state) encodeHeldSets(e *snapEncoder) {
	type group struct {
		lease LeaseID
		hs    *heldSet
	}
	var groups []group
	visit := func(name string, id LeaseID) {
		if l := s.leases[id]; l != nil && l.sets != nil {
			if hs := l.sets[name]; hs != nil && hs.names[0] == name {
				groups = append(groups, group{id, hs})
			}
		}
	}
	s.names.Ascend(func(name string) bool {
		lk := s.locks[name]
		switch {
		case lk.ro().v3.vacant:
		case lk.isShared():
			for g := lk.ro().readers.head; g != nil; g = g.next {
				visit(name, g.lease)
			}
		default:
			visit(name, lk.holder)
		}
		return true
	})
	buf := binary.AppendUvarint(e.buf, uint64(len(groups)))
	for _, g := range groups {
		buf = append(buf, g.lease[:]...)
		buf = binary.AppendUvarint(buf, g.hs.token)
		if g.hs.shared {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		buf = appendStrings(buf, g.hs.names)
		buf = e.spillAt(buf)
	}
	e.buf = buf
}

// decodeHeldSets reads what encodeHeldSets wrote, after the locks, and refuses a group
// whose lease does not hold each of its locks with its token and in its mode, or a lock in
// two groups of one lease. The canonical-form check catches order and duplicates.
func (s *state) decodeHeldSets(d *decoder) error {
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		id, token := d.leaseID(), d.uvarint()
		hs := &heldSet{token: token}
		switch d.byte() {
		case 0:
		case 1:
			hs.shared = true
		default:
			d.fail(ErrCorruptCommand)
		}
		hs.names = d.strings()
		if d.err != nil {
			break
		}
		l := s.leases[id]
		if l == nil || !validSetNames(hs.names) {
			return badSnapshot("lockset group of a missing lease or with bad names")
		}
		for _, name := range hs.names {
			lk := s.locks[name]
			if lk == nil || l.sets[name] != nil || lk.isShared() != hs.shared {
				return badSnapshot("lockset group: lock %q missing, in two groups, or in another mode", name)
			}
			if t, _, ok := lk.grantOf(id); !ok || t != token {
				return badSnapshot("lockset group: lock %q not held by its lease with token %d", name, token)
			}
			if l.sets == nil {
				l.sets = make(map[string]*heldSet, len(hs.names))
			}
			l.sets[name] = hs
		}
	}
	return nil
}

// sortSetNames sorts names and drops duplicates, as a LockSet command carries them.
func sortSetNames(names []string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	j := 0
	for i, n := range out {
		if i == 0 || out[j-1] != n {
			out[j] = n
			j++
		}
	}
	return out[:j]
}

// SortSetNames returns names sorted without duplicates: the form a LockSet command
// carries (the cluster layer builds commands with it).
func SortSetNames(names []string) []string { return sortSetNames(names) }

// The lock's second part of the version 3 snapshot, after the maximum holds (maxhold.go):
//
//	locksets:       count, then per waiting set in (first name, queue) order: lease,
//	                mode byte, maximum hold, lock delay, names
//	wait options:   count, then per lock in name order, per single wait in queue order
//	                with options: name, position in the queue, maximum hold, lock delay

// waitOpt is a waiter's options as the snapshot writes them: the primitive's name, the
// waiter's position in its queue, its maximum hold and its lock delay.
type waitOpt struct {
	name     string
	pos      uint64
	hold, dl int64
}

// encodeLockSets writes the waiting locksets and the options of single lock waits.
func (s *state) encodeLockSets(e *snapEncoder) {
	var sets []*lockSet
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
	buf := e.buf
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
	e.buf = buf
}

// decodeLockSets reads what encodeLockSets wrote, and refuses a set whose lease does not
// wait for its locks, options at a position with no single wait, and a vacant lock with
// neither a set to wait for nor a delay. The canonical-form check catches the rest.
func (s *state) decodeLockSets(d *decoder) error {
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
	for name, lk := range s.locks {
		// From version 6 a lock is also held by nobody while its head waiter's lease
		// ended and the sweep has not ended that wait (sweep.go).
		if h := lk.ro().queue.head; lk.ro().v3.vacant && lk.ro().v3.delayUntil == 0 && (h == nil || h.set == nil) && !s.waitsForEnded(h) {
			return badSnapshot("lock %q: held by nobody, with no lock delay, lockset or ended lease at its head", name)
		}
	}
	return nil
}
