package fsm

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
)

// model is the reference the state machine is checked against: the same rules written as
// plainly as possible, with no heaps, no indexes and no cleverness.
type model struct {
	time    int64
	leases  map[LeaseID]*modelLease
	locks   map[string]*modelLock
	version uint64
	limits  Limits
	quota   string // the limit the last command hit
	acl     modelACL
}

type modelLease struct{ ttl, deadline int64 }

type modelLock struct {
	holder LeaseID
	token  uint64
	owner  string
	queue  []modelWaiter
}

type modelWaiter struct {
	lease    LeaseID
	owner    string
	deadline int64
}

func newModel() *model {
	return &model{leases: map[LeaseID]*modelLease{}, locks: map[string]*modelLock{}, version: 1, acl: newModelACL()}
}

// handover gives lock name to its first waiter at index, or frees it.
func (m *model) handover(index uint64, name string) {
	lk := m.locks[name]
	if len(lk.queue) == 0 {
		delete(m.locks, name)
		return
	}
	w := lk.queue[0]
	lk.queue = lk.queue[1:]
	lk.holder, lk.token, lk.owner = w.lease, index, w.owner
}

func (m *model) dropWaiter(name string, id LeaseID) {
	lk := m.locks[name]
	lk.queue = slices.DeleteFunc(lk.queue, func(w modelWaiter) bool { return w.lease == id })
}

func (m *model) removeLeases(index uint64, ids []LeaseID) {
	for _, id := range ids {
		delete(m.leases, id)
		for name := range m.locks {
			m.dropWaiter(name, id)
		}
	}
	names := m.lockNames()
	for _, id := range ids {
		for _, name := range names {
			if lk := m.locks[name]; lk != nil && lk.holder == id {
				m.handover(index, name)
			}
		}
	}
}

func (m *model) lockNames() []string {
	var names []string
	for n := range m.locks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// held and waiting count the locks lease id holds and waits for.
func (m *model) counts(id LeaseID) (held, waiting int) {
	for _, lk := range m.locks {
		if lk.holder == id {
			held++
		}
		for _, w := range lk.queue {
			if w.lease == id {
				waiting++
			}
		}
	}
	return held, waiting
}

// sat is a+b, or MaxInt64 when that overflows.
func sat(a, b int64) int64 {
	if a+b < a {
		return math.MaxInt64
	}
	return a + b
}

func (m *model) apply(index uint64, c *Command) Status {
	m.quota = ""
	if c.Type == TypeSetVersion && c.Version > Version {
		return StatusInvalid // refused before anything, time included
	}
	stamp := max(m.time, c.Now)
	if m.version >= 2 {
		m.time = max(m.time, min(c.Now, sat(m.time, MaxTimeStep)))
	} else {
		m.time = stamp
	}
	for _, lk := range m.locks {
		lk.queue = slices.DeleteFunc(lk.queue, func(w modelWaiter) bool { return w.deadline <= m.time })
	}
	var dead []LeaseID
	for id, l := range m.leases {
		if l.deadline <= m.time {
			dead = append(dead, id)
		}
	}
	m.removeLeases(index, dead)

	tooManyLeases := func(id LeaseID) bool {
		if m.leases[id] == nil && m.limits.MaxLeases != 0 && uint64(len(m.leases)) >= m.limits.MaxLeases {
			m.quota = QuotaLeases
			return true
		}
		return false
	}
	switch c.Type {
	case TypeSetVersion:
		m.version = max(m.version, c.Version)
	case TypeSetLimits:
		if m.version < 2 {
			return StatusInvalid
		}
		m.limits = c.Limits
	case TypeACLBootstrap, TypeACLSetPolicy, TypeACLDeletePolicy, TypeACLSetToken, TypeACLDeleteToken:
		if m.version < 2 {
			return StatusInvalid
		}
		return m.acl.apply(c)
	case TypeCreateLease:
		if tooManyLeases(c.Lease) {
			return StatusQuotaExceeded
		}
		if m.leases[c.Lease] == nil {
			m.leases[c.Lease] = &modelLease{ttl: c.TTL, deadline: sat(stamp, c.TTL)}
		}
	case TypeRenew:
		for _, id := range c.Leases {
			if l := m.leases[id]; l != nil {
				l.deadline = sat(stamp, l.ttl)
			}
		}
	case TypeRevoke:
		if m.leases[c.Lease] == nil {
			return StatusLeaseNotFound
		}
		m.removeLeases(index, []LeaseID{c.Lease})
	case TypeAcquire:
		l := m.leases[c.Lease]
		if l == nil && !c.NewLease {
			return StatusLeaseNotFound
		}
		lk := m.locks[c.Name]
		if lk != nil && lk.holder != c.Lease && c.Wait <= 0 {
			return StatusLockHeld
		}
		if l == nil && tooManyLeases(c.Lease) {
			return StatusQuotaExceeded
		}
		queued := lk != nil && slices.ContainsFunc(lk.queue, func(w modelWaiter) bool { return w.lease == c.Lease })
		if !queued && (lk == nil || lk.holder != c.Lease) {
			held, waiting := m.counts(c.Lease)
			if max := m.limits.MaxLocksPerLease; max != 0 && uint64(held+waiting) >= max {
				m.quota = QuotaLocksPerLease
				return StatusQuotaExceeded
			}
			if max := m.limits.MaxWaitersPerLock; max != 0 && lk != nil && uint64(len(lk.queue)) >= max {
				m.quota = QuotaWaitersPerLock
				return StatusQuotaExceeded
			}
		}
		if l == nil {
			l = &modelLease{ttl: c.TTL}
			m.leases[c.Lease] = l
		}
		l.deadline = sat(stamp, l.ttl)
		switch {
		case lk == nil:
			m.locks[c.Name] = &modelLock{holder: c.Lease, token: index, owner: c.Owner}
		case lk.holder == c.Lease:
		default:
			i := slices.IndexFunc(lk.queue, func(w modelWaiter) bool { return w.lease == c.Lease })
			if i < 0 {
				lk.queue = append(lk.queue, modelWaiter{lease: c.Lease, owner: c.Owner, deadline: sat(stamp, c.Wait)})
			} else {
				lk.queue[i].deadline = sat(stamp, c.Wait)
			}
			return StatusQueued
		}
	case TypeRelease:
		lk := m.locks[c.Name]
		if m.leases[c.Lease] == nil {
			return StatusLeaseNotFound
		}
		if lk == nil || lk.holder != c.Lease || lk.token != c.Token {
			return StatusNotHolder
		}
		m.handover(index, c.Name)
	case TypeDequeue:
		lk := m.locks[c.Name]
		if lk != nil && lk.holder == c.Lease {
			return StatusOK
		}
		if lk != nil {
			m.dropWaiter(c.Name, c.Lease)
		}
		return StatusNotHolder
	}
	return StatusOK
}

// gen draws random commands over a small universe of leases and locks, so that
// contention, queues, expiry and handover happen often.
type gen struct {
	rng    *rand.Rand
	ids    []LeaseID
	names  []string
	now    int64
	tokens func(name string) uint64 // the current token of a lock, to release it
	// v2 is set once the generator proposed SetVersion 2; from then on it also writes
	// poison Now values, which at version 1 would end cluster time for the rest of the run.
	v2 bool
	// startV2 makes the first command SetVersion 2, so that the whole run is at version 2.
	startV2 bool
	// acl is the universe of ACL commands, and aclRate how many of every 1000 commands are
	// ACL commands once the generator has proposed version 2 (a few in 1000 before, which
	// the state machine refuses).
	acl     aclUniverse
	aclRate int
}

// someLeases returns up to three of ids, in random order: the leases of a Renew.
func someLeases(rng *rand.Rand, ids []LeaseID) []LeaseID {
	var some []LeaseID
	for _, i := range rng.Perm(len(ids))[:rng.Intn(4)] {
		some = append(some, ids[i])
	}
	return some
}

func newGen(seed int64, tokens func(string) uint64) *gen {
	g := &gen{rng: rand.New(rand.NewSource(seed)), tokens: tokens, acl: newACLUniverse(), aclRate: 60}
	for i := 0; i < 6; i++ {
		var id LeaseID
		id[0], id[15] = byte(i+1), byte(0xA0+i)
		g.ids = append(g.ids, id)
	}
	g.names = []string{"a", "accounts/A", "accounts/B", "z/\u00e9"}
	return g
}

func (g *gen) next() Command {
	g.now += int64(g.rng.Intn(250))
	c := Command{Now: g.now}
	if g.startV2 && !g.v2 {
		g.v2 = true
		c.Type, c.Version = TypeSetVersion, 2
		return c
	}
	if g.rng.Intn(8) == 0 {
		c.Now -= int64(g.rng.Intn(200)) // proposals may commit out of time order
	}
	id := g.ids[g.rng.Intn(len(g.ids))]
	name := g.names[g.rng.Intn(len(g.names))]
	if g.rng.Intn(200) == 0 {
		g.now += 30 * hour // a leader idle for more than a day
		c.Now = g.now
	}
	if g.v2 && g.rng.Intn(300) == 0 {
		// A poison Now: cluster time moves one step; the next leader's clock starts there.
		c.Now = math.MaxInt64 - int64(g.rng.Intn(2))*int64(g.rng.Intn(1<<30))
		g.now += MaxTimeStep
	}
	switch op := g.rng.Intn(1000); {
	case op < 1:
		// Version+1 is refused. This model is the version 2 rules; version 3 (deadlock
		// detection, locksets, maximum holds) has its own (deadlock_model_test.go).
		c.Type, c.Version = TypeSetVersion, []uint64{2, Version + 1}[g.rng.Intn(2)]
		g.v2 = g.v2 || c.Version == 2
		return c
	case op < 10:
		c.Type = TypeSetLimits
		// Each limit is off half the time, else small enough to be hit in a universe of six
		// leases and four locks.
		for _, p := range []*uint64{&c.Limits.MaxLeases, &c.Limits.MaxLocksPerLease, &c.Limits.MaxWaitersPerLock} {
			if g.rng.Intn(2) == 0 {
				*p = uint64(1 + g.rng.Intn(4))
			}
		}
		c.Limits.MaxWaitersPerLock = min(c.Limits.MaxWaitersPerLock, 2)
		return c
	case op < 20:
		c.Type, c.Node.ID, c.Version = TypeNodeVersion, fmt.Sprintf("n%d", g.rng.Intn(3)), uint64(1+g.rng.Intn(2))
		return c
	case g.v2 && op < 20+g.aclRate, !g.v2 && op < 22:
		g.nextACL(&c)
		return c
	}
	huge := g.rng.Intn(200) == 0 // a wait or TTL whose deadline would overflow
	switch op := g.rng.Intn(100); {
	case op < 10:
		c.Type, c.Lease, c.TTL = TypeCreateLease, id, int64(500+g.rng.Intn(1500))
	case op < 20:
		c.Type, c.Leases = TypeRenew, someLeases(g.rng, g.ids)
	case op < 25:
		c.Type, c.Lease = TypeRevoke, id
	case op < 60:
		c.Type, c.Lease, c.Name = TypeAcquire, id, name
		c.Owner = fmt.Sprintf("w%d", g.rng.Intn(3))
		if g.rng.Intn(2) == 0 {
			c.Wait = int64(g.rng.Intn(1500))
		}
		if g.rng.Intn(3) == 0 {
			c.NewLease, c.TTL = true, int64(500+g.rng.Intn(1500))
		}
	case op < 80:
		c.Type, c.Lease, c.Name, c.Token = TypeRelease, id, name, g.tokens(name)
		if g.rng.Intn(5) == 0 {
			c.Token-- // a stale token
		}
	case op < 85:
		c.Type, c.Lease, c.Name = TypeDequeue, id, name
	default:
		c.Type = TypeTick
	}
	if huge && c.Type == TypeAcquire {
		c.Wait = math.MaxInt64
		if c.NewLease {
			c.TTL = math.MaxInt64 - int64(g.rng.Intn(1000))
		}
	}
	return c
}
