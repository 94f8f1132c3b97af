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

// setLimits applies SetLimits: the new quotas replace the old ones.
func (s *state) setLimits(_ uint64, c *Command, _ *Result) {
	s.limits = c.Limits
}

// refuse marks r as refused by quota name and returns true.
func refuse(r *Result, name string) bool {
	r.Status, r.Quota = StatusQuotaExceeded, name
	return true
}

// leaseQuota reports whether creating lease id would break MaxLeases, and refuses r if so.
// A lease that exists already is not created again, so it is never refused.
func (s *state) leaseQuota(id LeaseID, r *Result) bool {
	max := s.limits.MaxLeases
	if max == 0 || s.leases[id] != nil || uint64(len(s.leases)) < max {
		return false
	}
	return refuse(r, QuotaLeases)
}

// acquireQuota reports whether the Acquire c would break a limit, and refuses r if so. It
// runs before the Acquire changes anything; l is the lease (nil when the Acquire creates it)
// and lk the lock (nil when free). Asking again for what the lease already has (the lock it
// holds, or the wait it is in) is never refused: that keeps Acquire idempotent.
func (s *state) acquireQuota(c *Command, l *lease, lk *lock, r *Result) bool {
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
		return refuse(r, QuotaLocksPerLease)
	}
	if max := s.limits.MaxWaitersPerLock; max != 0 && lk != nil && uint64(lk.waiterCount()) >= max {
		return refuse(r, QuotaWaitersPerLock)
	}
	return false
}

// primQuota reports whether a request for a grant of a semaphore or an election would
// break a limit, and refuses r if so: the lock quotas count every primitive (see
// state.leaseCount), and MaxWaitersPerLock bounds every queue. Asking again for what the lease
// already has or waits for (already) is never refused.
func (s *state) primQuota(c *Command, l *lease, already bool, queueLen int, r *Result) bool {
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
		return refuse(r, QuotaLocksPerLease)
	}
	if max := s.limits.MaxWaitersPerLock; max != 0 && uint64(queueLen) >= max {
		return refuse(r, QuotaWaitersPerLock)
	}
	return false
}

// waiterCount returns the number of leases queued for the lock. It is the one place the
// quota code looks at the queue's representation.
func (lk *lock) waiterCount() int { return lk.ro().queue.len }
