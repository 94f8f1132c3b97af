package fsm

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// pmodel is the reference for the coordination primitives (shared locks, semaphores,
// elections, and from protocol version 3 maximum holds, lock delays, locksets and
// deadlock refusals), for lease ownership (version 4), and for the leases under them,
// written as plainly as possible: slices scanned in full, and after every entry a "fill"
// that grants whatever the rules allow until nothing more can be granted, which is what
// "handover in the same commit" means. The state machine must agree with it on every
// status, token, holder, queue and lease.
//
// Deadlocks are decided semantically, not with a wait-for graph: a request that would
// wait is refused when, with it queued, its lease would wait for ever once every lease
// that waits for nothing let go of its locks (deadlockedAfter).
type pmodel struct {
	time     int64
	stamp    int64 // the current entry's stamp: where a maximum hold granted by it starts
	version  uint64
	leases   map[LeaseID]*modelLease
	creators map[LeaseID]string // the creator each lease recorded (version 3 on)
	locks    map[string]*pLock
	sems     map[string]*pSem
	// elections are the elections with a leader.
	elections map[string]*pElection
	// The sliced sweep (version 6): the leases revoked but not yet swept, the deleted
	// tokens whose leases are being revoked, and the units left to the entry.
	revoked           map[LeaseID]bool
	revoking          []string
	budget, budgetMax int
	limits            Limits
	// v7at is the index of the entry that activated version 7 (lockset groups and the
	// histories of semaphores and elections are kept from it).
	v7at         uint64
	quota        string
	tokens       []uint64 // a LockSet's tokens (Result.Tokens) from the last apply
	acl          modelACL
	nodes        map[string]NodeInfo
	nodeVersions map[string]uint64
}

// pHold is a grant: maxUntil is when its maximum hold ends it (0: none), delay the lock
// delay its lock keeps when its lease ends (an exclusive lock grant only).
type pHold struct {
	lease    LeaseID
	token    uint64
	owner    string
	maxUntil int64
	delay    int64
	// group is the lockset this grant was made by (version 7): the locks it named, of
	// which those its lease still holds by a grant of the same group are the group.
	group *pGroup
}

// pGroup is a lockset granted whole (version 7).
type pGroup struct{ names []string }

// pWaiter is a waiting request; one of a lockset has set, shared with the waiters of its
// other locks.
type pWaiter struct {
	lease    LeaseID
	owner    string
	deadline int64
	shared   bool
	value    string
	maxHold  int64
	delay    int64
	set      *pSet
}

// pSet is a waiting lockset: names are the locks it waits for.
type pSet struct {
	lease   LeaseID
	names   []string
	shared  bool
	maxHold int64
	delay   int64
}

// pLock is a lock in use: held, waited for, or kept by a lock delay (delayUntil).
type pLock struct {
	shared     bool
	holders    []pHold
	queue      []pWaiter
	delayUntil int64
}

func (lk *pLock) isShared() bool { return lk.shared && len(lk.holders) > 0 }

type pSem struct {
	limit   uint64
	permits []pHold
	queue   []pWaiter
}

type pElection struct {
	leader pHold
	value  string
	queue  []pWaiter
}

func newPModel() *pmodel {
	return &pmodel{version: 1, leases: map[LeaseID]*modelLease{}, creators: map[LeaseID]string{},
		locks: map[string]*pLock{}, sems: map[string]*pSem{}, elections: map[string]*pElection{},
		acl: newModelACL(), nodes: map[string]NodeInfo{}, nodeVersions: map[string]uint64{},
		revoked: map[LeaseID]bool{}, budgetMax: SweepBudget}
}

func holdsIn(hs []pHold, id LeaseID) int {
	return slices.IndexFunc(hs, func(h pHold) bool { return h.lease == id })
}

// holdsWith reports whether lease id holds a grant among hs with token.
func holdsWith(hs []pHold, id LeaseID, token uint64) bool {
	i := holdsIn(hs, id)
	return i >= 0 && hs[i].token == token
}

// release takes lease id's grant with token out of *hs, as Release and SemRelease do;
// false, with *hs unchanged, where id holds no grant with that token.
func release(hs *[]pHold, id LeaseID, token uint64) bool {
	if !holdsWith(*hs, id, token) {
		return false
	}
	i := holdsIn(*hs, id)
	*hs = slices.Delete(*hs, i, i+1)
	return true
}

func waitsIn(q []pWaiter, id LeaseID) int {
	return slices.IndexFunc(q, func(w pWaiter) bool { return w.lease == id })
}

func dropWait(q []pWaiter, pred func(pWaiter) bool) []pWaiter { return slices.DeleteFunc(q, pred) }

// count is everything the lease holds and waits for, over all primitives.
func (m *pmodel) count(id LeaseID) int {
	n := 0
	for _, lk := range m.locks {
		if holdsIn(lk.holders, id) >= 0 || waitsIn(lk.queue, id) >= 0 {
			n++
		}
	}
	for _, sm := range m.sems {
		if holdsIn(sm.permits, id) >= 0 || waitsIn(sm.queue, id) >= 0 {
			n++
		}
	}
	for _, el := range m.elections {
		if el.leader.lease == id || waitsIn(el.queue, id) >= 0 {
			n++
		}
	}
	return n
}

// hold is the grant of waiter w (or a request with w's fields) at index.
func (m *pmodel) hold(w pWaiter, index uint64, exclusive bool) pHold {
	h := pHold{lease: w.lease, token: index, owner: w.owner}
	if w.maxHold > 0 {
		h.maxUntil = sat(m.stamp, w.maxHold)
	}
	if exclusive {
		h.delay = w.delay
	}
	return h
}

// setReady reports whether every lock set waits for is free for it: the set at the head
// of its queue, no lock delay, and nobody holding it (or, for a shared set, held shared).
func (m *pmodel) setReady(set *pSet) bool {
	for _, name := range set.names {
		lk := m.locks[name]
		if lk == nil || len(lk.queue) == 0 || lk.queue[0].set != set || lk.delayUntil != 0 ||
			len(lk.holders) > 0 && !(set.shared && lk.isShared()) {
			return false
		}
	}
	return true
}

// grantSet grants every lock of set at index, as one group from version 7.
func (m *pmodel) grantSet(index uint64, set *pSet) {
	g := m.newGroup(set.names)
	for _, name := range set.names {
		lk := m.locks[name]
		w := lk.queue[0]
		lk.queue = lk.queue[1:]
		w.maxHold, w.delay = set.maxHold, set.delay
		h := m.hold(w, index, !set.shared)
		h.group = g
		if set.shared {
			lk.shared, lk.holders = true, append(lk.holders, h)
		} else {
			lk.shared, lk.holders = false, []pHold{h}
		}
	}
}

// newGroup is the group of a lockset granted whole with names, from version 7 (nil
// before).
func (m *pmodel) newGroup(names []string) *pGroup {
	if m.version < 7 {
		return nil
	}
	return &pGroup{names: slices.Clone(names)}
}

// groupOf returns the lockset group the grant h of lock name belongs to, as the state
// machine reads it: the names of the group whose locks h's lease still holds by a grant
// of that group.
func (m *pmodel) groupOf(h pHold) []string {
	if h.group == nil {
		return nil
	}
	var out []string
	for _, n := range h.group.names {
		if lk := m.locks[n]; lk != nil {
			if i := holdsIn(lk.holders, h.lease); i >= 0 && lk.holders[i].group == h.group {
				out = append(out, n)
			}
		}
	}
	return out
}

// dropSet takes a waiting set out of every queue.
func (m *pmodel) dropSet(set *pSet) {
	for _, name := range set.names {
		if lk := m.locks[name]; lk != nil {
			lk.queue = dropWait(lk.queue, func(w pWaiter) bool { return w.set == set })
		}
	}
}

// leaveLockQueue takes lease id out of lock name's queue: its whole set when it waits
// there as part of one.
func (m *pmodel) leaveLockQueue(name string, id LeaseID) {
	lk := m.locks[name]
	i := waitsIn(lk.queue, id)
	if i < 0 {
		return
	}
	if set := lk.queue[i].set; set != nil {
		m.dropSet(set)
		return
	}
	lk.queue = slices.Delete(lk.queue, i, i+1)
}

// fill grants, at index, everything the rules allow, until nothing more can be granted,
// and deletes what is not in use.
func (m *pmodel) fill(index uint64) {
	for changed := true; changed; {
		changed = false
		for _, name := range slices.Sorted(maps.Keys(m.locks)) {
			lk := m.locks[name]
			if len(lk.queue) == 0 || lk.delayUntil != 0 {
				continue
			}
			w := lk.queue[0]
			if m.deadWaiter(w.lease) {
				continue // version 6: held by nobody until the sweep ends that wait
			}
			switch {
			case w.set != nil:
				if m.setReady(w.set) {
					m.grantSet(index, w.set)
					changed = true
				}
			case len(lk.holders) == 0 && !w.shared:
				lk.queue = lk.queue[1:]
				lk.shared, lk.holders = false, []pHold{m.hold(w, index, true)}
				changed = true
			case w.shared && (len(lk.holders) == 0 || lk.isShared()):
				for len(lk.queue) > 0 && lk.queue[0].shared && lk.queue[0].set == nil && !m.deadWaiter(lk.queue[0].lease) {
					lk.holders = append(lk.holders, m.hold(lk.queue[0], index, false))
					lk.queue = lk.queue[1:]
				}
				lk.shared = true
				changed = true
			}
		}
	}
	for name, lk := range m.locks {
		if len(lk.holders) == 0 {
			lk.shared = false
			if len(lk.queue) == 0 && lk.delayUntil == 0 {
				delete(m.locks, name)
			}
		}
	}
	for name, sm := range m.sems {
		for uint64(len(sm.permits)) < sm.limit && len(sm.queue) > 0 && !m.deadWaiter(sm.queue[0].lease) {
			w := sm.queue[0]
			sm.queue = sm.queue[1:]
			sm.permits = append(sm.permits, m.hold(w, index, false))
		}
		if len(sm.permits) == 0 && len(sm.queue) == 0 {
			delete(m.sems, name)
		}
	}
	for name, el := range m.elections {
		if el.leader.lease == (LeaseID{}) && len(el.queue) > 0 && !m.deadWaiter(el.queue[0].lease) {
			w := el.queue[0]
			el.queue = el.queue[1:]
			el.leader, el.value = pHold{lease: w.lease, token: index, owner: w.owner}, w.value
		}
		if el.leader.lease == (LeaseID{}) && len(el.queue) == 0 {
			delete(m.elections, name)
		}
		if el.leader.lease == (LeaseID{}) {
			el.value = ""
		}
	}
}

// remove ends leases (expired, revoked, their token deleted): out of every queue and
// every grant, an exclusive lock grant with a lock delay leaving its lock kept until the
// delay has passed.
func (m *pmodel) remove(ids []LeaseID) {
	gone := func(id LeaseID) bool { return slices.Contains(ids, id) }
	for _, id := range ids {
		delete(m.leases, id)
		delete(m.creators, id)
	}
	for _, lk := range m.locks {
		lk.queue = dropWait(lk.queue, func(w pWaiter) bool { return gone(w.lease) })
	}
	for _, lk := range m.locks {
		if len(lk.holders) == 1 && !lk.shared && gone(lk.holders[0].lease) && lk.holders[0].delay > 0 {
			lk.delayUntil = sat(m.time, lk.holders[0].delay)
		}
		lk.holders = slices.DeleteFunc(lk.holders, func(h pHold) bool { return gone(h.lease) })
	}
	for _, sm := range m.sems {
		sm.queue = dropWait(sm.queue, func(w pWaiter) bool { return gone(w.lease) })
		sm.permits = slices.DeleteFunc(sm.permits, func(h pHold) bool { return gone(h.lease) })
	}
	for _, el := range m.elections {
		el.queue = dropWait(el.queue, func(w pWaiter) bool { return gone(w.lease) })
		if gone(el.leader.lease) {
			el.leader = pHold{}
		}
	}
}

func (m *pmodel) quotaHit(c *Command, l *modelLease, already, grant bool, queueLen int) bool {
	if l == nil && m.limits.MaxLeases != 0 && uint64(len(m.leases)) >= m.limits.MaxLeases {
		m.quota = QuotaLeases
		return true
	}
	if already {
		return false
	}
	if max := m.limits.MaxLocksPerLease; max != 0 && uint64(m.count(c.Lease)) >= max {
		m.quota = QuotaLocksPerLease
		return true
	}
	if max := m.limits.MaxWaitersPerLock; max != 0 && uint64(queueLen) >= max {
		m.quota = QuotaWaitersPerLock
		return true
	}
	return m.identityHit(c, l == nil, grant, 1)
}

// setQuotaHit is quotaHit for a lockset that needs the locks need.
func (m *pmodel) setQuotaHit(c *Command, l *modelLease, need []string, already, grant bool) bool {
	if l == nil && m.limits.MaxLeases != 0 && uint64(len(m.leases)) >= m.limits.MaxLeases {
		m.quota = QuotaLeases
		return true
	}
	if already || len(need) == 0 {
		return false
	}
	if max := m.limits.MaxLocksPerLease; max != 0 && uint64(m.count(c.Lease)+len(need)) > max {
		m.quota = QuotaLocksPerLease
		return true
	}
	for _, name := range need {
		if max := m.limits.MaxWaitersPerLock; max != 0 && m.locks[name] != nil && uint64(len(m.locks[name].queue)) >= max {
			m.quota = QuotaWaitersPerLock
			return true
		}
	}
	return m.identityHit(c, l == nil, grant, len(need))
}

// admit checks the quotas of a request for a grant (already: the lease holds or waits
// for it) against queue, the primitive's queue, and when none is hit creates or renews
// the lease; it reports a refusal.
func (m *pmodel) admit(c *Command, l *modelLease, already, grant bool, queue []pWaiter, stamp int64) bool {
	if m.quotaHit(c, l, already, grant, len(queue)) {
		return true
	}
	m.leaseFor(c, l, stamp)
	return false
}

func (lk *pLock) waiting() []pWaiter {
	if lk == nil {
		return nil
	}
	return lk.queue
}

func (sm *pSem) waiting() []pWaiter {
	if sm == nil {
		return nil
	}
	return sm.queue
}

func (el *pElection) waiting() []pWaiter {
	if el == nil {
		return nil
	}
	return el.queue
}

func (m *pmodel) leaseFor(c *Command, l *modelLease, stamp int64) {
	if l == nil {
		l = &modelLease{ttl: c.TTL}
		m.leases[c.Lease] = l
		if m.version >= 3 {
			m.creators[c.Lease] = c.Creator
		}
	}
	l.deadline = sat(stamp, l.ttl)
}

// queue appends a waiter or extends (and updates) the one the lease has.
func queueUp(q []pWaiter, c *Command, stamp int64, shared bool) []pWaiter {
	if i := waitsIn(q, c.Lease); i >= 0 {
		q[i].deadline = sat(stamp, c.Wait)
		if q[i].set == nil {
			q[i].value = c.Value
		}
		return q
	}
	return append(q, pWaiter{lease: c.Lease, owner: c.Owner, deadline: sat(stamp, c.Wait), shared: shared, value: c.Value, maxHold: c.MaxHold, delay: c.LockDelay})
}

// apply applies c at index and returns the status and, for a grant, its token.
func (m *pmodel) apply(index uint64, c *Command) (Status, uint64) {
	m.quota, m.tokens = "", nil
	if c.Type == TypeSetVersion && c.Version > Version {
		return StatusInvalid, 0 // refused before anything, time included
	}
	m.stamp = max(m.time, c.Now)
	if m.version >= 2 {
		m.time = max(m.time, min(c.Now, sat(m.time, MaxTimeStep)))
	} else {
		m.time = m.stamp
	}
	m.budget = m.budgetMax
	if m.version >= 6 { // the sliced sweep, before the command and after it (sweep_model_test.go)
		m.sweepPass(index)
		st, tok := m.command(index, c, m.stamp)
		m.fill(index)
		m.sweepPass(index)
		return st, tok
	}
	// Waits end, then leases, then maximum holds, then lock delays.
	var sets []*pSet
	for _, lk := range m.locks {
		lk.queue = dropWait(lk.queue, func(w pWaiter) bool {
			if w.deadline <= m.time && w.set != nil {
				sets = append(sets, w.set)
			}
			return w.deadline <= m.time && w.set == nil
		})
	}
	for _, set := range sets {
		m.dropSet(set)
	}
	for _, sm := range m.sems {
		sm.queue = dropWait(sm.queue, func(w pWaiter) bool { return w.deadline <= m.time })
	}
	for _, el := range m.elections {
		el.queue = dropWait(el.queue, func(w pWaiter) bool { return w.deadline <= m.time })
	}
	var dead []LeaseID
	for id, l := range m.leases {
		if l.deadline <= m.time {
			dead = append(dead, id)
		}
	}
	m.remove(dead)
	overdue := func(h pHold) bool { return h.maxUntil != 0 && h.maxUntil <= m.time }
	for _, lk := range m.locks {
		lk.holders = slices.DeleteFunc(lk.holders, overdue)
		if lk.delayUntil != 0 && lk.delayUntil <= m.time {
			lk.delayUntil = 0
		}
	}
	for _, sm := range m.sems {
		sm.permits = slices.DeleteFunc(sm.permits, overdue)
	}
	m.fill(index)
	st, tok := m.command(index, c, m.stamp)
	m.fill(index)
	if m.version >= 6 { // a SetVersion to 6: what it leaves is swept already
		m.sweepPass(index)
	}
	return st, tok
}

// callerLive: the node itself, the anonymous caller, or an existing token.
func (m *pmodel) callerLive(caller string) bool {
	_, ok := m.acl.tokens[caller]
	return caller == "" || caller == CallerAnonymous || ok
}

// owns: the lease's creator, anyone when it recorded none, the node itself, or a token
// with admin rights on every name.
func (m *pmodel) owns(id LeaseID, caller string) bool {
	creator := m.creators[id]
	if creator == "" || caller == "" || creator == caller {
		return true
	}
	t, ok := m.acl.tokens[caller]
	return ok && m.acl.access(t.policies, "") >= AccessAdmin
}

// revokeWhere ends the leases whose creator matches.
func (m *pmodel) revokeWhere(match func(creator string) bool) {
	var ids []LeaseID
	for id := range m.leases {
		if match(m.creators[id]) {
			ids = append(ids, id)
		}
	}
	m.remove(ids)
}

// waitsForLock reports whether lease id waits for any lock, and holdsLock whether it
// holds any.
func (m *pmodel) waitsForLock(id LeaseID) bool {
	for _, lk := range m.locks {
		if waitsIn(lk.queue, id) >= 0 {
			return true
		}
	}
	return false
}

func (m *pmodel) holdsLock(id LeaseID) bool {
	for _, lk := range m.locks {
		if holdsIn(lk.holders, id) >= 0 {
			return true
		}
	}
	return false
}

// deadlockedAfter reports whether lease id, once queue has queued its request on a copy
// of the model, waits for ever: on the copy every lock delay is over and every lease
// that waits for no lock lets go of every lock it holds, until nothing changes (no wait
// or lease ends meanwhile); a lease still waiting then waits for ever.
func (m *pmodel) deadlockedAfter(index uint64, id LeaseID, queue func(x *pmodel)) bool {
	x := m.clone()
	var ended []LeaseID // version 6: nobody waits for a lease that ended
	for lid := range x.leases {
		if x.ended(lid) {
			ended = append(ended, lid)
		}
	}
	x.remove(ended)
	queue(x)
	for changed := true; changed; {
		changed = false
		for _, lk := range x.locks {
			if lk.delayUntil != 0 {
				lk.delayUntil, changed = 0, true
			}
		}
		x.fill(index)
		for lid := range x.leases {
			if x.waitsForLock(lid) || !x.holdsLock(lid) {
				continue
			}
			for _, lk := range x.locks {
				lk.holders = slices.DeleteFunc(lk.holders, func(h pHold) bool { return h.lease == lid })
			}
			changed = true
		}
		x.fill(index)
	}
	return x.waitsForLock(id)
}

// holdingTokens returns lease id's token of each lock of names (0 where it holds none).
func (m *pmodel) holdingTokens(names []string, id LeaseID) []uint64 {
	out := make([]uint64, len(names))
	for i, name := range names {
		if lk := m.locks[name]; lk != nil {
			if j := holdsIn(lk.holders, id); j >= 0 {
				out[i] = lk.holders[j].token
			}
		}
	}
	return out
}

// clone is a deep copy of the model; the waiters of one set share the copy of it.
func (m *pmodel) clone() *pmodel {
	c := *m
	c.leases = make(map[LeaseID]*modelLease, len(m.leases))
	for id, l := range m.leases {
		l := *l
		c.leases[id] = &l
	}
	c.creators = maps.Clone(m.creators)
	c.revoked, c.revoking = maps.Clone(m.revoked), slices.Clone(m.revoking)
	sets := map[*pSet]*pSet{}
	cloneQueue := func(q []pWaiter) []pWaiter {
		out := slices.Clone(q)
		for i, w := range out {
			if w.set != nil {
				if sets[w.set] == nil {
					s := *w.set
					sets[w.set] = &s
				}
				out[i].set = sets[w.set]
			}
		}
		return out
	}
	c.locks = make(map[string]*pLock, len(m.locks))
	for n, lk := range m.locks {
		c.locks[n] = &pLock{shared: lk.shared, holders: slices.Clone(lk.holders), queue: cloneQueue(lk.queue), delayUntil: lk.delayUntil}
	}
	c.sems = make(map[string]*pSem, len(m.sems))
	for n, sm := range m.sems {
		c.sems[n] = &pSem{limit: sm.limit, permits: slices.Clone(sm.permits), queue: slices.Clone(sm.queue)}
	}
	c.elections = make(map[string]*pElection, len(m.elections))
	for n, el := range m.elections {
		c.elections[n] = &pElection{leader: el.leader, value: el.value, queue: slices.Clone(el.queue)}
	}
	c.acl = modelACL{bootstrapped: m.acl.bootstrapped, policies: maps.Clone(m.acl.policies), tokens: maps.Clone(m.acl.tokens)}
	c.nodes, c.nodeVersions = maps.Clone(m.nodes), maps.Clone(m.nodeVersions)
	c.tokens = slices.Clone(m.tokens)
	return &c
}

func (m *pmodel) command(index uint64, c *Command, stamp int64) (Status, uint64) {
	if t := c.Type; t != TypeSetVersion && t != TypeNodeVersion && t.Since() > m.version {
		return StatusInvalid, 0
	}
	l := m.liveLease(c.Lease)
	if m.version >= 4 && c.UsesLease() { // which commands carry a caller is wire format, pinned by golden_pins_test.go
		if !m.callerLive(c.Creator) {
			return StatusUnauthenticated, 0
		}
		if l != nil && !m.owns(c.Lease, c.Creator) {
			return StatusLeaseNotFound, 0
		}
	}
	switch c.Type {
	case TypeTick:
	case TypeSetVersion:
		from := m.version
		m.version = max(m.version, c.Version)
		if from < 7 && m.version >= 7 {
			m.v7at = index
		}
		if from < 4 && m.version >= 4 {
			m.revokeWhere(func(creator string) bool { return creator != "" && !m.callerLive(creator) })
		}
	case TypeNodeVersion:
		if c.Node.ID == "" || c.Version == 0 {
			return StatusInvalid, 0
		}
		m.nodeVersions[c.Node.ID] = c.Version
	case TypeRegisterNode:
		m.nodes[c.Node.ID] = c.Node
	case TypeRemoveNode:
		delete(m.nodes, c.Node.ID)
		delete(m.nodeVersions, c.Node.ID)
	case TypeACLBootstrap, TypeACLSetPolicy, TypeACLDeletePolicy, TypeACLSetToken:
		if c.Type == TypeACLSetToken && slices.Contains(m.revoking, c.ACL.Accessor) {
			return StatusConflict, 0 // its old leases are still being revoked (version 6)
		}
		if m.version < 5 && c.ACL.Quotas != (Quotas{}) {
			return StatusInvalid, 0 // quotas are version 5's
		}
		return m.acl.apply(c), 0
	case TypeACLDeleteToken:
		st := m.acl.apply(c)
		switch {
		case st != StatusOK:
		case m.version >= 6:
			m.revokeLater(c.ACL.Accessor)
		case m.version >= 4:
			m.revokeWhere(func(creator string) bool { return creator == c.ACL.Accessor })
		}
		return st, 0
	case TypeSetLimits:
		m.limits = c.Limits
		if m.version < 5 { // version 4 has no place for the limits of version 5
			m.limits = Limits{MaxLeases: c.Limits.MaxLeases, MaxLocksPerLease: c.Limits.MaxLocksPerLease, MaxWaitersPerLock: c.Limits.MaxWaitersPerLock}
		}
	case TypeCreateLease:
		if m.ended(c.Lease) {
			return StatusLeaseNotFound, 0
		}
		if l == nil && m.limits.MaxLeases != 0 && uint64(len(m.leases)) >= m.limits.MaxLeases {
			m.quota = QuotaLeases
			return StatusQuotaExceeded, 0
		}
		if l == nil && m.identityHit(c, true, false, 0) {
			return StatusQuotaExceeded, 0
		}
		if l == nil {
			m.leaseFor(c, l, stamp)
		}
	case TypeRenew:
		for i, id := range c.Leases {
			l := m.liveLease(id)
			if l == nil {
				continue
			}
			if m.version >= 4 && len(c.Callers) == len(c.Leases) && !(m.callerLive(c.Callers[i]) && m.owns(id, c.Callers[i])) {
				continue
			}
			l.deadline = sat(stamp, l.ttl)
		}
	case TypeRevoke:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		if m.version >= 6 {
			m.revoked[c.Lease], l.deadline = true, m.time // the sweep ends it
			return StatusOK, 0
		}
		m.remove([]LeaseID{c.Lease})
	case TypeAcquire, TypeAcquireShared, TypeAcquireEx:
		return m.acquire(index, c, l, stamp)
	case TypeLockSet:
		return m.lockSet(index, c, l, stamp)
	case TypeRelease:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		if lk := m.locks[c.Name]; lk == nil || !release(&lk.holders, c.Lease, c.Token) {
			return StatusNotHolder, 0
		}
	case TypeLockSetRelease:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		for i, name := range c.Names {
			lk := m.locks[name]
			if lk == nil || !holdsWith(lk.holders, c.Lease, c.Tokens[i]) {
				return StatusNotHolder, 0
			}
		}
		for _, name := range c.Names {
			lk := m.locks[name]
			lk.holders = slices.Delete(lk.holders, holdsIn(lk.holders, c.Lease), holdsIn(lk.holders, c.Lease)+1)
		}
	case TypeDequeue:
		if m.ended(c.Lease) {
			return StatusNotHolder, 0
		}
		lk := m.locks[c.Name]
		if lk != nil {
			if i := holdsIn(lk.holders, c.Lease); i >= 0 {
				return StatusOK, lk.holders[i].token
			}
			if l != nil {
				m.leaveLockQueue(c.Name, c.Lease)
			}
		}
		return StatusNotHolder, 0
	case TypeSemAcquire, TypeSemAcquireEx:
		if c.Limit == 0 {
			return StatusInvalid, 0
		}
		if l == nil && (!c.NewLease || m.ended(c.Lease)) {
			return StatusLeaseNotFound, 0
		}
		sm := m.sems[c.Name]
		if sm != nil && sm.limit != c.Limit {
			return StatusLimitConflict, 0
		}
		mine, waiting := false, false
		if sm != nil && l != nil {
			mine, waiting = holdsIn(sm.permits, c.Lease) >= 0, waitsIn(sm.queue, c.Lease) >= 0
		}
		free := sm == nil || uint64(len(sm.permits)) < sm.limit && len(sm.queue) == 0
		if !mine && !free && c.Wait <= 0 {
			return StatusSemaphoreFull, 0
		}
		if m.admit(c, l, mine || waiting, free, sm.waiting(), stamp) {
			return StatusQuotaExceeded, 0
		}
		req := pWaiter{lease: c.Lease, owner: c.Owner, maxHold: c.MaxHold}
		switch {
		case sm == nil:
			m.sems[c.Name] = &pSem{limit: c.Limit, permits: []pHold{m.hold(req, index, false)}}
			return StatusOK, index
		case mine:
			return StatusOK, sm.permits[holdsIn(sm.permits, c.Lease)].token
		case free:
			sm.permits = append(sm.permits, m.hold(req, index, false))
			return StatusOK, index
		}
		sm.queue = queueUp(sm.queue, c, stamp, false)
		return StatusQueued, 0
	case TypeSemRelease:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		if sm := m.sems[c.Name]; sm == nil || !release(&sm.permits, c.Lease, c.Token) {
			return StatusNotHolder, 0
		}
	case TypeSemDequeue:
		if m.ended(c.Lease) {
			return StatusNotHolder, 0
		}
		sm := m.sems[c.Name]
		if sm != nil {
			if i := holdsIn(sm.permits, c.Lease); i >= 0 {
				return StatusOK, sm.permits[i].token
			}
			if l != nil {
				sm.queue = dropWait(sm.queue, func(w pWaiter) bool { return w.lease == c.Lease })
			}
		}
		return StatusNotHolder, 0
	case TypeCampaign:
		if l == nil && (!c.NewLease || c.Token != 0 || m.ended(c.Lease)) {
			return StatusLeaseNotFound, 0
		}
		el := m.elections[c.Name]
		leads := el != nil && l != nil && el.leader.lease == c.Lease
		if c.Token != 0 && (!leads || el.leader.token != c.Token) {
			return StatusNotHolder, 0
		}
		if el != nil && !leads && c.Wait <= 0 {
			return StatusElectionHeld, 0
		}
		waiting := l != nil && waitsIn(el.waiting(), c.Lease) >= 0
		if m.admit(c, l, leads || waiting, el == nil, el.waiting(), stamp) {
			return StatusQuotaExceeded, 0
		}
		switch {
		case el == nil:
			m.elections[c.Name] = &pElection{leader: pHold{lease: c.Lease, token: index, owner: c.Owner}, value: c.Value}
			return StatusOK, index
		case leads:
			el.value = c.Value
			return StatusOK, el.leader.token
		}
		el.queue = queueUp(el.queue, c, stamp, false)
		return StatusQueued, 0
	case TypeResign:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		el := m.elections[c.Name]
		if el == nil || el.leader.lease != c.Lease || el.leader.token != c.Token {
			return StatusNotHolder, 0
		}
		el.leader = pHold{}
	case TypeElectionDequeue:
		if m.ended(c.Lease) {
			return StatusNotHolder, 0
		}
		el := m.elections[c.Name]
		if el != nil {
			if el.leader.lease == c.Lease {
				return StatusOK, el.leader.token
			}
			if l != nil {
				el.queue = dropWait(el.queue, func(w pWaiter) bool { return w.lease == c.Lease })
			}
		}
		return StatusNotHolder, 0
	}
	return StatusOK, 0
}

// acquire applies Acquire, AcquireShared and AcquireEx.
func (m *pmodel) acquire(index uint64, c *Command, l *modelLease, stamp int64) (Status, uint64) {
	shared := c.Type == TypeAcquireShared || c.Type == TypeAcquireEx && c.Shared
	if l == nil && (!c.NewLease || m.ended(c.Lease)) {
		return StatusLeaseNotFound, 0
	}
	lk := m.locks[c.Name]
	mine, waiting := false, false
	if lk != nil && l != nil {
		i, j := holdsIn(lk.holders, c.Lease), waitsIn(lk.queue, c.Lease)
		mine, waiting = i >= 0, j >= 0
		if mine && lk.shared != shared || waiting && lk.queue[j].shared != shared {
			return StatusModeConflict, 0
		}
	}
	join := shared && lk != nil && !mine && len(lk.queue) == 0 && lk.isShared()
	if lk != nil && !mine && !join {
		if c.Wait <= 0 {
			return StatusLockHeld, 0
		}
		if m.version >= 3 && l != nil && !waiting && m.deadlockedAfter(index, c.Lease, func(x *pmodel) {
			lk := x.locks[c.Name]
			lk.queue = queueUp(lk.queue, c, stamp, shared)
		}) {
			return StatusDeadlock, 0
		}
	}
	if m.admit(c, l, mine || waiting, lk == nil || join, lk.waiting(), stamp) {
		return StatusQuotaExceeded, 0
	}
	req := pWaiter{lease: c.Lease, owner: c.Owner, maxHold: c.MaxHold, delay: c.LockDelay}
	switch {
	case lk == nil:
		m.locks[c.Name] = &pLock{shared: shared, holders: []pHold{m.hold(req, index, !shared)}}
		return StatusOK, index
	case mine:
		return StatusOK, lk.holders[holdsIn(lk.holders, c.Lease)].token
	case join:
		lk.holders = append(lk.holders, m.hold(req, index, false))
		return StatusOK, index
	}
	lk.queue = queueUp(lk.queue, c, stamp, shared)
	return StatusQueued, 0
}

// lockSet applies LockSet: every lock of c.Names at once or none.
func (m *pmodel) lockSet(index uint64, c *Command, l *modelLease, stamp int64) (Status, uint64) {
	if c.Shared && c.LockDelay > 0 {
		return StatusInvalid, 0
	}
	if l == nil && (!c.NewLease || m.ended(c.Lease)) {
		return StatusLeaseNotFound, 0
	}
	var need, blocked []string
	var waitingSet *pSet
	for _, name := range c.Names {
		lk := m.locks[name]
		if lk != nil && l != nil {
			if holdsIn(lk.holders, c.Lease) >= 0 {
				if lk.shared != c.Shared {
					return StatusModeConflict, 0
				}
				continue
			}
			if j := waitsIn(lk.queue, c.Lease); j >= 0 {
				w := lk.queue[j]
				if w.set == nil || w.set.shared != c.Shared || waitingSet != nil && waitingSet != w.set {
					return StatusModeConflict, 0
				}
				waitingSet = w.set
			}
		}
		need = append(need, name)
		if !(lk == nil || c.Shared && lk.isShared() && len(lk.queue) == 0) {
			blocked = append(blocked, name)
		}
	}
	if waitingSet != nil && !slices.Equal(waitingSet.names, need) {
		return StatusModeConflict, 0
	}
	if len(blocked) > 0 && c.Wait <= 0 {
		return StatusLockHeld, 0
	}
	queueSet := func(x *pmodel) {
		set := &pSet{lease: c.Lease, names: need, shared: c.Shared, maxHold: c.MaxHold, delay: c.LockDelay}
		for _, name := range need {
			lk := x.locks[name]
			if lk == nil {
				lk = &pLock{}
				x.locks[name] = lk
			}
			lk.queue = append(lk.queue, pWaiter{lease: c.Lease, owner: c.Owner, deadline: sat(stamp, c.Wait), shared: c.Shared, set: set})
		}
	}
	if len(blocked) > 0 && waitingSet == nil && m.version >= 3 && l != nil && m.deadlockedAfter(index, c.Lease, queueSet) {
		return StatusDeadlock, 0
	}
	if m.setQuotaHit(c, l, need, waitingSet != nil, len(blocked) == 0) {
		return StatusQuotaExceeded, 0
	}
	m.leaseFor(c, l, stamp)
	switch {
	case len(blocked) == 0:
		req := pWaiter{lease: c.Lease, owner: c.Owner, maxHold: c.MaxHold, delay: c.LockDelay}
		g := m.newGroup(need)
		for _, name := range need {
			h := m.hold(req, index, !c.Shared)
			h.group = g
			if lk := m.locks[name]; lk == nil {
				m.locks[name] = &pLock{shared: c.Shared, holders: []pHold{h}}
			} else {
				lk.holders = append(lk.holders, h)
			}
		}
		m.tokens = m.holdingTokens(c.Names, c.Lease)
		return StatusOK, m.tokens[0]
	case waitingSet != nil:
		for _, name := range waitingSet.names {
			lk := m.locks[name]
			lk.queue[waitsIn(lk.queue, c.Lease)].deadline = sat(stamp, c.Wait)
		}
	default:
		queueSet(m)
	}
	m.tokens = m.holdingTokens(c.Names, c.Lease)
	return StatusQueued, 0
}

// pgen draws commands over a small universe (six leases, three names used by every
// primitive) so that contention, queues, expiry and handover are frequent.
type pgen struct {
	rng   *rand.Rand
	ids   []LeaseID
	names []string
	now   int64
	f     *FSM // to release with current tokens
	first bool
}

func newPGen(seed int64, f *FSM) *pgen {
	g := &pgen{rng: rand.New(rand.NewSource(seed)), f: f, first: true}
	for i := 0; i < 6; i++ {
		var id LeaseID
		id[0], id[15] = byte(i+1), byte(0xB0+i)
		g.ids = append(g.ids, id)
	}
	g.names = []string{"a", "jobs/x", "z"}
	return g
}

// holders returns the grants of a primitive.
func (g *pgen) holders(space Space, name string) []Holding {
	var hs []Holding
	switch space {
	case SpaceLock:
		hs = g.f.Lock(name).Holders
	case SpaceSemaphore:
		hs = g.f.Semaphore(name).Permits
	case SpaceElection:
		if v := g.f.Election(name); v.Elected {
			hs = []Holding{{Lease: v.Leader, Token: v.Token}}
		}
	}
	return hs
}

// release fills c as a release of a primitive, mostly by one of its holders.
func (g *pgen) release(c *Command, t Type, space Space, id LeaseID, name string) {
	c.Type, c.Lease, c.Name = t, id, name
	if hs := g.holders(space, name); len(hs) > 0 && g.rng.Intn(3) > 0 {
		c.Lease = hs[g.rng.Intn(len(hs))].Lease
	}
	c.Token = g.tokenOf(space, name, c.Lease)
}

// tokenOf returns lease id's current token in a primitive, or a made-up one.
func (g *pgen) tokenOf(space Space, name string, id LeaseID) uint64 {
	for _, h := range g.holders(space, name) {
		if h.Lease == id {
			if g.rng.Intn(6) == 0 {
				return h.Token - 1 // a stale token
			}
			return h.Token
		}
	}
	return uint64(g.rng.Intn(50))
}

func (g *pgen) next() Command {
	g.now += int64(g.rng.Intn(120))
	c := Command{Now: g.now}
	if g.first {
		g.first = false
		c.Type, c.Version = TypeSetVersion, 2
		return c
	}
	if g.rng.Intn(8) == 0 {
		c.Now -= int64(g.rng.Intn(150))
	}
	id := g.ids[g.rng.Intn(len(g.ids))]
	name := g.names[g.rng.Intn(len(g.names))]
	grantReq := func(t Type) {
		c.Type, c.Lease, c.Name, c.Owner = t, id, name, fmt.Sprintf("o%d", g.rng.Intn(3))
		if g.rng.Intn(3) > 0 {
			c.Wait = int64(g.rng.Intn(4000))
		}
		if g.rng.Intn(4) == 0 {
			c.NewLease, c.TTL = true, int64(1000+g.rng.Intn(5000))
		}
	}
	switch op := g.rng.Intn(200); {
	case op < 1:
		c.Type = TypeSetLimits
		for _, p := range []*uint64{&c.Limits.MaxLeases, &c.Limits.MaxLocksPerLease, &c.Limits.MaxWaitersPerLock} {
			if g.rng.Intn(3) == 0 {
				*p = uint64(3 + g.rng.Intn(4))
			}
		}
		return c
	}
	switch op := g.rng.Intn(100); {
	case op < 8:
		c.Type, c.Lease, c.TTL = TypeCreateLease, id, int64(1000+g.rng.Intn(5000))
	case op < 16:
		c.Type, c.Leases = TypeRenew, someLeases(g.rng, g.ids)
	case op < 19:
		c.Type, c.Lease = TypeRevoke, id
	case op < 27:
		grantReq(TypeAcquire)
	case op < 37:
		grantReq(TypeAcquireShared)
	case op < 44:
		g.release(&c, TypeRelease, SpaceLock, id, name)
	case op < 47:
		c.Type, c.Lease, c.Name = TypeDequeue, id, name
	case op < 57:
		grantReq(TypeSemAcquire)
		c.Limit = uint64(1 + len(c.Name)%3) // a semaphore's usual limit, from its name
		switch g.rng.Intn(30) {
		case 0:
			c.Limit = 0 // invalid
		case 1:
			c.Limit = uint64(1 + g.rng.Intn(3)) // perhaps another limit
		}
	case op < 64:
		g.release(&c, TypeSemRelease, SpaceSemaphore, id, name)
	case op < 67:
		c.Type, c.Lease, c.Name = TypeSemDequeue, id, name
	case op < 77:
		grantReq(TypeCampaign)
		c.Value = fmt.Sprintf("v%d", g.rng.Intn(4))
		if g.rng.Intn(5) == 0 {
			c.Token, c.NewLease, c.TTL, c.Wait = g.tokenOf(SpaceElection, name, id), false, 0, 0 // a proclaim only
		}
	case op < 83:
		g.release(&c, TypeResign, SpaceElection, id, name)
	case op < 86:
		c.Type, c.Lease, c.Name = TypeElectionDequeue, id, name
	default:
		c.Type = TypeTick
	}
	return c
}

func sortHolds(hs []Holding) []Holding {
	out := slices.Clone(hs)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Token != out[j].Token {
			return out[i].Token < out[j].Token
		}
		return bytes.Compare(out[i].Lease[:], out[j].Lease[:]) < 0
	})
	return out
}

func modelHolds(hs []pHold) []Holding {
	out := make([]Holding, 0, len(hs))
	for _, h := range hs {
		out = append(out, Holding{Lease: h.lease, Token: h.token, Owner: h.owner})
	}
	return sortHolds(out)
}

func waiterIDs(q []pWaiter) []LeaseID {
	var out []LeaseID
	for _, w := range q {
		out = append(out, w.lease)
	}
	return out
}

// checkPrims compares f with the model and checks the primitives' invariants.
func checkPrims(t *testing.T, index uint64, f *FSM, m *pmodel, g *pgen) {
	t.Helper()
	if f.Time() != m.time {
		t.Fatalf("step %d: time %d, model %d", index, f.Time(), m.time)
	}
	// From version 6 reads leave out the grants of leases that ended (sweep.go).
	liveHolds := func(hs []pHold) []pHold {
		return slices.DeleteFunc(slices.Clone(hs), func(h pHold) bool { return m.deadWaiter(h.lease) })
	}
	for _, name := range g.names {
		v, mk := f.Lock(name), m.locks[name]
		var live []pHold
		if mk != nil {
			live = liveHolds(mk.holders)
		}
		if held := len(live) > 0; v.Held != held {
			t.Fatalf("step %d: lock %q held=%v, model %v", index, name, v.Held, held)
		}
		// Invariant: one exclusive holder, or only shared holders.
		if v.Held && (len(v.Holders) == 0 || !v.Shared && len(v.Holders) != 1) {
			t.Fatalf("step %d: lock %q holders %+v shared=%v", index, name, v.Holders, v.Shared)
		}
		if mk != nil {
			var maxUntil int64
			if len(live) == 1 && !mk.shared {
				maxUntil = live[0].maxUntil
			}
			if v.Shared != (mk.shared && len(live) > 0) || !slices.Equal(sortHolds(v.Holders), modelHolds(live)) || !slices.Equal(v.Waiters, waiterIDs(mk.queue)) ||
				v.DelayedUntil != mk.delayUntil || v.MaxHoldUntil != maxUntil {
				t.Fatalf("step %d: lock %q = %+v, model %+v", index, name, v, *mk)
			}
			// Version 7: each live grant made by a lockset reads as its group.
			var wantSets []string
			for _, h := range live {
				if g := m.groupOf(h); g != nil {
					wantSets = append(wantSets, fmt.Sprint(h.lease, h.token, mk.shared, g))
				}
			}
			var gotSets []string
			for _, sv := range v.Sets {
				gotSets = append(gotSets, fmt.Sprint(sv.Lease, sv.Token, sv.Shared, sv.Names))
			}
			slices.Sort(wantSets)
			slices.Sort(gotSets)
			if !slices.Equal(gotSets, wantSets) {
				t.Fatalf("step %d: lock %q lockset groups %q, model %q", index, name, gotSets, wantSets)
			}
		} else if len(v.Waiters) > 0 || v.DelayedUntil != 0 {
			t.Fatalf("step %d: lock %q = %+v, model: not in use", index, name, v)
		}
		sm, ms := f.Semaphore(name), m.sems[name]
		if (sm.Limit != 0) != (ms != nil) || uint64(len(sm.Permits)) > sm.Limit {
			t.Fatalf("step %d: semaphore %q = %+v, model %v", index, name, sm, ms)
		}
		if ms != nil && (sm.Limit != ms.limit || !slices.Equal(sortHolds(sm.Permits), modelHolds(liveHolds(ms.permits))) || !slices.Equal(sm.Waiters, waiterIDs(ms.queue))) {
			t.Fatalf("step %d: semaphore %q = %+v, model %+v", index, name, sm, *ms)
		}
		el, me := f.Election(name), m.elections[name]
		elected := me != nil && me.leader.lease != (LeaseID{}) && !m.deadWaiter(me.leader.lease)
		if el.Elected != elected {
			t.Fatalf("step %d: election %q elected=%v, model %v", index, name, el.Elected, elected)
		}
		if elected && (el.Leader != me.leader.lease || el.Token != me.leader.token || el.Owner != me.leader.owner || el.Value != me.value) ||
			me != nil && !slices.Equal(el.Candidates, waiterIDs(me.queue)) {
			t.Fatalf("step %d: election %q = %+v, model %+v", index, name, el, *me)
		}
	}
	checkHistoriesExplain(t, index, f, m, g.names)
	for _, id := range g.ids {
		v, ok := f.Lease(id)
		ml := m.liveLease(id)
		if ok != (ml != nil) || ok && (v.Deadline != ml.deadline || v.TTL != ml.ttl || v.Creator != m.creators[id]) {
			t.Fatalf("step %d: lease %s = %+v (%v), model %+v", index, id, v, ok, ml)
		}
	}
	checkPrimsConsistent(t, index, f)
}

// checkHistoriesExplain checks that, from version 7, the history of each semaphore and
// election says why its permits and leader are there: a grant made after version 7 was
// activated is in its name's history (as permit_granted or elected, with the grant's token
// and lease), while the history holds all its events (fewer than HistoryLen).
func checkHistoriesExplain(t *testing.T, index uint64, f *FSM, m *pmodel, names []string) {
	t.Helper()
	if m.version < 7 {
		return
	}
	explains := func(space Space, name string, kind HistoryKind, h Holding) bool {
		evs := f.HistoryOf(space, name)
		if h.Token <= m.v7at || len(evs) >= HistoryLen {
			return true
		}
		for _, e := range evs {
			if e.Kind == kind && e.Token == h.Token && e.Lease == LeaseFingerprint(h.Lease) && e.Owner == h.Owner {
				return true
			}
		}
		return false
	}
	for _, name := range names {
		for _, p := range f.Semaphore(name).Permits {
			if !explains(SpaceSemaphore, name, HistoryPermitGranted, p) {
				t.Fatalf("step %d: the history of semaphore %q has no grant of its permit %+v: %+v", index, name, p, f.HistoryOf(SpaceSemaphore, name))
			}
		}
		if el := f.Election(name); el.Elected && !explains(SpaceElection, name, HistoryElected, Holding{Lease: el.Leader, Token: el.Token, Owner: el.Owner}) {
			t.Fatalf("step %d: the history of election %q has no election of its leader %+v: %+v", index, name, el, f.HistoryOf(SpaceElection, name))
		}
	}
}

// checkPrimsConsistent walks the state's own cross references: every grant and wait of a
// primitive is known to its lease and the other way round, each election has exactly the
// leader whose lease says it leads, and nothing is left that could be granted.
func checkPrimsConsistent(t *testing.T, index uint64, f *FSM) {
	t.Helper()
	checkNoExtra(t, index)
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.s
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d: "+format, append([]any{index}, args...)...)
	}
	for id, l := range s.leases {
		for name := range l.held {
			lk := s.locks[name]
			if lk == nil {
				fail("lease %s holds missing lock %q", id, name)
			}
			if _, _, ok := lk.grantOf(id); !ok {
				fail("lease %s believes it holds lock %q", id, name)
			}
		}
		if l.prims == nil {
			continue
		}
		for name := range l.prims.permits {
			if sm := s.sems[name]; sm == nil || sm.permits.get(id) == nil {
				fail("lease %s believes it holds a permit of %q", id, name)
			}
		}
		for name := range l.prims.leads {
			if el := s.elections[name]; el == nil || el.leader != id {
				fail("lease %s believes it leads %q", id, name)
			}
		}
	}
	// The derived name indexes: locks, semaphores and elections in use, and a superset
	// of the locks with waiters (waits.go).
	checkIndex := func(what string, index interface{ Len() int }, n int) {
		t.Helper()
		if index.Len() != n {
			fail("the %s index holds %d names for %d", what, index.Len(), n)
		}
	}
	checkIndex("lock", s.names, len(s.locks))
	checkIndex("semaphore", s.semNames, len(s.sems))
	checkIndex("election", s.elecNames, len(s.elections))
	for name, lk := range s.locks {
		if _, ok := s.names.Get(name); !ok {
			fail("lock %q is not in the name index", name)
		}
		if _, ok := s.waited.Get(name); lk.ro().queue.len > 0 && !ok {
			fail("lock %q has waiters and is not in the waited index", name)
		}
	}
	for name := range s.sems {
		if _, ok := s.semNames.Get(name); !ok {
			fail("semaphore %q is not in the name index", name)
		}
	}
	for name := range s.elections {
		if _, ok := s.elecNames.Get(name); !ok {
			fail("election %q is not in the name index", name)
		}
	}
	s.waited.Ascend(func(name string) bool {
		if s.locks[name] == nil {
			fail("the waited index holds %q, which is no lock", name)
		}
		return true
	})
	for name, lk := range s.locks {
		if lk.holder == (LeaseID{}) {
			continue // held by nobody: reserved for a lockset or kept by a lock delay, as the model says
		}
		n := 0
		if lk.isShared() {
			for g := lk.ro().readers.head; g != nil; g = g.next {
				if _, ok := s.leases[g.lease].held[name]; !ok {
					fail("reader %s of %q unknown to its lease", g.lease, name)
				}
				n++
			}
			if h := lk.ro().readers.head; h.lease != lk.holder || h.token != lk.token {
				fail("lock %q does not mirror its oldest reader", name)
			}
			if h := lk.ro().queue.head; h != nil && h.shared && h.set == nil && !s.waitsForEnded(h) { // a lockset waits for its other locks
				fail("lock %q held shared with shared waiters at its head", name)
			}
		}
		if _, ok := s.leases[lk.holder].held[name]; !ok {
			fail("holder of %q unknown to its lease", name)
		}
	}
	for name, sm := range s.sems {
		if sm.queue.len > 0 && uint64(sm.permits.len()) < sm.limit && !s.waitsForEnded(sm.queue.head) {
			fail("semaphore %q has free permits and waiters", name)
		}
		for g := sm.permits.head; g != nil; g = g.next {
			if p := s.leases[g.lease].prims; p == nil {
				fail("permit of %q unknown to its lease", name)
			} else if _, ok := p.permits[name]; !ok {
				fail("permit of %q unknown to its lease", name)
			}
		}
	}
	leaders := map[string]int{}
	for _, l := range s.leases {
		if l.prims != nil {
			for name := range l.prims.leads {
				leaders[name]++
			}
		}
	}
	for name, n := range leaders {
		if n > 1 {
			fail("election %q has %d leases that lead", name, n)
		}
	}
	for name, el := range s.elections {
		if el.leader == (LeaseID{}) { // version 6: nobody leads while its head candidate's lease ended
			if !s.waitsForEnded(el.queue.head) {
				fail("election %q: nobody leads, and its head candidate's lease has not ended", name)
			}
			continue
		}
		if leaders[name] != 1 {
			fail("election %q: its leader's lease does not know it leads", name)
		}
	}
}

// runPrims drives the state machine, a replica and (from a third of the way) a copy
// restored from a snapshot with random primitive commands, checking every step against
// the model, and the three byte for byte at the end.
func runPrims(t *testing.T, seed int64, steps int) {
	var events []Event
	f := New(func(e Event) { events = append(events, e) })
	replica := New(nil)
	var restored *FSM
	m := newPModel()
	g := newPGen(seed, f)
	lastToken := map[string]uint64{} // per space and name: the highest token granted
	for index := uint64(1); index <= uint64(steps); index++ {
		c := g.next()
		events = events[:0]
		got := f.ApplyCommand(index, &c)
		replica.ApplyCommand(index, &c)
		if restored != nil {
			restored.ApplyCommand(index, &c)
		}
		want, token := m.apply(index, &c)
		if got.Status != want || got.Quota != m.quota {
			t.Fatalf("step %d %s %q by %s (wait %d): status %s %q, model says %s %q", index, c.Type, c.Name, c.Lease, c.Wait, got.Status, got.Quota, want, m.quota)
		}
		if want == StatusOK && token != 0 && got.Token != token {
			t.Fatalf("step %d %s: token %d, model %d", index, c.Type, got.Token, token)
		}
		checkPrims(t, index, f, m, g)
		// Tokens: every grant the entry made carries the entry's index, above every
		// earlier token of the same primitive.
		for _, e := range events {
			if e.Kind != EventGranted {
				continue
			}
			k := fmt.Sprint(e.Space, "/", e.Name)
			if e.Token != index || e.Token <= lastToken[k] && lastToken[k] != index {
				t.Fatalf("step %d: grant %+v after token %d", index, e, lastToken[k])
			}
		}
		for _, name := range g.names {
			for sp, hs := range map[Space][]Holding{SpaceLock: f.Lock(name).Holders, SpaceSemaphore: f.Semaphore(name).Permits} {
				for _, h := range hs {
					k := fmt.Sprint(sp, "/", name)
					if h.Token > lastToken[k] {
						if h.Token != index {
							t.Fatalf("step %d: %s %q has a new token %d", index, sp, name, h.Token)
						}
						lastToken[k] = h.Token
					}
				}
			}
			if v := f.Election(name); v.Elected && v.Token > lastToken["e/"+name] {
				if v.Token != index {
					t.Fatalf("step %d: election %q has a new token %d", index, name, v.Token)
				}
				lastToken["e/"+name] = v.Token
			}
		}
		if index == uint64(steps/3) || index%500 == 0 {
			// Encode, restore, encode: the same bytes, and the restored copy applies on.
			snap := f.SnapshotBytes()
			r := New(nil)
			if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
				t.Fatalf("step %d: restore: %v", index, err)
			}
			if !bytes.Equal(r.SnapshotBytes(), snap) {
				t.Fatalf("step %d: encode, restore, encode differs", index)
			}
			if restored == nil {
				restored = r
			}
		}
	}
	want := f.SnapshotBytes()
	if !bytes.Equal(want, replica.SnapshotBytes()) {
		t.Fatal("replica replaying the same log has different snapshot bytes")
	}
	if !bytes.Equal(want, restored.SnapshotBytes()) {
		t.Fatal("replica restored from a snapshot midway has different snapshot bytes")
	}
}

// TestFSM_RandomPrimsMatchModel: shared locks, semaphores and elections under random
// commands (leases expiring, revoked, renewed; waits ending; quotas) agree with the plain
// reference model at every step, keep their invariants (one exclusive holder or only
// shared ones, permits within the limit, one leader, tokens the granting index and rising,
// FIFO, everything grantable granted in the same entry), and replay and restore byte for
// byte.
func TestFSM_RandomPrimsMatchModel(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runPrims(t, seed, 4000) })
	}
}
