package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

// sweepFSM is a state machine at protocol version 6 whose entries sweep at most budget
// units (0: SweepBudget), with its index.
type sweepFSM struct {
	t      *testing.T
	f      *FSM
	index  uint64
	now    int64
	events []Event
}

func newSweepFSM(t *testing.T, budget int) *sweepFSM {
	w := &sweepFSM{t: t, now: 1}
	w.f = NewWithOptions(Options{Observe: func(e Event) { w.events = append(w.events, e) }, sweepBudget: budget})
	w.must(StatusOK, Command{Type: TypeSetVersion, Version: 6})
	return w
}

func (w *sweepFSM) apply(c Command) *Result {
	w.t.Helper()
	w.index++
	c.Now = w.now
	w.events = w.events[:0]
	return w.f.ApplyCommand(w.index, &c)
}

func (w *sweepFSM) must(want Status, c Command) *Result {
	w.t.Helper()
	r := w.apply(c)
	if r.Status != want {
		w.t.Fatalf("%s: %s (%v), want %s", c.Type, r.Status, r.Err, want)
	}
	return r
}

// held returns how many grants lease id still has in the state, swept or not.
func (w *sweepFSM) held(id LeaseID) int {
	w.f.mu.RLock()
	defer w.f.mu.RUnlock()
	l := w.f.s.leases[id]
	if l == nil {
		return -1
	}
	return len(l.held)
}

func sweepLockName(i int) string { return fmt.Sprintf("l%04d", i) }

// A lease holding 5,000 locks expires: the entry that passes its deadline ends at most
// SweepBudget units and the next entries (the leader's ticks, or anyone's commands) the
// rest, in name order; from that first entry the lease is dead to every command and to
// every read, and a waiter of its first lock is handed that lock by the unit that ends it.
// Without the budget (the mutant sweep-in-one-entry) one entry ends all 5,001 units.
func TestSweep_MassExpiryIsSliced(t *testing.T) {
	const n = 5000
	w := newSweepFSM(t, 0)
	a, waiter, other := LeaseID{0xA}, LeaseID{0xB}, LeaseID{0xC}
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: a, TTL: 1000})
	for i := 0; i < n; i++ {
		w.must(StatusOK, Command{Type: TypeAcquire, Lease: a, Name: sweepLockName(i)})
	}
	w.must(StatusQueued, Command{Type: TypeAcquire, Lease: waiter, NewLease: true, TTL: 600_000, Name: sweepLockName(0), Wait: 600_000})
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: other, TTL: 600_000})

	w.now = 1001 // past a's deadline
	w.must(StatusOK, Command{Type: TypeTick})
	expired := w.index
	if got := w.held(a); got != n-SweepBudget {
		t.Fatalf("after the first entry a holds %d locks, want %d: the entry did not stop at its budget", got, n-SweepBudget)
	}
	// Dead to every command and every read from that entry on.
	if _, ok := w.f.Lease(a); ok {
		t.Fatal("a dead lease is found")
	}
	if v := w.f.Lock(sweepLockName(n - 1)); v.Held || len(v.Holders) != 0 {
		t.Fatalf("a lock of a dead lease reads as held: %+v", v)
	}
	// Its ID is not made again while it is being swept (a request_id retried past the TTL).
	w.must(StatusLeaseNotFound, Command{Type: TypeAcquire, Lease: a, NewLease: true, TTL: 1000, Name: "fresh"})
	if r := w.apply(Command{Type: TypeRenew, Leases: []LeaseID{a}}); r.Renewed[0] {
		t.Fatal("a keepalive renewed a dead lease")
	}
	if w.held(a) <= 0 {
		t.Fatal("the test is too slow for its sweep: a is swept already")
	}
	w.must(StatusLeaseNotFound, Command{Type: TypeCreateLease, Lease: a, TTL: 1000})
	w.must(StatusLeaseNotFound, Command{Type: TypeAcquire, Lease: a, Name: "fresh"})
	w.must(StatusLeaseNotFound, Command{Type: TypeRelease, Lease: a, Name: sweepLockName(n - 1), Token: 3})
	w.must(StatusLeaseNotFound, Command{Type: TypeRevoke, Lease: a})
	// Each of those entries swept on: 5 entries of 1,024 units are more than the 5,001,
	// so a is gone now, and the waiter was handed its lock by the first entry.
	if got := w.held(a); got != -1 {
		t.Fatalf("a still holds %d locks after %d entries of sweep", got, w.index-expired+1)
	}
	// Once swept, its ID is as any other: a create with it makes a new lease, as before
	// version 6.
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: a, TTL: 1000})
	if v := w.f.Lock(sweepLockName(0)); !v.Held || v.Holder != waiter || v.Token != expired {
		t.Fatalf("the waiter's lock: %+v, want it granted at %d", v, expired)
	}
	// A neighbour works all along: its lock is granted at its entry's index.
	r := w.must(StatusOK, Command{Type: TypeAcquire, Lease: other, Name: sweepLockName(n - 1)})
	if r.Token != w.index {
		t.Fatalf("the neighbour's token %d, want %d", r.Token, w.index)
	}
}

// Each entry of a sweep ends exactly the budget's units until what is left fits, the
// leader keeps ticking while anything is left (NextDeadline is the cluster time), and a
// node restored from a snapshot taken midway carries on alike, byte for byte.
func TestSweep_CarriedAcrossEntriesAndSnapshots(t *testing.T) {
	const n, budget = 250, 40
	w := newSweepFSM(t, budget)
	a := LeaseID{0xA}
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: a, TTL: 1000})
	for i := 0; i < n; i++ {
		w.must(StatusOK, Command{Type: TypeAcquire, Lease: a, Name: sweepLockName(i)})
	}
	w.now = 1001
	var replica *FSM
	for entry := 1; w.held(a) != -1; entry++ {
		before := w.held(a)
		w.must(StatusOK, Command{Type: TypeTick})
		after := w.held(a)
		if want := max(before-budget, 0); after != want && !(after == -1 && before+1 <= budget) {
			t.Fatalf("entry %d of the sweep: a's locks %d -> %d, want %d", entry, before, after, want)
		}
		if after != -1 {
			if next, ok := w.f.NextDeadline(); !ok || next > w.f.Time() {
				t.Fatalf("entry %d: the sweep is not done and the next deadline is %d (%v), past %d", entry, next, ok, w.f.Time())
			}
		}
		if entry == 3 {
			replica = NewWithOptions(Options{sweepBudget: budget})
			if err := restoreFrom(replica, w.f.SnapshotBytes()); err != nil {
				t.Fatal(err)
			}
		} else if replica != nil {
			replica.ApplyCommand(w.index, &Command{Type: TypeTick, Now: w.now})
		}
		if entry > 20 {
			t.Fatal("the sweep does not end")
		}
	}
	if !bytes.Equal(replica.SnapshotBytes(), w.f.SnapshotBytes()) {
		t.Fatal("a node restored midway swept differently")
	}
	if _, ok := w.f.NextDeadline(); ok {
		t.Fatal("a deadline is left after the sweep")
	}
}

// A revoke and a token's deletion mark the leases dead in their own entry and the sweep
// ends them, in that entry while the budget lasts: a revoke of a lease with three locks
// hands them to their waiters at the revoke's index. A deleted token's leases are dead at
// once, its accessor is not made a token again until they are gone, and they go over the
// following entries.
func TestSweep_RevokeAndTokenDeletion(t *testing.T) {
	w := newSweepFSM(t, 50)
	w.must(StatusOK, setPolicy("lock", ACLRule{"", AccessLock}))
	w.must(StatusOK, setToken("aa", "secret-aa", "lock"))
	small, waiter := LeaseID{0x5}, LeaseID{0x6}
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: small, TTL: 600_000, Creator: "aa"})
	w.must(StatusOK, Command{Type: TypeCreateLease, Lease: waiter, TTL: 600_000})
	for i := 0; i < 3; i++ {
		w.must(StatusOK, Command{Type: TypeAcquire, Lease: small, Name: sweepLockName(i), Creator: "aa"})
		w.must(StatusQueued, Command{Type: TypeAcquire, Lease: waiter, Name: sweepLockName(i), Wait: 600_000})
	}
	r := w.must(StatusOK, Command{Type: TypeRevoke, Lease: small, Creator: "aa"})
	if len(r.Released) != 3 || w.held(small) != -1 {
		t.Fatalf("revoke: released %v, lease left with %d", r.Released, w.held(small))
	}
	for i := 0; i < 3; i++ {
		if v := w.f.Lock(sweepLockName(i)); v.Holder != waiter || v.Token != w.index {
			t.Fatalf("after the revoke lock %d: %+v, want the waiter at %d", i, v, w.index)
		}
	}

	// The token's 4 leases of 60 locks each: 244 units and more, past one entry's 50.
	var ids []LeaseID
	for i := 0; i < 4; i++ {
		id := LeaseID{0x10, byte(i)}
		ids = append(ids, id)
		w.must(StatusOK, Command{Type: TypeCreateLease, Lease: id, TTL: 600_000, Creator: "aa"})
		for j := 0; j < 60; j++ {
			w.must(StatusOK, Command{Type: TypeAcquire, Lease: id, Name: fmt.Sprintf("t%d/%02d", i, j), Creator: "aa"})
		}
	}
	w.must(StatusOK, Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "aa"}})
	deleted := w.index
	for _, id := range ids {
		if _, ok := w.f.Lease(id); ok {
			t.Fatal("a lease of a deleted token is found")
		}
	}
	if v := w.f.Lock("t3/59"); v.Held {
		t.Fatalf("a lock of a deleted token's lease reads as held: %+v", v)
	}
	w.must(StatusConflict, setToken("aa", "secret-aa", "lock"))
	for w.held(ids[3]) != -1 {
		w.must(StatusOK, Command{Type: TypeTick})
		if w.index-deleted > 10 {
			t.Fatal("the deleted token's leases are not swept")
		}
	}
	// 244 units (4 leases of 60 locks, each lease removed too) at 50 an entry: the deleting
	// entry, the refused token and three ticks.
	if entries := w.index - deleted + 1; entries != 5 {
		t.Fatalf("244 units took %d entries, with 50 an entry", entries)
	}
	if u := w.f.Usage("aa"); u.Leases != 0 || u.Locks != 0 {
		t.Fatalf("the deleted token still has %+v", u)
	}
	w.must(StatusOK, setToken("aa", "secret-aa", "lock")) // its leases are gone: it may be made again
}

// Random commands of every primitive by five identities at version 6, with a budget of 3
// units an entry and token deletions, agree with the reference model at every step, and a
// replica and a node restored midway hold the same bytes at the end.
func TestSweep_RandomMatchesModel(t *testing.T) {
	swept := 0
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			const budget = 3
			f := NewWithOptions(Options{sweepBudget: budget})
			replica := NewWithOptions(Options{sweepBudget: budget})
			var restored *FSM
			m := newPModel()
			m.budgetMax = budget
			g := newQuotaGen(seed, f)
			g.setup[0].Version = 6
			for index := uint64(1); index <= 3000; index++ {
				c := g.next()
				switch r := g.rng.Intn(100); {
				case r == 0:
					c = Command{Type: TypeACLDeleteToken, Now: c.Now, ACL: ACLCommand{Accessor: quotaIdentities[g.rng.Intn(3)]}}
				case r == 1:
					acc := quotaIdentities[g.rng.Intn(3)]
					c = Command{Type: TypeACLSetToken, Now: c.Now, ACL: ACLCommand{Accessor: acc, SecretHash: ACLSecretHash(acc), Policies: []string{"p1"}}}
				}
				got := f.ApplyCommand(index, &c)
				replica.ApplyCommand(index, &c)
				if restored != nil {
					restored.ApplyCommand(index, &c)
				}
				want, token := m.apply(index, &c)
				where := func() string { return fmt.Sprintf("seed %d step %d %s by %q", seed, index, c.Type, c.Creator) }
				if got.Status != want || got.Quota != m.quota {
					t.Fatalf("%s: %s %q (%v), model %s %q", where(), got.Status, got.Quota, got.Err, want, m.quota)
				}
				if want == StatusOK && token != 0 && got.Token != token {
					t.Fatalf("%s: token %d, model %d", where(), got.Token, token)
				}
				checkPrims(t, index, f, m, g.pgen)
				checkUsage(t, where, f, m, quotaIdentities)
				if next, ok := f.NextDeadline(); ok && next <= f.Time() {
					swept++ // an entry left work to the next ones
				}
				if index == 1500 {
					restored = NewWithOptions(Options{sweepBudget: budget})
					if err := restoreFrom(restored, f.SnapshotBytes()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !bytes.Equal(f.SnapshotBytes(), replica.SnapshotBytes()) || !bytes.Equal(f.SnapshotBytes(), restored.SnapshotBytes()) {
				t.Fatal("a replica or a node restored midway differs")
			}
		})
	}
	if swept == 0 {
		t.Fatal("no entry left any sweep to the next: the generator does not exercise the budget")
	}
	t.Logf("%d entries left work to the next ones", swept)
}
