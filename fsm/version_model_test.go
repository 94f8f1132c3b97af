package fsm

import (
	"bytes"
	"testing"
)

// stepChecks are the checks of the protocol-version work, run after every step of the
// randomized test: deadlines that never wrap, limits that only refuse growth, refused
// commands that change nothing, and a version 1 node that stays identical until the
// first command it does not know.
type stepChecks struct {
	old      *FSM // a node that speaks only version 1
	oldDone  bool
	maxNow   int64
	prev     []byte // snapshot before the step
	prevUse  usage
	deadline map[LeaseID]int64
}

type usage struct {
	leases  int
	perLock map[string]int
	perHold map[LeaseID]int
}

func measure(f *FSM, g *gen) usage {
	u := usage{leases: f.LeaseCount(), perLock: map[string]int{}, perHold: map[LeaseID]int{}}
	for _, name := range g.names {
		u.perLock[name] = len(f.Lock(name).Waiters)
	}
	for _, id := range g.ids {
		if v, ok := f.Lease(id); ok {
			u.perHold[id] = len(v.Locks) + len(v.Waiting)
		}
	}
	return u
}

func newStepChecks() *stepChecks {
	return &stepChecks{old: NewWithOptions(Options{MaxVersion: 1}), deadline: map[LeaseID]int64{}}
}

func (sc *stepChecks) before(f *FSM, g *gen) {
	sc.prev = f.SnapshotBytes()
	sc.prevUse = measure(f, g)
}

func (sc *stepChecks) after(t *testing.T, index uint64, c *Command, got *Result, f *FSM, g *gen) {
	t.Helper()
	if got.Status != StatusInvalid || c.Type != TypeSetVersion {
		sc.maxNow = max(sc.maxNow, c.Now)
	}
	if f.Time() > sc.maxNow {
		t.Fatalf("step %d: cluster time %d ahead of every Now (%d)", index, f.Time(), sc.maxNow)
	}
	checkDeadlines(t, f)
	// Every deadline set by this entry starts at or after the cluster time it was set at.
	for _, id := range g.ids {
		v, ok := f.Lease(id)
		if !ok {
			delete(sc.deadline, id)
			continue
		}
		if d, seen := sc.deadline[id]; (!seen || d != v.Deadline) && v.Deadline < satAdd(f.Time(), v.TTL) {
			t.Fatalf("step %d: lease %s stamped before cluster time: deadline %d, time %d, ttl %d", index, id, v.Deadline, f.Time(), v.TTL)
		}
		sc.deadline[id] = v.Deadline
	}

	// Limits only refuse growth: nothing grows past a limit.
	lim, u := f.Limits(), measure(f, g)
	over := func(limit uint64, now, before int) bool { return limit != 0 && now > before && uint64(now) > limit }
	if over(lim.MaxLeases, u.leases, sc.prevUse.leases) {
		t.Fatalf("step %d: %d leases, limit %d", index, u.leases, lim.MaxLeases)
	}
	for name, n := range u.perLock {
		if over(lim.MaxWaitersPerLock, n, sc.prevUse.perLock[name]) {
			t.Fatalf("step %d: lock %q has %d waiters, limit %d", index, name, n, lim.MaxWaitersPerLock)
		}
	}
	for id, n := range u.perHold {
		if over(lim.MaxLocksPerLease, n, sc.prevUse.perHold[id]) {
			t.Fatalf("step %d: lease %s holds and awaits %d locks, limit %d", index, id, n, lim.MaxLocksPerLease)
		}
	}

	// A refused command changes nothing but what a tick at its index and time changes.
	if got.Status == StatusQuotaExceeded || isACL(c.Type) && got.Status != StatusOK {
		refused, tick := New(nil), New(nil)
		if err := restoreFrom(refused, sc.prev); err != nil {
			t.Fatal(err)
		}
		restoreFrom(tick, sc.prev)
		refused.ApplyCommand(index, c)
		tick.ApplyCommand(index, &Command{Type: TypeTick, Now: c.Now})
		if !bytes.Equal(refused.SnapshotBytes(), tick.SnapshotBytes()) || !bytes.Equal(refused.SnapshotBytes(), f.SnapshotBytes()) {
			t.Fatalf("step %d: refused %s changed more than time", index, c.Type)
		}
	}

	// A version 1 node applying the same log holds the same bytes until it halts, and it
	// halts exactly at the first command of a type it does not know.
	if sc.oldDone {
		return
	}
	r := sc.old.ApplyCommand(index, c)
	if c.Type.Since() > 1 && c.Type&FlagSkippable == 0 {
		if r.Status != StatusHalted || sc.old.AppliedIndex() != index-1 {
			t.Fatalf("step %d: version 1 node fed %s: %s, applied %d", index, c.Type, r.Status, sc.old.AppliedIndex())
		}
		if !bytes.Equal(sc.old.SnapshotBytes(), sc.prev) {
			t.Fatalf("step %d: the version 1 node changed when it halted", index)
		}
		sc.oldDone = true
		return
	}
	if index%64 == 0 && !bytes.Equal(sc.old.SnapshotBytes(), f.SnapshotBytes()) {
		t.Fatalf("step %d: a version 1 node and a version 2 node at active version 1 differ", index)
	}
}
