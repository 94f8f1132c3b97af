package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// pmodel is the reference for the coordination primitives (shared locks, semaphores,
// elections) and the leases under them, written as plainly as possible: slices scanned in
// full, and after every entry a "fill" that grants whatever the rules allow, which is what
// "handover in the same commit" means. The state machine must agree with it on every
// status, token, holder, queue and lease.
type pmodel struct {
	time      int64
	leases    map[LeaseID]*modelLease
	locks     map[string]*pLock
	sems      map[string]*pSem
	elections map[string]*pElection
	limits    Limits
	quota     string
}

type pHold struct {
	lease LeaseID
	token uint64
	owner string
}

type pWaiter struct {
	lease    LeaseID
	owner    string
	deadline int64
	shared   bool
	value    string
}

type pLock struct {
	shared  bool
	holders []pHold
	queue   []pWaiter
}

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
	return &pmodel{leases: map[LeaseID]*modelLease{}, locks: map[string]*pLock{}, sems: map[string]*pSem{}, elections: map[string]*pElection{}}
}

func holdsIn(hs []pHold, id LeaseID) int {
	return slices.IndexFunc(hs, func(h pHold) bool { return h.lease == id })
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

// fill grants, at index, everything the rules allow, and deletes what is not in use.
func (m *pmodel) fill(index uint64) {
	for name, lk := range m.locks {
		if len(lk.holders) == 0 && len(lk.queue) > 0 && !lk.queue[0].shared {
			w := lk.queue[0]
			lk.queue = lk.queue[1:]
			lk.shared, lk.holders = false, []pHold{{w.lease, index, w.owner}}
		}
		if len(lk.holders) == 0 || lk.shared {
			for len(lk.queue) > 0 && lk.queue[0].shared {
				w := lk.queue[0]
				lk.queue = lk.queue[1:]
				lk.shared = true
				lk.holders = append(lk.holders, pHold{w.lease, index, w.owner})
			}
		}
		if len(lk.holders) == 0 {
			delete(m.locks, name)
		}
	}
	for name, sm := range m.sems {
		for uint64(len(sm.permits)) < sm.limit && len(sm.queue) > 0 {
			w := sm.queue[0]
			sm.queue = sm.queue[1:]
			sm.permits = append(sm.permits, pHold{w.lease, index, w.owner})
		}
		if len(sm.permits) == 0 {
			delete(m.sems, name)
		}
	}
	for name, el := range m.elections {
		if el.leader.lease == (LeaseID{}) && len(el.queue) > 0 {
			w := el.queue[0]
			el.queue = el.queue[1:]
			el.leader, el.value = pHold{w.lease, index, w.owner}, w.value
		}
		if el.leader.lease == (LeaseID{}) {
			delete(m.elections, name)
		}
	}
}

// remove takes leases out of every queue and every grant.
func (m *pmodel) remove(ids []LeaseID) {
	gone := func(id LeaseID) bool { return slices.Contains(ids, id) }
	for _, id := range ids {
		delete(m.leases, id)
	}
	for _, lk := range m.locks {
		lk.queue = dropWait(lk.queue, func(w pWaiter) bool { return gone(w.lease) })
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

func (m *pmodel) quotaHit(c *Command, l *modelLease, already bool, queueLen int) bool {
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
	return false
}

func (m *pmodel) leaseFor(c *Command, l *modelLease, stamp int64) {
	if l == nil {
		l = &modelLease{ttl: c.TTL}
		m.leases[c.Lease] = l
	}
	l.deadline = sat(stamp, l.ttl)
}

// queue appends a waiter or extends (and updates) the one the lease has.
func queueUp(q []pWaiter, c *Command, stamp int64, shared bool) []pWaiter {
	if i := waitsIn(q, c.Lease); i >= 0 {
		q[i].deadline = sat(stamp, c.Wait)
		q[i].value = c.Value
		return q
	}
	return append(q, pWaiter{lease: c.Lease, owner: c.Owner, deadline: sat(stamp, c.Wait), shared: shared, value: c.Value})
}

// apply applies c at index (the state is at version 2 throughout) and returns the status
// and, for a grant, its token.
func (m *pmodel) apply(index uint64, c *Command) (Status, uint64) {
	m.quota = ""
	stamp := max(m.time, c.Now)
	m.time = max(m.time, min(c.Now, sat(m.time, MaxTimeStep)))
	for _, lk := range m.locks {
		lk.queue = dropWait(lk.queue, func(w pWaiter) bool { return w.deadline <= m.time })
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
	m.fill(index)
	st, tok := m.command(index, c, stamp)
	m.fill(index)
	return st, tok
}

func (m *pmodel) command(index uint64, c *Command, stamp int64) (Status, uint64) {
	l := m.leases[c.Lease]
	switch c.Type {
	case TypeSetVersion, TypeTick:
	case TypeSetLimits:
		m.limits = c.Limits
	case TypeCreateLease:
		if l == nil && m.limits.MaxLeases != 0 && uint64(len(m.leases)) >= m.limits.MaxLeases {
			m.quota = QuotaLeases
			return StatusQuotaExceeded, 0
		}
		if l == nil {
			m.leases[c.Lease] = &modelLease{ttl: c.TTL, deadline: sat(stamp, c.TTL)}
		}
	case TypeRenew:
		for _, id := range c.Leases {
			if l := m.leases[id]; l != nil {
				l.deadline = sat(stamp, l.ttl)
			}
		}
	case TypeRevoke:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		m.remove([]LeaseID{c.Lease})
	case TypeAcquire, TypeAcquireShared:
		shared := c.Type == TypeAcquireShared
		if l == nil && !c.NewLease {
			return StatusLeaseNotFound, 0
		}
		lk := m.locks[c.Name]
		mine, waiting := false, false
		if lk != nil && l != nil {
			mine, waiting = holdsIn(lk.holders, c.Lease) >= 0, waitsIn(lk.queue, c.Lease) >= 0
			if mine && lk.shared != shared || waiting && lk.queue[waitsIn(lk.queue, c.Lease)].shared != shared {
				return StatusModeConflict, 0
			}
		}
		join := shared && lk != nil && !mine && len(lk.queue) == 0 && lk.shared
		if lk != nil && !mine && !join && c.Wait <= 0 {
			return StatusLockHeld, 0
		}
		qlen := 0
		if lk != nil {
			qlen = len(lk.queue)
		}
		if m.quotaHit(c, l, mine || waiting, qlen) {
			return StatusQuotaExceeded, 0
		}
		m.leaseFor(c, l, stamp)
		switch {
		case lk == nil:
			m.locks[c.Name] = &pLock{shared: shared, holders: []pHold{{c.Lease, index, c.Owner}}}
			return StatusOK, index
		case mine:
			return StatusOK, lk.holders[holdsIn(lk.holders, c.Lease)].token
		case join:
			lk.holders = append(lk.holders, pHold{c.Lease, index, c.Owner})
			return StatusOK, index
		}
		lk.queue = queueUp(lk.queue, c, stamp, shared)
		return StatusQueued, 0
	case TypeRelease:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		lk := m.locks[c.Name]
		if lk == nil || holdsIn(lk.holders, c.Lease) < 0 || lk.holders[holdsIn(lk.holders, c.Lease)].token != c.Token {
			return StatusNotHolder, 0
		}
		lk.holders = slices.Delete(lk.holders, holdsIn(lk.holders, c.Lease), holdsIn(lk.holders, c.Lease)+1)
	case TypeDequeue:
		lk := m.locks[c.Name]
		if lk != nil {
			if i := holdsIn(lk.holders, c.Lease); i >= 0 {
				return StatusOK, lk.holders[i].token
			}
			if l != nil {
				lk.queue = dropWait(lk.queue, func(w pWaiter) bool { return w.lease == c.Lease })
			}
		}
		return StatusNotHolder, 0
	case TypeSemAcquire:
		if c.Limit == 0 {
			return StatusInvalid, 0
		}
		if l == nil && !c.NewLease {
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
		qlen := 0
		if sm != nil {
			qlen = len(sm.queue)
		}
		if m.quotaHit(c, l, mine || waiting, qlen) {
			return StatusQuotaExceeded, 0
		}
		m.leaseFor(c, l, stamp)
		switch {
		case sm == nil:
			m.sems[c.Name] = &pSem{limit: c.Limit, permits: []pHold{{c.Lease, index, c.Owner}}}
			return StatusOK, index
		case mine:
			return StatusOK, sm.permits[holdsIn(sm.permits, c.Lease)].token
		case free:
			sm.permits = append(sm.permits, pHold{c.Lease, index, c.Owner})
			return StatusOK, index
		}
		sm.queue = queueUp(sm.queue, c, stamp, false)
		return StatusQueued, 0
	case TypeSemRelease:
		if l == nil {
			return StatusLeaseNotFound, 0
		}
		sm := m.sems[c.Name]
		if sm == nil || holdsIn(sm.permits, c.Lease) < 0 || sm.permits[holdsIn(sm.permits, c.Lease)].token != c.Token {
			return StatusNotHolder, 0
		}
		sm.permits = slices.Delete(sm.permits, holdsIn(sm.permits, c.Lease), holdsIn(sm.permits, c.Lease)+1)
	case TypeSemDequeue:
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
		if l == nil && (!c.NewLease || c.Token != 0) {
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
		waiting, qlen := false, 0
		if el != nil {
			waiting, qlen = l != nil && waitsIn(el.queue, c.Lease) >= 0, len(el.queue)
		}
		if m.quotaHit(c, l, leads || waiting, qlen) {
			return StatusQuotaExceeded, 0
		}
		m.leaseFor(c, l, stamp)
		switch {
		case el == nil:
			m.elections[c.Name] = &pElection{leader: pHold{c.Lease, index, c.Owner}, value: c.Value}
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
		c.Type = TypeRenew
		for _, i := range g.rng.Perm(len(g.ids))[:g.rng.Intn(4)] {
			c.Leases = append(c.Leases, g.ids[i])
		}
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
	for _, name := range g.names {
		v, mk := f.Lock(name), m.locks[name]
		if v.Held != (mk != nil) {
			t.Fatalf("step %d: lock %q held=%v, model %v", index, name, v.Held, mk != nil)
		}
		// Invariant: one exclusive holder, or only shared holders.
		if v.Held && (len(v.Holders) == 0 || !v.Shared && len(v.Holders) != 1) {
			t.Fatalf("step %d: lock %q holders %+v shared=%v", index, name, v.Holders, v.Shared)
		}
		if mk != nil {
			if v.Shared != mk.shared || !slices.Equal(sortHolds(v.Holders), modelHolds(mk.holders)) || !slices.Equal(v.Waiters, waiterIDs(mk.queue)) {
				t.Fatalf("step %d: lock %q = %+v, model %+v", index, name, v, *mk)
			}
		}
		sm, ms := f.Semaphore(name), m.sems[name]
		if (sm.Limit != 0) != (ms != nil) || uint64(len(sm.Permits)) > sm.Limit {
			t.Fatalf("step %d: semaphore %q = %+v, model %v", index, name, sm, ms)
		}
		if ms != nil && (sm.Limit != ms.limit || !slices.Equal(sortHolds(sm.Permits), modelHolds(ms.permits)) || !slices.Equal(sm.Waiters, waiterIDs(ms.queue))) {
			t.Fatalf("step %d: semaphore %q = %+v, model %+v", index, name, sm, *ms)
		}
		el, me := f.Election(name), m.elections[name]
		if el.Elected != (me != nil) {
			t.Fatalf("step %d: election %q elected=%v, model %v", index, name, el.Elected, me != nil)
		}
		if me != nil && (el.Leader != me.leader.lease || el.Token != me.leader.token || el.Owner != me.leader.owner || el.Value != me.value || !slices.Equal(el.Candidates, waiterIDs(me.queue))) {
			t.Fatalf("step %d: election %q = %+v, model %+v", index, name, el, *me)
		}
	}
	for _, id := range g.ids {
		v, ok := f.Lease(id)
		ml := m.leases[id]
		if ok != (ml != nil) || ok && (v.Deadline != ml.deadline || v.TTL != ml.ttl) {
			t.Fatalf("step %d: lease %s = %+v (%v), model %+v", index, id, v, ok, ml)
		}
	}
	checkPrimsConsistent(t, index, f)
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
	for name, lk := range s.locks {
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
			if lk.ro().queue.head != nil && lk.ro().queue.head.shared {
				fail("lock %q held shared with shared waiters at its head", name)
			}
		}
		if _, ok := s.leases[lk.holder].held[name]; !ok {
			fail("holder of %q unknown to its lease", name)
		}
	}
	for name, sm := range s.sems {
		if sm.queue.len > 0 && uint64(sm.permits.len()) < sm.limit {
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
	for name := range s.elections {
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
