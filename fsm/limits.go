package fsm

// Limits are the quotas the state machine enforces, set by a SetLimits entry. Each is a
// count; zero means unlimited, which is also the state of a cluster that never set any.
// Lowering a limit below what is in use takes nothing away: it only refuses what would
// add to it.
type Limits struct {
	// MaxLeases bounds the number of live leases (CreateLease, Acquire with NewLease).
	MaxLeases uint64
	// MaxLocksPerLease bounds how many locks one lease may hold and wait for, together;
	// semaphore permits and election leaderships and candidacies count as locks.
	MaxLocksPerLease uint64
	// MaxWaitersPerLock bounds the queue of one lock, and that of every semaphore and
	// election.
	MaxWaitersPerLock uint64

	// The limits of protocol version 5 (quotas.go). A SetLimits entry carries them only
	// once the cluster runs version 5; before, they stay zero.

	// MaxLocks bounds the grants held in the whole cluster: locks (one per holder of a
	// lock held shared), semaphore permits and leaderships.
	MaxLocks uint64
	// MaxWaiters bounds the waits in the whole cluster: for locks (one per lock of a
	// waiting lockset), for permits, and candidacies.
	MaxWaiters uint64
	// PerIdentity are the quotas of an identity whose token and policies set none.
	PerIdentity Quotas
}

// v4 returns the limits that a SetLimits entry of version 4 and before carries: the
// three of version 2.
func (l Limits) v4() Limits {
	return Limits{MaxLeases: l.MaxLeases, MaxLocksPerLease: l.MaxLocksPerLease, MaxWaitersPerLock: l.MaxWaitersPerLock}
}

// ForVersion returns the limits as a cluster at protocol version v keeps them: before
// version 5, without the limits of version 5. The leader compares its configured limits
// with the state's through it, so that it proposes only what the cluster can hold.
func (l Limits) ForVersion(v uint64) Limits {
	if v < 5 {
		return l.v4()
	}
	return l
}

// Names of the limits, as Result.Quota reports them, so that the cluster layer can say
// which limit a refused command hit.
const (
	QuotaLeases         = "max_leases"
	QuotaLocksPerLease  = "max_locks_per_lease"
	QuotaWaitersPerLock = "max_waiters_per_lock"
)

// Limits returns the quotas in force.
func (f *FSM) Limits() Limits {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.limits
}

// setLimits applies SetLimits: the new quotas replace the old ones. Before version 5 the
// limits of version 5 are not kept, as a node of version 4 would not read them.
func (s *state) setLimits(_ uint64, c *Command, _ *Result) {
	s.limits = c.Limits.ForVersion(s.version)
}

// refuse marks r as refused by quota name, whose limit is at used, and returns true.
func refuse(r *Result, name string, used int, limit uint64) bool {
	r.Status, r.Quota, r.QuotaUsed, r.QuotaLimit = StatusQuotaExceeded, name, uint64(used), limit
	return true
}

// leaseQuota reports whether creating lease id would break MaxLeases, and refuses r if so.
// A lease that exists already is not created again, so it is never refused.
func (s *state) leaseQuota(id LeaseID, r *Result) bool {
	max := s.limits.MaxLeases
	if max == 0 || s.leases[id] != nil || uint64(len(s.leases)) < max {
		return false
	}
	return refuse(r, QuotaLeases, len(s.leases), max)
}

// acquireQuota reports whether the Acquire c would break a limit, and refuses r if so. It
// runs before the Acquire changes anything; l is the lease (nil when the Acquire creates it)
// and lk the lock (nil when free); grant tells whether the Acquire is granted at once
// (otherwise it waits). Asking again for what the lease already has (the lock it holds, or
// the wait it is in) is never refused: that keeps Acquire idempotent.
func (s *state) acquireQuota(c *Command, l *lease, lk *lock, grant bool, r *Result) bool {
	if l == nil && s.leaseQuota(c.Lease, r) {
		return true
	}
	var held, waiting bool
	var count int
	if l != nil {
		_, held = l.held[c.Name]
		_, waiting = l.waiting[c.Name]
		count = s.leaseCount(l) // every primitive counts
	}
	if held || waiting {
		return false
	}
	if max := s.limits.MaxLocksPerLease; max != 0 && uint64(count) >= max {
		return refuse(r, QuotaLocksPerLease, count, max)
	}
	if max := s.limits.MaxWaitersPerLock; max != 0 && lk != nil && uint64(lk.waiterCount()) >= max {
		return refuse(r, QuotaWaitersPerLock, lk.waiterCount(), max)
	}
	return s.additionQuota(c, l, grant, 1, r)
}

// additionQuota checks the quotas of version 5 for a request that, with lease l (nil: it
// creates it), adds n grants (grant) or n waits (otherwise).
func (s *state) additionQuota(c *Command, l *lease, grant bool, n int, r *Result) bool {
	locks, waits := 0, n
	if grant {
		locks, waits = n, 0
	}
	return s.identityQuota(s.identityOf(c, l), newLeases(l), locks, waits, r)
}

// primQuota reports whether a request for a grant of a semaphore or an election would
// break a limit, and refuses r if so: the lock quotas count every primitive (see
// state.leaseCount), and MaxWaitersPerLock bounds every queue. Asking again for what the lease
// already has or waits for (already) is never refused; grant tells whether the request is
// granted at once (otherwise it waits).
func (s *state) primQuota(c *Command, l *lease, already, grant bool, queueLen int, r *Result) bool {
	if l == nil && s.leaseQuota(c.Lease, r) {
		return true
	}
	if already {
		return false
	}
	count := 0
	if l != nil {
		count = s.leaseCount(l)
	}
	if max := s.limits.MaxLocksPerLease; max != 0 && uint64(count) >= max {
		return refuse(r, QuotaLocksPerLease, count, max)
	}
	if max := s.limits.MaxWaitersPerLock; max != 0 && uint64(queueLen) >= max {
		return refuse(r, QuotaWaitersPerLock, queueLen, max)
	}
	return s.additionQuota(c, l, grant, 1, r)
}

// waiterCount returns the number of leases queued for the lock. It is the one place the
// quota code looks at the queue's representation.
func (lk *lock) waiterCount() int { return lk.ro().queue.len }
