package fsm

// The reference model's part of the quotas of version 5 (quotas.go), written as plainly as
// possible: an identity's use is counted by scanning every lease, lock, semaphore and
// election, and its quotas are resolved from the model's ACL each time they are read.

// modelUse counts the leases, grants and waits of the leases that mine picks.
func (m *pmodel) modelUse(mine func(LeaseID) bool) (leases, locks, waits int) {
	for id := range m.leases {
		if mine(id) {
			leases++
		}
	}
	count := func(hs []pHold, q []pWaiter) {
		for _, h := range hs {
			if mine(h.lease) {
				locks++
			}
		}
		for _, w := range q {
			if mine(w.lease) {
				waits++
			}
		}
	}
	for _, lk := range m.locks {
		count(lk.holders, lk.queue)
	}
	for _, sm := range m.sems {
		count(sm.permits, sm.queue)
	}
	for _, el := range m.elections {
		var hs []pHold
		if el.leader.lease != (LeaseID{}) {
			hs = []pHold{el.leader}
		}
		count(hs, el.queue)
	}
	return leases, locks, waits
}

// modelQuotas resolves identity id's quotas: the token's own, else the largest any of
// its policies sets, else the cluster's default; the anonymous caller's from the policy
// named anonymous; none for the identity without a name.
func (m *pmodel) modelQuotas(id string) Quotas {
	if id == "" {
		return Quotas{}
	}
	var own, fromPolicies Quotas
	names := []string{}
	if id == CallerAnonymous {
		names = append(names, ACLPolicyAnonymous)
	} else if t, ok := m.acl.tokens[id]; ok {
		own, names = t.quotas, t.policies
	}
	for _, n := range names {
		p, ok := m.acl.policies[n]
		if !ok {
			continue
		}
		fromPolicies.MaxLeases = max(fromPolicies.MaxLeases, p.quotas.MaxLeases)
		fromPolicies.MaxLocks = max(fromPolicies.MaxLocks, p.quotas.MaxLocks)
		fromPolicies.MaxWaiters = max(fromPolicies.MaxWaiters, p.quotas.MaxWaiters)
	}
	pick := func(vals ...uint64) uint64 {
		for _, v := range vals {
			if v != 0 {
				return v
			}
		}
		return 0
	}
	d := m.limits.PerIdentity
	return Quotas{
		MaxLeases:  pick(own.MaxLeases, fromPolicies.MaxLeases, d.MaxLeases),
		MaxLocks:   pick(own.MaxLocks, fromPolicies.MaxLocks, d.MaxLocks),
		MaxWaiters: pick(own.MaxWaiters, fromPolicies.MaxWaiters, d.MaxWaiters),
	}
}

// identityHit checks the quotas of version 5 for a request of the identity whose lease is
// lease (creating it when create) that adds grants (grant) or waits; it records the quota
// hit in m.quota.
func (m *pmodel) identityHit(c *Command, create, grant bool, n int) bool {
	if m.version < 5 {
		return false
	}
	id := m.creators[c.Lease]
	if create {
		id = c.Creator
	}
	locks, waits := 0, n
	if grant {
		locks, waits = n, 0
	}
	_, allLocks, allWaits := m.modelUse(func(LeaseID) bool { return true })
	l, hl, hw := m.modelUse(func(x LeaseID) bool { return m.creators[x] == id })
	q := m.modelQuotas(id)
	newLease := 0
	if create {
		newLease = 1
	}
	for _, chk := range []struct {
		quota      string
		limit      uint64
		used, plus int
		applies    bool
	}{
		{QuotaLocks, m.limits.MaxLocks, allLocks, locks, true},
		{QuotaWaiters, m.limits.MaxWaiters, allWaits, waits, true},
		{QuotaIdentityLeases, q.MaxLeases, l, newLease, id != ""},
		{QuotaIdentityLocks, q.MaxLocks, hl, locks, id != ""},
		{QuotaIdentityWaiters, q.MaxWaiters, hw, waits, id != ""},
	} {
		if chk.applies && chk.limit != 0 && chk.plus > 0 && uint64(chk.used+chk.plus) > chk.limit {
			m.quota = chk.quota
			return true
		}
	}
	return false
}
