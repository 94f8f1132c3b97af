package fsm

import (
	"sort"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Shared (read/write) locks. A lock is held in one of two modes: exclusive (one holder:
// lock.holder) or shared (readers, any number of holders, and lock.holder, token and owner
// mirror the oldest of them, so that everything written for exclusive locks, the snapshot's
// lock records included, reads a shared lock as held by its oldest reader).
//
// One FIFO queue serves both modes. A shared request is granted at once only when the lock
// is held shared and nobody waits, so a queued exclusive request holds back every later
// shared one (writers do not starve). Whenever the head of the queue is a shared waiter
// and the lock is free or held shared, that waiter and every shared waiter behind it up to
// the first exclusive one are granted in the same entry, each with the entry's index as
// its token.

// isShared reports whether the lock is held in shared mode.
func (lk *lock) isShared() bool { return lk.readers != nil }

// grantOf returns lease id's grant of the lock, if it holds it in either mode.
func (lk *lock) grantOf(id LeaseID) (token uint64, owner string, ok bool) {
	if lk.readers != nil {
		if g := lk.readers.get(id); g != nil {
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
	h := lk.readers.head
	lk.holder, lk.token, lk.owner = h.lease, h.token, h.owner
}

// acquire applies Acquire and AcquireShared.
func (s *state) acquire(index uint64, c *Command, r *Result) {
	shared := c.Type == TypeAcquireShared
	if !validName(c.Name) {
		invalid(r, "bad lock name")
		return
	}
	l := s.leases[c.Lease]
	if l == nil && !c.NewLease {
		r.Status = StatusLeaseNotFound
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
	join := shared && lk != nil && !mine && lk.queue.len == 0 &&
		(lk.isShared() || mutant.Is("shared-beside-exclusive"))
	if lk != nil && !mine && !join && c.Wait <= 0 {
		// Held, no wait: refuse without creating the lease, so a failed one-shot acquire
		// leaves nothing behind.
		r.Status = StatusLockHeld
		return
	}
	if s.acquireQuota(c, l, lk, r) {
		return
	}
	l = s.leaseFor(c, l)
	r.TTL = l.ttl
	switch {
	case lk == nil:
		lk = &lock{holder: l.id, token: index, owner: c.Owner, modify: index}
		if shared {
			lk.readers = &grantSet{}
			lk.readers.add(&grant{lease: l.id, token: index, owner: c.Owner})
		}
		s.locks[c.Name] = lk
		s.names.ReplaceOrInsert(c.Name)
		addName(&l.held, c.Name)
		s.notify(Event{Kind: EventLockChanged, Name: c.Name, Index: index})
		s.record(c.Name, HistoryEvent{Kind: HistoryGranted, Lease: l.fingerprint(), Token: index, Owner: c.Owner})
		r.Token, r.Owner = index, c.Owner
	case mine:
		r.Token, r.Owner, _ = lk.grantOf(l.id) // idempotent: the same grant again
	case join:
		if !lk.isShared() { // only the mutant joins an exclusive holder
			lk.readers = &grantSet{}
			lk.readers.add(&grant{lease: lk.holder, token: lk.token, owner: lk.owner})
		}
		lk.readers.add(&grant{lease: l.id, token: index, owner: c.Owner})
		lk.modify = index
		addName(&l.held, c.Name)
		s.notify(Event{Kind: EventLockChanged, Name: c.Name, Index: index})
		s.record(c.Name, HistoryEvent{Kind: HistoryGranted, Lease: l.fingerprint(), Token: index, Owner: c.Owner})
		r.Token, r.Owner = index, c.Owner
	default:
		deadline := satAdd(s.stamp, c.Wait)
		if w := l.waiting[c.Name]; w == nil {
			w = &waiter{lease: l.id, owner: c.Owner, deadline: deadline, shared: shared}
			if s.version >= 2 {
				w.since = s.time + 1
			}
			lk.queue.push(w)
			addWaiting(l, c.Name, w)
			lk.modify = index
			s.notify(Event{Kind: EventLockChanged, Name: c.Name, Index: index})
		} else {
			w.deadline = deadline // a re-issued wait extends the old one
		}
		s.waitExp.Set(waitKey(c.Name, l.id), deadline)
		r.Status = StatusQueued
	}
}

// releaseGrant ends lease id's grant of lock name (either mode) at index. The lock is
// handed over when it becomes free: at once when exclusive, when the last reader leaves
// when shared.
func (s *state) releaseGrant(index uint64, name string, lk *lock, id LeaseID) {
	if !lk.isShared() {
		s.release(index, name, lk)
		return
	}
	lk.readers.remove(id)
	if l := s.leases[id]; l != nil {
		delete(l.held, name)
	}
	lk.modify = index
	if lk.readers.len() > 0 {
		lk.syncHead()
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
		return
	}
	lk.readers = nil
	s.handOver(index, name, lk)
}

// grantShared grants the lock, free or held shared, to the shared waiters at the head of
// its queue, up to the first exclusive one, all at index.
func (s *state) grantShared(index uint64, name string, lk *lock) {
	if lk.readers == nil {
		lk.readers = &grantSet{}
	}
	for w := lk.queue.head; w != nil && w.shared; w = lk.queue.head {
		lk.queue.remove(w)
		next := s.leases[w.lease]
		delete(next.waiting, name)
		s.waitExp.Delete(waitKey(name, w.lease))
		addName(&next.held, name)
		lk.readers.add(&grant{lease: w.lease, token: index, owner: w.owner})
		s.notify(Event{Kind: EventGranted, Name: name, Lease: w.lease, Token: index, Owner: w.owner, Index: index})
		granted := HistoryEvent{Kind: HistoryGranted, FromQueue: true, Lease: next.fingerprint(), Token: index, Owner: w.owner}
		if w.since > 0 {
			granted.Waited = s.time - (w.since - 1)
		}
		s.record(name, granted)
	}
	lk.syncHead()
	lk.modify = index
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

// settle admits the shared waiters that a waiter leaving the queue put at its head while
// the lock is held shared (s.admit), in name order. It runs once the entry's removals are
// done, so that nothing is granted to a lease that ends in the same entry.
func (s *state) settle(index uint64) {
	if len(s.admit) == 0 {
		return
	}
	names := s.admit
	s.admit = nil
	sort.Strings(names)
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		if lk := s.locks[name]; lk != nil && lk.isShared() && lk.queue.head != nil && lk.queue.head.shared {
			s.grantShared(index, name, lk)
		}
	}
}
