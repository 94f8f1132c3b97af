package fsm

import (
	"sort"

	"github.com/raftlock/raftlock/internal/mutant"
)

// lease is one live lease. held and waiting are nil until used, so a lease that holds
// nothing costs a map entry and this struct. waiting maps each lock the lease waits for
// to its node in that lock's queue, so that it leaves the queue without a scan.
type lease struct {
	id       LeaseID
	ttl      int64
	deadline int64
	held     map[string]struct{}
	waiting  map[string]*waiter
	fp       *Fingerprint // LeaseFingerprint(id), computed on first use (history.go)
	prims    []primUse    // the other primitives' grants and waits, by Space; nil until used (usePrim)
	// creator is the ACL accessor that created the lease (Command.Creator), from
	// protocol version 3 on; empty for a lease created before, or without ACLs.
	creator string
	// use is the use record of the identity the lease is charged to (quotas.go), nil
	// once it has left the lease table: derived, not replicated.
	use *identityUse
	// revoked marks a lease revoked but not yet swept (version 6, sweep.go).
	revoked bool
	// sets are the lockset groups of the locks it holds, by lock name (version 7,
	// locksets.go); nil while it holds no lock granted by a lockset.
	sets map[string]*heldSet
}

// primUse is what a lease holds and waits for in the namespace of one primitive other
// than the lock (whose are the lease's held and waiting): the names it has a grant of, and
// its node in the queue of each name it waits for. The shared code knows a primitive by
// its Space alone, so that a new primitive adds no field here.
type primUse struct {
	grants map[string]struct{}
	waits  map[string]*waiter
}

// usePrim returns the lease's use of the primitive of space sp, allocating the lease's
// table of them on first use.
func (l *lease) usePrim(sp Space) *primUse {
	if l.prims == nil {
		l.prims = make([]primUse, len(primitives))
	}
	return &l.prims[sp]
}

// grantsIn and waitsIn are the names of the primitive of space sp that lease l holds and
// waits for: nil maps, which read as empty, when it uses no primitive but the lock.
func (l *lease) grantsIn(sp Space) map[string]struct{} {
	if l.prims == nil {
		return nil
	}
	return l.prims[sp].grants
}

func (l *lease) waitsIn(sp Space) map[string]*waiter {
	if l.prims == nil {
		return nil
	}
	return l.prims[sp].waits
}

// createLease applies CreateLease.
func (s *state) createLease(_ uint64, c *Command, r *Result) {
	if s.ended(c.Lease) {
		r.Status = StatusLeaseNotFound // ended, not yet swept: its ID is not made again
		return
	}
	if s.leaseQuota(c.Lease, r) || s.leases[c.Lease] == nil && s.identityQuota(s.identityOf(c, nil), 1, 0, 0, r) {
		return
	}
	r.TTL = s.addLease(c.Lease, c.TTL, c.Creator).ttl
}

// renew applies Renew: every lease of the batch that still exists is renewed.
func (s *state) renew(_ uint64, c *Command, r *Result) {
	r.Renewed = make([]bool, len(c.Leases))
	r.RenewedTTL = make([]int64, len(c.Leases))
	for i, id := range c.Leases {
		if l := s.live(id); l != nil && s.renewAllowed(c, i, l) {
			s.touch(l)
			r.Renewed[i], r.RenewedTTL[i] = true, l.ttl
		}
	}
}

// revoke applies Revoke: the lease ends as an expired one does, in this entry.
func (s *state) revoke(index uint64, c *Command, r *Result) {
	l := s.live(c.Lease)
	if l == nil {
		r.Status = StatusLeaseNotFound
		return
	}
	if mutant.Is("revoke-leaves-locks") {
		l.held = nil
	}
	if s.version >= 6 {
		// Dead from this entry; the sweep ends it, in this entry when the budget lasts.
		r.Released = sortedNames(l.held)
		if r.Released == nil {
			r.Released = []string{}
		}
		s.revokeLater(l)
		return
	}
	s.hist.endCause = HistoryRevoked
	r.Released = s.removeLeases(index, []*lease{l})
}

// requester returns the lease that request c names, nil where c creates it with the
// grant (NewLease); false, with r refused StatusLeaseNotFound, where the lease neither
// exists nor is created.
func (s *state) requester(c *Command, r *Result) (*lease, bool) {
	l := s.live(c.Lease)
	if l == nil && (!c.NewLease || s.ended(c.Lease)) { // an ended lease's ID is not made again until swept
		r.Status = StatusLeaseNotFound
		return nil, false
	}
	return l, true
}

// addLease creates lease id with ttl and creator, stamped by this entry, unless it exists
// (a lease's creator never changes). The creator is kept from version 3 on only, so that
// before it nothing of it enters the state.
func (s *state) addLease(id LeaseID, ttl int64, creator string) *lease {
	if l := s.leases[id]; l != nil {
		return l // a re-proposed create is a no-op
	}
	l := &lease{id: id, ttl: ttl}
	if s.version >= 3 {
		l.creator = creator
	}
	s.leases[id] = l
	s.attach(l)
	s.touch(l)
	return l
}

// touch renews a lease: its deadline becomes the entry's stamp plus its TTL. The stamp is
// at least the entry's Now, which the leader read after the request arrived.
func (s *state) touch(l *lease) {
	l.deadline = satAdd(s.stamp, l.ttl)
	if mutant.Is("renew-from-apply-time") {
		l.deadline = satAdd(s.time, l.ttl)
	}
	s.leaseExp.Set(string(l.id[:]), l.deadline)
}

// leaseFor creates the lease of a request with NewLease, or renews the lease named.
func (s *state) leaseFor(c *Command, l *lease) *lease {
	if l == nil {
		return s.addLease(c.Lease, c.TTL, c.Creator)
	}
	s.touch(l)
	return l
}

// removeLeases deletes leases (revoked or expired): first each leaves every queue of every
// primitive, then each primitive drops their grants in name order, handing each to its
// next waiter. It returns the locks the last lease held: the released names when one lease
// is removed.
func (s *state) removeLeases(index uint64, ls []*lease) []string {
	if len(ls) == 0 {
		return []string{}
	}
	released := sortedNames(ls[len(ls)-1].held)
	for _, l := range ls {
		for i := range primitives {
			p := &primitives[i]
			for _, name := range p.waits(l) {
				p.leaveOne(s, index, name, l)
			}
		}
		delete(s.leases, l.id)
		s.detach(l)
		s.leaseExp.Delete(string(l.id[:]))
	}
	for i := range primitives {
		p := &primitives[i]
		for _, l := range ls {
			for _, name := range p.grants(l) {
				p.dropOne(s, index, name, l)
			}
		}
	}
	for _, l := range ls {
		l.prims = nil
	}
	if released == nil {
		released = []string{}
	}
	return released
}

// LeaseView is a read-only copy of a lease's state.
type LeaseView struct {
	ID       LeaseID
	TTL      int64
	Deadline int64
	Locks    []string
	Waiting  []string
	// Creator is the ACL accessor that created the lease; empty when none was recorded
	// (before protocol version 3, or without ACLs).
	Creator string
}

// Lease returns the state of a lease and whether it exists.
func (f *FSM) Lease(id LeaseID) (LeaseView, bool) {
	f.mu.RLock()
	l := f.s.live(id)
	if l == nil {
		f.mu.RUnlock()
		return LeaseView{}, false
	}
	v := LeaseView{ID: id, TTL: l.ttl, Deadline: l.deadline, Locks: namesOf(l.held), Waiting: namesOf(l.waiting), Creator: l.creator}
	f.mu.RUnlock()
	// Sorted after the state's lock is let go: a lease may hold MaxLocksPerLease locks, and
	// sorting that many names under the read lock would hold up the next apply as long.
	sort.Strings(v.Locks)
	sort.Strings(v.Waiting)
	return v, true
}

// LeaseCreator returns the identity that created live lease id, as Lease's Creator, in
// constant time: the API's lease gate asks it on every request that names a lease, and
// Lease lists (and sorts) every lock the lease holds, which made a request's cost grow with
// its lease's locks (a lease holding 8,000 locks sorted 8,000 names per acquire).
func (f *FSM) LeaseCreator(id LeaseID) (string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	l := f.s.live(id)
	if l == nil {
		return "", false
	}
	return l.creator, true
}

// LeaseCount returns the number of live leases.
func (f *FSM) LeaseCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.leases)
}
