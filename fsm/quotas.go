package fsm

import (
	"bytes"
	"sort"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Quotas per identity (protocol version 5).
//
// A lock service is shared: one tenant must not be able to fill the replicated state, which
// every node holds in memory, nor take the whole of a cluster-wide quota. So from version 5
// every lease is charged to an identity, the ACL accessor that created it (lease.creator):
// its leases, the grants it holds (locks, each shared hold of a lock, semaphore permits,
// leaderships) and its waits (for a lock, one per lock of a waiting lockset, for a permit,
// candidacies). A command that would add to an identity's use past its quota is refused
// (StatusQuotaExceeded, Result.Quota names the quota, QuotaUsed and QuotaLimit say how far
// it is) and changes nothing but time, like every refusal. Use already above a quota that
// was lowered is kept: only additions are refused. Asking again for what a lease already
// has (a retried acquire with the same request_id, a re-issued wait) adds nothing and is
// never refused.
//
// The use is derived state: counted as grants and waits come and go (the took, gave,
// queued and unqueued helpers below are the only code that changes a lease's sets), never
// written to a snapshot, and counted again from the restored leases (recount).
//
// Where an identity's quotas come from, for each of the three separately: the token's own
// quota when it sets one; otherwise the largest that any of its policies sets (policies
// grant, so the most generous one wins, as the highest access does); otherwise the
// cluster's default for identities (Limits.PerIdentity, set from serve's flags). The
// identity of callers without a token (CallerAnonymous) takes the quotas of the policy
// named ACLPolicyAnonymous, or the defaults. Leases without a creator (ACLs off, or made
// before version 3) belong to no identity: only the cluster-wide limits bound them, so
// with ACLs off the cluster's caps are the one identity's quotas.

// Quotas are the per-identity quotas: how many leases, grants and waits one identity may
// have at once. Zero means not set: the next source in order decides (see above).
type Quotas struct {
	MaxLeases  uint64
	MaxLocks   uint64
	MaxWaiters uint64
}

// IsZero reports whether no quota is set.
func (q Quotas) IsZero() bool { return q == Quotas{} }

// over returns q with every quota it leaves unset taken from d.
func (q Quotas) over(d Quotas) Quotas {
	if q.MaxLeases == 0 {
		q.MaxLeases = d.MaxLeases
	}
	if q.MaxLocks == 0 {
		q.MaxLocks = d.MaxLocks
	}
	if q.MaxWaiters == 0 {
		q.MaxWaiters = d.MaxWaiters
	}
	return q
}

// widest returns, for each quota, the larger of a and b: a token with several policies
// gets the most generous quota any of them sets.
func widest(a, b Quotas) Quotas {
	return Quotas{MaxLeases: max(a.MaxLeases, b.MaxLeases), MaxLocks: max(a.MaxLocks, b.MaxLocks), MaxWaiters: max(a.MaxWaiters, b.MaxWaiters)}
}

// The defaults of serve's flags for the limits of version 5. An identity's defaults keep one
// tenant's state to about 150 MiB per node with the longest names the API allows (about
// 2.9 KB a lock with 500-byte names), far below the cluster-wide limits, so that with ACLs
// on no identity reaches those with the defaults.
const (
	DefaultMaxLocks   = 2_000_000
	DefaultMaxWaiters = 1_000_000
)

// DefaultPerIdentity are the default quotas of an identity (serve's flags).
var DefaultPerIdentity = Quotas{MaxLeases: 10_000, MaxLocks: 50_000, MaxWaiters: 10_000}

// Names of the quotas of version 5, as Result.Quota reports them.
const (
	// QuotaLocks bounds the grants held in the whole cluster.
	QuotaLocks = "max_locks"
	// QuotaWaiters bounds the waits in the whole cluster.
	QuotaWaiters = "max_waiters"
	// QuotaIdentityLeases, QuotaIdentityLocks and QuotaIdentityWaiters bound one
	// identity's leases, grants and waits.
	QuotaIdentityLeases  = "max_leases_per_identity"
	QuotaIdentityLocks   = "max_locks_per_identity"
	QuotaIdentityWaiters = "max_waiters_per_identity"
)

// identityUse is one identity's use of the cluster, or the whole cluster's (state.total).
type identityUse struct {
	leases, locks, waits int
	// ids are the identity's leases in ID order (not for the identity ""), where the sweep
	// finds a deleted token's leases (sweep.go): derived, like the counts.
	ids *btree.BTreeG[LeaseID]
}

// leaseIDLess orders lease IDs as their bytes.
func leaseIDLess(a, b LeaseID) bool { return bytes.Compare(a[:], b[:]) < 0 }

// useOf returns the use record of identity id, creating it on first use. Records are kept
// while the identity has a lease (see detach).
func (s *state) useOf(id string) *identityUse {
	u := s.use[id]
	if u == nil {
		u = &identityUse{}
		s.use[id] = u
	}
	return u
}

// attach charges lease l, which has just entered the lease table, to its identity.
func (s *state) attach(l *lease) {
	l.use = s.useOf(l.creator)
	l.use.leases++
	s.total.leases++
	if l.creator != "" {
		if l.use.ids == nil {
			l.use.ids = btree.NewG(16, leaseIDLess)
		}
		l.use.ids.ReplaceOrInsert(l.id)
	}
	locks, waits := leaseSets(l)
	l.use.locks += locks
	l.use.waits += waits
	s.total.locks += locks
	s.total.waits += waits
}

// detach takes lease l, which leaves the lease table, off its identity's use, with
// whatever it still holds (an ended lease's grants are dropped after it has left the
// table). From then on its sets change without being counted.
func (s *state) detach(l *lease) {
	if l.use == nil {
		return
	}
	locks, waits := leaseSets(l)
	l.use.leases--
	l.use.locks -= locks
	l.use.waits -= waits
	s.total.leases--
	s.total.locks -= locks
	s.total.waits -= waits
	if l.use.ids != nil {
		l.use.ids.Delete(l.id)
	}
	if l.use.leases == 0 && l.use.locks == 0 && l.use.waits == 0 {
		delete(s.use, l.creator)
	}
	l.use = nil
}

// leaseSets returns how many grants and waits lease l has, over every primitive.
func leaseSets(l *lease) (locks, waits int) {
	locks, waits = len(l.held), len(l.waiting)
	for i := range l.prims {
		locks += len(l.prims[i].grants)
		waits += len(l.prims[i].waits)
	}
	return locks, waits
}

// took adds name to m, one of lease l's sets of grants (its locks, permits or
// leaderships), and counts it.
func (s *state) took(l *lease, m *map[string]struct{}, name string) {
	if _, ok := (*m)[name]; ok {
		return
	}
	addName(m, name)
	s.count(l, 1, 0)
}

// gave takes name out of m, one of lease l's sets of grants, and counts it.
func (s *state) gave(l *lease, m map[string]struct{}, name string) {
	if _, ok := m[name]; !ok {
		return
	}
	delete(m, name)
	s.count(l, -1, 0)
}

// queued records in m, one of lease l's sets of waits, that it waits for name as w, and
// counts it.
func (s *state) queued(l *lease, m *map[string]*waiter, name string, w *waiter) {
	if _, ok := (*m)[name]; !ok {
		s.count(l, 0, 1)
	}
	addWaiter(m, name, w)
}

// unqueued takes name out of m, one of lease l's sets of waits, and counts it.
func (s *state) unqueued(l *lease, m map[string]*waiter, name string) {
	if _, ok := m[name]; !ok {
		return
	}
	delete(m, name)
	s.count(l, 0, -1)
}

// count adds to lease l's identity's use and the cluster's, unless l has left the table.
func (s *state) count(l *lease, locks, waits int) {
	if l.use == nil {
		return
	}
	l.use.locks += locks
	l.use.waits += waits
	s.total.locks += locks
	s.total.waits += waits
}

// recount counts every lease's use again from the lease table: after a snapshot is
// decoded, whose sets were filled without counting.
func (s *state) recount() {
	s.use = make(map[string]*identityUse)
	s.total = identityUse{}
	for _, l := range s.leases {
		l.use = nil
		s.attach(l)
	}
}

// quotasOf returns the quotas of identity id as the state resolves them: see the package
// comment above. The identity without a name (leases without a creator) has none: only
// the cluster-wide limits bound it.
func (s *state) quotasOf(id string) Quotas {
	var q Quotas
	switch id {
	case "":
		return Quotas{}
	case CallerAnonymous:
		if p := s.acl.policies[ACLPolicyAnonymous]; p != nil {
			q = p.quotas
		}
	default:
		if t := s.acl.tokens[id]; t != nil {
			q = t.limits
		}
	}
	return q.over(s.limits.PerIdentity)
}

// quotaCheck is a refusal in the making: the first quota, in the order checked, that an
// addition breaks.
type quotaCheck struct {
	r    *Result
	done bool
}

// check refuses the command when adding add to used breaks limit (0: none), naming quota.
func (qc *quotaCheck) check(quota string, limit uint64, used, add int) {
	if qc.done || limit == 0 || add <= 0 || uint64(used+add) <= limit {
		return
	}
	qc.r.Status, qc.r.Quota = StatusQuotaExceeded, quota
	qc.r.QuotaUsed, qc.r.QuotaLimit = uint64(max(used, 0)), limit
	qc.done = true
}

// identityQuota reports whether a command of identity id that adds leases, grants (locks)
// and waits would break a version 5 quota, cluster-wide or of the identity, and refuses r
// if so. Before version 5 it never refuses: the older quotas are checked by their own
// code (limits.go), which runs first.
func (s *state) identityQuota(id string, leases, locks, waits int, r *Result) bool {
	if s.version < 5 || mutant.Is("identity-quota-ignored") {
		return false
	}
	qc := quotaCheck{r: r}
	qc.check(QuotaLocks, s.limits.MaxLocks, s.total.locks, locks)
	qc.check(QuotaWaiters, s.limits.MaxWaiters, s.total.waits, waits)
	if id != "" {
		q, u := s.quotasOf(id), s.use[id]
		if u == nil {
			u = &identityUse{}
		}
		qc.check(QuotaIdentityLeases, q.MaxLeases, u.leases, leases)
		qc.check(QuotaIdentityLocks, q.MaxLocks, u.locks, locks)
		qc.check(QuotaIdentityWaiters, q.MaxWaiters, u.waits, waits)
	}
	if qc.done {
		r.QuotaIdentity = id
	}
	return qc.done
}

// identityOf returns the identity a request's additions are charged to: the lease's
// creator when the lease exists, the request's caller when the request creates it.
func (s *state) identityOf(c *Command, l *lease) string {
	if l != nil {
		return l.creator
	}
	if s.version < 3 {
		return "" // the creator is not recorded before version 3 (addLease)
	}
	return c.Creator
}

// newLeases is 1 when request c creates its lease (l is nil), 0 otherwise.
func newLeases(l *lease) int {
	if l == nil {
		return 1
	}
	return 0
}

// UsageView is one identity's use of the cluster beside its quotas, as an operator or the
// identity itself reads it.
type UsageView struct {
	// Identity is the ACL accessor, CallerAnonymous, or "" for leases without a creator
	// (ACLs off): Quotas is then the cluster's limits.
	Identity string
	Leases   uint64
	Locks    uint64
	Waiters  uint64
	// Quotas are the identity's quotas as resolved now (0: unlimited).
	Quotas Quotas
}

// Usage returns identity id's use and quotas. An identity with nothing in use reads as
// zeros with its quotas. For "", the identity of leases without a creator, the quotas are
// the cluster-wide limits.
func (f *FSM) Usage(id string) UsageView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.usageView(id)
}

func (s *state) usageView(id string) UsageView {
	v := UsageView{Identity: id, Quotas: s.quotasOf(id)}
	if id == "" {
		v.Quotas = Quotas{MaxLeases: s.limits.MaxLeases, MaxLocks: s.limits.MaxLocks, MaxWaiters: s.limits.MaxWaiters}
	}
	if u := s.use[id]; u != nil {
		v.Leases, v.Locks, v.Waiters = uint64(u.leases), uint64(u.locks), uint64(u.waits)
	}
	return v
}

// Usages returns the use of every identity that has a lease, by identity.
func (f *FSM) Usages() []UsageView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ids := make([]string, 0, len(f.s.use))
	for id := range f.s.use {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]UsageView, 0, len(ids))
	for _, id := range ids {
		out = append(out, f.s.usageView(id))
	}
	return out
}

// Totals returns the whole cluster's use: leases, grants held and waits.
func (f *FSM) Totals() (leases, locks, waiters uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return uint64(f.s.total.leases), uint64(f.s.total.locks), uint64(f.s.total.waits)
}
