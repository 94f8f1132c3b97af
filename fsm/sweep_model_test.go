package fsm

import (
	"bytes"
	"maps"
	"slices"
	"strings"
)

// The reference model's sliced sweep (protocol version 6, sweep.go), written from the
// rules rather than from the code: the model keeps its plain slices, finds each next unit
// of work by scanning everything for the first in the documented order, counts one unit
// per wait ended, grant ended, lease removed, maximum hold or lock delay ended, and after
// each unit grants whatever the rules allow (fill), skipping nothing: a queue whose head
// is a dead lease's waiter stays as it is until the sweep ends that wait.

// ended reports whether lease id is in the model's table but dead (version 6).
func (m *pmodel) ended(id LeaseID) bool {
	l := m.leases[id]
	if m.version < 6 || l == nil {
		return false
	}
	if l.deadline <= m.time || m.revoked[id] {
		return true
	}
	c := m.creators[id]
	return c != "" && slices.Contains(m.revoking, c)
}

// liveLease is the lease a command acts on: nil when missing or, from version 6, dead.
func (m *pmodel) liveLease(id LeaseID) *modelLease {
	if m.ended(id) {
		return nil
	}
	return m.leases[id]
}

// deadWaiter reports whether a waiter of lease id is one a handover passes over (version
// 6): its lease ended.
func (m *pmodel) deadWaiter(id LeaseID) bool {
	return m.version >= 6 && (m.leases[id] == nil || m.ended(id))
}

// revokeLater marks the deleted token accessor's leases dead (version 6), when it has any.
func (m *pmodel) revokeLater(accessor string) {
	if accessor == "" || slices.Contains(m.revoking, accessor) {
		return
	}
	for id := range m.leases {
		if m.creators[id] == accessor {
			m.revoking = append(m.revoking, accessor)
			return
		}
	}
}

// spend takes a unit of the entry's budget, false when none is left.
func (m *pmodel) spend() bool {
	if m.budget <= 0 {
		return false
	}
	m.budget--
	return true
}

// sweepPass is one pass of the sweep with what is left of the entry's budget: the waits
// whose deadline passed (locks, semaphores, elections), the dead leases, then the maximum
// holds and lock delays that ran out.
func (m *pmodel) sweepPass(index uint64) {
	m.fill(index)
	for _, space := range []Space{SpaceLock, SpaceSemaphore, SpaceElection} {
		for {
			name, id, ok := m.firstExpiredWait(space)
			if !ok || !m.spend() {
				break
			}
			m.endWait(space, name, id)
			m.fill(index)
		}
	}
	for m.budget > 0 {
		id, ok := m.nextDead()
		if !ok || !m.sweepLease(index, id) {
			break
		}
	}
	m.expireHoldsSliced(index)
	m.fill(index)
}

// waitKeyLess orders (deadline, name, lease) as the state machine's tables do.
func waitKeyLess(d1 int64, n1 string, id1 LeaseID, d2 int64, n2 string, id2 LeaseID) bool {
	if d1 != d2 {
		return d1 < d2
	}
	if n1 != n2 {
		return n1 < n2
	}
	return bytes.Compare(id1[:], id2[:]) < 0
}

// queueOf returns the queue of one primitive's name.
func (m *pmodel) queueOf(space Space, name string) []pWaiter {
	switch space {
	case SpaceLock:
		return m.locks[name].waiting()
	case SpaceSemaphore:
		return m.sems[name].waiting()
	}
	return m.elections[name].waiting()
}

// names returns the names in use of one primitive, sorted.
func (m *pmodel) names(space Space) []string {
	switch space {
	case SpaceLock:
		return slices.Sorted(maps.Keys(m.locks))
	case SpaceSemaphore:
		return slices.Sorted(maps.Keys(m.sems))
	}
	return slices.Sorted(maps.Keys(m.elections))
}

// firstExpiredWait finds the first wait of one primitive whose deadline has passed.
func (m *pmodel) firstExpiredWait(space Space) (string, LeaseID, bool) {
	var bestName string
	var bestID LeaseID
	var bestD int64
	found := false
	for _, name := range m.names(space) {
		for _, w := range m.queueOf(space, name) {
			if w.deadline <= m.time && (!found || waitKeyLess(w.deadline, name, w.lease, bestD, bestName, bestID)) {
				bestName, bestID, bestD, found = name, w.lease, w.deadline, true
			}
		}
	}
	return bestName, bestID, found
}

// endWait ends lease id's wait on one primitive's name (a lockset's on every lock).
func (m *pmodel) endWait(space Space, name string, id LeaseID) {
	switch space {
	case SpaceLock:
		m.leaveLockQueue(name, id)
	case SpaceSemaphore:
		if sm := m.sems[name]; sm != nil {
			sm.queue = dropWait(sm.queue, func(w pWaiter) bool { return w.lease == id })
		}
	default:
		if el := m.elections[name]; el != nil {
			el.queue = dropWait(el.queue, func(w pWaiter) bool { return w.lease == id })
		}
	}
}

// nextDead is the dead lease the sweep ends next: the first by (deadline, ID) whose
// deadline has passed (a revoked lease's deadline is its revocation's time), else the
// first by ID of the first token being revoked.
func (m *pmodel) nextDead() (LeaseID, bool) {
	var best LeaseID
	found := false
	for id, l := range m.leases {
		if l.deadline > m.time {
			continue
		}
		if b := m.leases[best]; !found || l.deadline < b.deadline || l.deadline == b.deadline && bytes.Compare(id[:], best[:]) < 0 {
			best, found = id, true
		}
	}
	if found {
		return best, true
	}
	for len(m.revoking) > 0 {
		for id := range m.leases {
			if m.creators[id] == m.revoking[0] && (!found || bytes.Compare(id[:], best[:]) < 0) {
				best, found = id, true
			}
		}
		if found {
			return best, true
		}
		m.revoking = m.revoking[1:]
	}
	return LeaseID{}, false
}

// sweepLease ends what the budget allows of dead lease id: its waits (locks, semaphores,
// elections, each in name order), its grants likewise, then the lease. It reports
// whether the lease is gone.
func (m *pmodel) sweepLease(index uint64, id LeaseID) bool {
	for _, space := range []Space{SpaceLock, SpaceSemaphore, SpaceElection} {
		var names []string
		for _, name := range m.names(space) {
			if waitsIn(m.queueOf(space, name), id) >= 0 {
				names = append(names, name)
			}
		}
		for _, name := range names {
			if !m.spend() {
				return false
			}
			if waitsIn(m.queueOf(space, name), id) >= 0 {
				m.endWait(space, name, id)
			}
			m.fill(index)
		}
	}
	for _, space := range []Space{SpaceLock, SpaceSemaphore, SpaceElection} {
		for _, name := range m.grantNames(space, id) {
			if !m.spend() {
				return false
			}
			m.endGrant(space, name, id)
			m.fill(index)
		}
	}
	if !m.spend() {
		return false
	}
	creator := m.creators[id]
	delete(m.leases, id)
	delete(m.creators, id)
	delete(m.revoked, id)
	if i := slices.Index(m.revoking, creator); i >= 0 {
		left := false
		for other := range m.leases {
			left = left || m.creators[other] == creator
		}
		if !left {
			m.revoking = slices.Delete(m.revoking, i, i+1)
		}
	}
	return true
}

// grantNames are the names of one primitive where lease id holds a grant, sorted.
func (m *pmodel) grantNames(space Space, id LeaseID) []string {
	var out []string
	for _, name := range m.names(space) {
		switch space {
		case SpaceLock:
			if holdsIn(m.locks[name].holders, id) >= 0 {
				out = append(out, name)
			}
		case SpaceSemaphore:
			if holdsIn(m.sems[name].permits, id) >= 0 {
				out = append(out, name)
			}
		default:
			if m.elections[name].leader.lease == id {
				out = append(out, name)
			}
		}
	}
	return out
}

// endGrant ends lease id's grant of one primitive's name because the lease ended: a lock
// held exclusive with a lock delay keeps its lock from everyone until the delay is over.
func (m *pmodel) endGrant(space Space, name string, id LeaseID) {
	switch space {
	case SpaceLock:
		lk := m.locks[name]
		if len(lk.holders) == 1 && !lk.shared && lk.holders[0].lease == id && lk.holders[0].delay > 0 {
			lk.delayUntil = sat(m.time, lk.holders[0].delay)
		}
		lk.holders = slices.DeleteFunc(lk.holders, func(h pHold) bool { return h.lease == id })
	case SpaceSemaphore:
		sm := m.sems[name]
		sm.permits = slices.DeleteFunc(sm.permits, func(h pHold) bool { return h.lease == id })
	default:
		m.elections[name].leader = pHold{}
	}
}

// expireHoldsSliced ends the maximum holds of locks, then the lock delays, then the
// maximum holds of permits that ran out, each in its order, one unit each.
func (m *pmodel) expireHoldsSliced(index uint64) {
	holdsOf := func(space Space) func() (string, LeaseID, bool) {
		return func() (string, LeaseID, bool) {
			var bn string
			var bid LeaseID
			var bd int64
			found := false
			for _, name := range m.names(space) {
				var hs []pHold
				if space == SpaceLock {
					hs = m.locks[name].holders
				} else {
					hs = m.sems[name].permits
				}
				for _, h := range hs {
					if h.maxUntil != 0 && h.maxUntil <= m.time && (!found || waitKeyLess(h.maxUntil, name, h.lease, bd, bn, bid)) {
						bn, bid, bd, found = name, h.lease, h.maxUntil, true
					}
				}
			}
			return bn, bid, found
		}
	}
	for {
		name, id, ok := holdsOf(SpaceLock)()
		if !ok || !m.spend() {
			break
		}
		lk := m.locks[name]
		lk.holders = slices.DeleteFunc(lk.holders, func(h pHold) bool { return h.lease == id })
		m.fill(index)
	}
	for {
		var name string
		var d int64
		found := false
		for _, n := range m.names(SpaceLock) {
			lk := m.locks[n]
			if lk.delayUntil != 0 && lk.delayUntil <= m.time && (!found || lk.delayUntil < d || lk.delayUntil == d && strings.Compare(n, name) < 0) {
				name, d, found = n, lk.delayUntil, true
			}
		}
		if !found || !m.spend() {
			break
		}
		m.locks[name].delayUntil = 0
		m.fill(index)
	}
	for {
		name, id, ok := holdsOf(SpaceSemaphore)()
		if !ok || !m.spend() {
			break
		}
		sm := m.sems[name]
		sm.permits = slices.DeleteFunc(sm.permits, func(h pHold) bool { return h.lease == id })
		m.fill(index)
	}
}
