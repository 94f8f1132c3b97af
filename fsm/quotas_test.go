package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// quotaWorld is ownerWorld at protocol version 5: tokens aa and bb (lock rights) and ad
// (admin), the anonymous caller, and the node itself.
func quotaWorld(t *testing.T) *ownerWorld {
	w := newOwnerWorld(t)
	w.must(StatusOK, Command{Type: TypeSetVersion, Version: 5})
	return w
}

// refused checks that c is refused by quota with the use and limit given, and changes
// nothing but what a tick at the same index changes.
func (w *ownerWorld) refused(c Command, quota string, used, limit uint64, identity string) {
	w.t.Helper()
	before := w.f.SnapshotBytes()
	r := w.apply(c)
	if r.Status != StatusQuotaExceeded || r.Quota != quota || r.QuotaUsed != used || r.QuotaLimit != limit || r.QuotaIdentity != identity {
		w.t.Fatalf("%s by %q: %s %q used %d limit %d identity %q; want quota_exceeded %q used %d limit %d identity %q",
			c.Type, c.Creator, r.Status, r.Quota, r.QuotaUsed, r.QuotaLimit, r.QuotaIdentity, quota, used, limit, identity)
	}
	tick := New(nil)
	if err := restoreFrom(tick, before); err != nil {
		w.t.Fatal(err)
	}
	tick.ApplyCommand(w.index, &Command{Type: TypeTick, Now: w.now})
	if !bytes.Equal(tick.SnapshotBytes(), w.f.SnapshotBytes()) {
		w.t.Fatalf("the refused %s changed more than a tick does", c.Type)
	}
}

func (w *ownerWorld) usage(id string) UsageView {
	w.t.Helper()
	return w.f.Usage(id)
}

// One identity at its quotas is refused each addition, with its use and limit; another
// identity, the node itself and the admin go on; asking again for what a lease has is
// free; lowering a quota takes nothing away; deleting the token frees its use.
func TestQuotas_PerIdentityRefusesOnlyAdditions(t *testing.T) {
	w := quotaWorld(t)
	w.must(StatusOK, Command{Type: TypeSetLimits, Limits: Limits{PerIdentity: Quotas{MaxLeases: 2, MaxLocks: 3, MaxWaiters: 1}}})
	a1, a2, a3 := leaseN(1), leaseN(2), leaseN(3)
	acq := func(id LeaseID, name, caller string, wait int64) Command {
		return Command{Type: TypeAcquire, Lease: id, NewLease: true, TTL: 60_000, Name: name, Wait: wait, Creator: caller}
	}
	w.must(StatusOK, acq(a1, "a/1", "aa", 0))
	w.must(StatusOK, acq(a1, "a/2", "aa", 0))
	w.must(StatusOK, acq(a2, "a/3", "aa", 0))
	// The lease quota: a third lease, by create or by acquire.
	w.refused(Command{Type: TypeCreateLease, Lease: a3, TTL: 60_000, Creator: "aa"}, QuotaIdentityLeases, 2, 2, "aa")
	w.refused(acq(a3, "a/9", "aa", 0), QuotaIdentityLeases, 2, 2, "aa")
	// The grant quota counts every primitive: a permit, a leadership, a lockset's locks.
	w.refused(acq(a1, "a/4", "aa", 0), QuotaIdentityLocks, 3, 3, "aa")
	w.refused(Command{Type: TypeSemAcquire, Lease: a1, Name: "s", Limit: 2, Creator: "aa"}, QuotaIdentityLocks, 3, 3, "aa")
	w.refused(Command{Type: TypeCampaign, Lease: a1, Name: "e", Creator: "aa"}, QuotaIdentityLocks, 3, 3, "aa")
	w.refused(Command{Type: TypeLockSet, Lease: a1, Names: []string{"a/5", "a/6"}, Creator: "aa"}, QuotaIdentityLocks, 3, 3, "aa")
	// Asking again for a lock the lease holds adds nothing (a retried request_id).
	w.must(StatusOK, acq(a1, "a/1", "aa", 0))
	// The wait quota: one wait, then the next is refused; the wait asked again is free.
	w.must(StatusOK, acq(leaseN(4), "b/1", "bb", 0))
	w.must(StatusQueued, acq(a1, "b/1", "aa", 30_000))
	w.must(StatusQueued, acq(a1, "b/1", "aa", 40_000))
	w.must(StatusOK, acq(leaseN(5), "b/2", "bb", 0))
	w.refused(acq(a2, "b/2", "aa", 30_000), QuotaIdentityWaiters, 1, 1, "aa")
	if u := w.usage("aa"); u.Leases != 2 || u.Locks != 3 || u.Waiters != 1 || u.Quotas != (Quotas{2, 3, 1}) {
		t.Fatalf("usage of aa: %+v", u)
	}
	// Another identity, the node itself and an admin are not held back by aa's use.
	w.must(StatusOK, acq(leaseN(4), "b/3", "bb", 0))
	w.must(StatusOK, acq(leaseN(7), "c/1", "", 0))
	w.must(StatusOK, acq(leaseN(8), "c/2", "ad", 0))
	// Lowering the quota keeps the use; only additions are refused.
	w.must(StatusOK, Command{Type: TypeSetLimits, Limits: Limits{PerIdentity: Quotas{MaxLeases: 1, MaxLocks: 1, MaxWaiters: 1}}})
	if u := w.usage("aa"); u.Leases != 2 || u.Locks != 3 {
		t.Fatalf("lowering a quota changed the use: %+v", u)
	}
	w.refused(acq(a2, "a/7", "aa", 0), QuotaIdentityLocks, 3, 1, "aa")
	// A release frees a grant; with the use still above the quota the next one is refused.
	w.must(StatusOK, Command{Type: TypeRelease, Lease: a1, Name: "a/2", Token: w.f.Lock("a/2").Token, Creator: "aa"})
	if u := w.usage("aa"); u.Locks != 2 {
		t.Fatalf("release: usage of aa %+v", u)
	}
	// Deleting the token revokes its leases (version 4) and so frees its use.
	w.must(StatusOK, Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "aa"}})
	if u := w.usage("aa"); u.Leases != 0 || u.Locks != 0 || u.Waiters != 0 {
		t.Fatalf("usage of a deleted token: %+v", u)
	}
}

// Where an identity's quotas come from: its token's own, else the widest of its
// policies', else the cluster's default; the anonymous caller's from the anonymous
// policy; none for the node itself, which only the cluster-wide limits bound.
func TestQuotas_WhereQuotasComeFrom(t *testing.T) {
	w := quotaWorld(t)
	w.must(StatusOK, Command{Type: TypeSetLimits, Limits: Limits{MaxLocks: 100, PerIdentity: Quotas{MaxLeases: 10, MaxLocks: 10, MaxWaiters: 10}}})
	w.must(StatusOK, Command{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: "small", Rules: []ACLRule{{"", AccessLock}}, Quotas: Quotas{MaxLocks: 2, MaxWaiters: 3}}})
	w.must(StatusOK, Command{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: "big", Rules: []ACLRule{{"x/", AccessRead}}, Quotas: Quotas{MaxLocks: 5}}})
	w.must(StatusOK, Command{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "cc", SecretHash: ACLSecretHash("cc"), Policies: []string{"small", "big"}, Quotas: Quotas{MaxLeases: 4}}})
	w.must(StatusOK, Command{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "dd", SecretHash: ACLSecretHash("dd"), Policies: []string{"small"}}})
	for _, c := range []struct {
		id   string
		want Quotas
	}{
		{"cc", Quotas{MaxLeases: 4, MaxLocks: 5, MaxWaiters: 3}}, // own, widest policy, policy
		{"dd", Quotas{MaxLeases: 10, MaxLocks: 2, MaxWaiters: 3}},
		{"aa", Quotas{10, 10, 10}},
		{CallerAnonymous, Quotas{10, 10, 10}},
		{"", Quotas{MaxLocks: 100}}, // the cluster's limits
	} {
		if got := w.usage(c.id).Quotas; got != c.want {
			t.Errorf("quotas of %q: %+v, want %+v", c.id, got, c.want)
		}
	}
	// A policy changed later changes the quotas of the tokens that hold it.
	w.must(StatusOK, Command{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: "small", Rules: []ACLRule{{"", AccessLock}}, Quotas: Quotas{MaxLocks: 7}}})
	if got := w.usage("dd").Quotas; got != (Quotas{MaxLeases: 10, MaxLocks: 7, MaxWaiters: 10}) {
		t.Errorf("after the policy changed: %+v", got)
	}
	w.must(StatusOK, Command{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: "small"}})
	if got := w.usage("dd").Quotas; got != (Quotas{10, 10, 10}) {
		t.Errorf("after the policy was deleted: %+v", got)
	}
	w.must(StatusOK, Command{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: ACLPolicyAnonymous, Rules: []ACLRule{{"", AccessLock}}, Quotas: Quotas{MaxLeases: 1}}})
	if got := w.usage(CallerAnonymous).Quotas; got != (Quotas{1, 10, 10}) {
		t.Errorf("anonymous with its policy: %+v", got)
	}
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: leaseN(1), TTL: 60_000, Creator: CallerAnonymous})
	w.refused(Command{Type: TypeCreateLease, Lease: leaseN(2), TTL: 60_000, Creator: CallerAnonymous}, QuotaIdentityLeases, 1, 1, CallerAnonymous)
	// The cluster-wide limits bind everyone, the node itself included.
	w.must(StatusOK, Command{Type: TypeSetLimits, Limits: Limits{MaxLocks: 1}})
	w.must(StatusOK, Command{Type: TypeAcquire, Lease: leaseN(3), NewLease: true, TTL: 60_000, Name: "n/1"})
	w.refused(Command{Type: TypeAcquire, Lease: leaseN(4), NewLease: true, TTL: 60_000, Name: "n/2"}, QuotaLocks, 1, 1, "")
}

// Quotas are version 5's: before it, a policy or token with quotas is refused and changes
// nothing, a SetLimits keeps only the limits of version 2, and nothing of them enters the
// state, so a version 4 node and this one hold the same bytes.
func TestQuotas_InactiveBeforeVersion5(t *testing.T) {
	w := newOwnerWorld(t) // version 4
	old := NewWithOptions(Options{MaxVersion: 4})
	replay := func(c Command) {
		c.Now = w.now
		old.ApplyCommand(w.index, &c)
	}
	for _, c := range []Command{
		{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: "q", Rules: []ACLRule{{"", AccessLock}}, Quotas: Quotas{MaxLocks: 1}}},
		{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "ee", SecretHash: ACLSecretHash("ee"), Quotas: Quotas{MaxLocks: 1}}},
	} {
		before := w.f.SnapshotBytes()
		if r := w.apply(c); r.Status != StatusInvalid {
			t.Fatalf("%s with quotas at version 4: %s", c.Type, r.Status)
		}
		tick := New(nil)
		restoreFrom(tick, before)
		tick.ApplyCommand(w.index, &Command{Type: TypeTick, Now: w.now})
		if !bytes.Equal(tick.SnapshotBytes(), w.f.SnapshotBytes()) {
			t.Fatalf("a refused %s changed the state", c.Type)
		}
	}
	w.must(StatusOK, Command{Type: TypeSetLimits, Limits: Limits{MaxLeases: 5, MaxLocks: 1, PerIdentity: Quotas{MaxLocks: 1}}})
	if got := w.f.Limits(); got != (Limits{MaxLeases: 5}) {
		t.Fatalf("limits at version 4: %+v", got)
	}
	w.must(StatusOK, Command{Type: TypeAcquire, Lease: leaseN(1), NewLease: true, TTL: 60_000, Name: "x/1", Creator: "aa"})
	w.must(StatusOK, Command{Type: TypeAcquire, Lease: leaseN(1), Name: "x/2", Creator: "aa"})
	// A version 4 node fed the same log from a snapshot holds the same bytes.
	if err := restoreFrom(old, w.f.SnapshotBytes()); err != nil {
		t.Fatal(err)
	}
	w.index++
	replay(Command{Type: TypeAcquire, Lease: leaseN(2), NewLease: true, TTL: 60_000, Name: "x/3", Creator: "bb"})
	w.f.ApplyCommand(w.index, &Command{Type: TypeAcquire, Now: w.now, Lease: leaseN(2), NewLease: true, TTL: 60_000, Name: "x/3", Creator: "bb"})
	if !bytes.Equal(old.SnapshotBytes(), w.f.SnapshotBytes()) {
		t.Fatal("a version 4 node and a version 5 node at version 4 differ")
	}
}

// quotaGen draws the commands of the primitives' generator (pgen) at version 5 with
// creators: each lease belongs to one of three tokens, the anonymous caller or nobody,
// and every command that uses a lease carries its owner as its caller. Limits per
// identity, cluster-wide limits and quotas on policies and tokens are set now and then,
// small enough to bind.
type quotaGen struct {
	*pgen
	owners map[LeaseID]string
	setup  []Command
}

var quotaIdentities = []string{"aa", "bb", "cc", CallerAnonymous, ""}

func newQuotaGen(seed int64, f *FSM) *quotaGen {
	g := &quotaGen{pgen: newPGen(seed, f), owners: map[LeaseID]string{}}
	g.pgen.first = false
	for i, id := range g.ids {
		g.owners[id] = quotaIdentities[i%len(quotaIdentities)]
	}
	g.setup = []Command{
		{Type: TypeSetVersion, Version: 5},
		{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: "p1", Rules: []ACLRule{{"", AccessLock}}, Quotas: Quotas{MaxLocks: 2}}},
		{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: "p2", Rules: []ACLRule{{"", AccessLock}}, Quotas: Quotas{MaxWaiters: 1, MaxLocks: 3}}},
		{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "aa", SecretHash: ACLSecretHash("aa"), Policies: []string{"p1"}}},
		{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "bb", SecretHash: ACLSecretHash("bb"), Policies: []string{"p1", "p2"}, Quotas: Quotas{MaxLeases: 1}}},
		{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "cc", SecretHash: ACLSecretHash("cc")}},
		{Type: TypeSetLimits, Limits: Limits{MaxLocks: 8, MaxWaiters: 5, PerIdentity: Quotas{MaxLeases: 2, MaxLocks: 2, MaxWaiters: 2}}},
	}
	return g
}

func (g *quotaGen) next() Command {
	if len(g.setup) > 0 {
		c := g.setup[0]
		g.setup = g.setup[1:]
		g.now++
		c.Now = g.now
		return c
	}
	c := g.pgen.next()
	c.Now = max(c.Now, 0) // a late stamp, never a negative one (which does not decode)
	switch r := g.rng.Intn(60); {
	case c.Type == TypeSetLimits: // pgen's limits, with version 5's now and then
		if r < 30 {
			c.Limits.MaxLocks, c.Limits.MaxWaiters = uint64(g.rng.Intn(12)), uint64(g.rng.Intn(8))
			c.Limits.PerIdentity = Quotas{uint64(g.rng.Intn(4)), uint64(g.rng.Intn(4)), uint64(g.rng.Intn(3))}
		}
	case r == 0:
		c = Command{Type: TypeACLSetToken, Now: c.Now, ACL: ACLCommand{Accessor: "cc", SecretHash: ACLSecretHash("cc"),
			Quotas: Quotas{uint64(g.rng.Intn(3)), uint64(g.rng.Intn(3)), uint64(g.rng.Intn(3))}}}
	case r == 1:
		c = Command{Type: TypeACLSetPolicy, Now: c.Now, ACL: ACLCommand{Policy: "p2", Rules: []ACLRule{{"", AccessLock}},
			Quotas: Quotas{uint64(g.rng.Intn(3)), uint64(g.rng.Intn(4)), uint64(g.rng.Intn(3))}}}
	}
	if c.UsesLease() {
		c.Creator = g.owners[c.Lease]
	}
	if c.Type == TypeRenew {
		c.Callers = make([]string, len(c.Leases))
		for i, id := range c.Leases {
			c.Callers[i] = g.owners[id]
		}
	}
	return c
}

// Random commands of every primitive by five identities under quotas that bind agree with
// the reference model at every step (status, quota, tokens, holders, queues, leases), each
// identity's use and quotas and the cluster's totals agree with the model's count, no use
// grows past a quota, and the state replays and restores byte for byte with its use
// counted again.
func TestQuotas_RandomMatchesModel(t *testing.T) {
	refusals := map[string]int{}
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			f := New(nil)
			m := newPModel()
			g := newQuotaGen(seed, f)
			for index := uint64(1); index <= 3000; index++ {
				c := g.next()
				got := f.ApplyCommand(index, &c)
				want, token := m.apply(index, &c)
				where := func() string { return fmt.Sprintf("seed %d step %d %s by %q", seed, index, c.Type, c.Creator) }
				if got.Status != want || got.Quota != m.quota {
					t.Fatalf("%s: %s %q, model %s %q", where(), got.Status, got.Quota, want, m.quota)
				}
				if want == StatusOK && token != 0 && got.Token != token {
					t.Fatalf("%s: token %d, model %d", where(), got.Token, token)
				}
				if got.Status == StatusQuotaExceeded {
					refusals[got.Quota]++
				}
				checkPrims(t, index, f, m, g.pgen)
				checkUsage(t, where, f, m, quotaIdentities)
				if index%250 == 0 {
					r := mustRestoreBytes(t, f)
					for _, id := range quotaIdentities {
						if r.Usage(id) != f.Usage(id) {
							t.Fatalf("%s: restored usage of %q %+v, live %+v", where(), id, r.Usage(id), f.Usage(id))
						}
					}
				}
			}
		})
	}
	for _, q := range []string{QuotaLocks, QuotaWaiters, QuotaIdentityLeases, QuotaIdentityLocks, QuotaIdentityWaiters} {
		if refusals[q] == 0 {
			t.Errorf("no command was refused by %s: the generator does not reach it (%v)", q, refusals)
		}
	}
	t.Logf("refusals by quota: %v", refusals)
}

// The use is derived state: counted as grants and waits come and go, and counted again
// from the leases on restore; the two agree after every kind of change (checked on
// random states of every primitive at every version's generators).
func TestQuotas_UseCountedAgainOnRestore(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	f := New(nil)
	g := newQuotaGen(rng.Int63(), f)
	for index := uint64(1); index <= 4000; index++ {
		c := g.next()
		f.ApplyCommand(index, &c)
		if index%97 != 0 {
			continue
		}
		f.mu.RLock()
		type counts struct{ leases, locks, waits, ids int }
		of := func(u *identityUse) counts {
			c := counts{u.leases, u.locks, u.waits, 0}
			if u.ids != nil {
				c.ids = u.ids.Len()
			}
			return c
		}
		live := map[string]counts{}
		for id, u := range f.s.use {
			live[id] = of(u)
		}
		total := of(&f.s.total)
		f.mu.RUnlock()
		r := mustRestoreBytes(t, f)
		r.mu.RLock()
		if len(r.s.use) != len(live) || of(&r.s.total) != total {
			t.Fatalf("step %d: restored %d identities, total %+v; live %d, %+v", index, len(r.s.use), of(&r.s.total), len(live), total)
		}
		for id, u := range r.s.use {
			if of(u) != live[id] {
				t.Fatalf("step %d: identity %q restored %+v, live %+v", index, id, of(u), live[id])
			}
			if id != "" && (u.ids == nil || u.ids.Len() != u.leases) {
				t.Fatalf("step %d: identity %q has %d leases and %v in its index", index, id, u.leases, u.ids)
			}
		}
		r.mu.RUnlock()
	}
}
