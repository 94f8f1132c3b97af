package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// The version 3 lock rules checked on random sequences: deadlock detection against a
// brute-force reference, locksets all-or-none, maximum holds and lock delays.
//
// The reference for deadlocks is semantic, not the graph of deadlock.go: on a copy of
// the state, every lease that waits for nothing lets go of everything it holds, lock
// delays are over, and this repeats until nothing changes (no wait deadline or lease
// expiry is allowed to help). The leases still waiting then are deadlocked. The state
// machine must never reach a state with a deadlocked lease (no cycle let through), and
// every request it refuses with StatusDeadlock must leave its lease deadlocked when
// applied with the check off (no false positive).

// deadlocked returns the leases of s that wait for ever once everyone who can finish
// has finished, sorted. s is changed: call it on a copy.
func deadlocked(s *state) []LeaseID {
	index := s.applied
	for changed := true; changed; {
		changed = false
		for _, name := range sortedNames(s.locks) {
			if lk := s.locks[name]; lk.ro().v3.delayUntil != 0 {
				lk.rw().v3.delayUntil = 0
				s.delayExp.Delete(name)
				s.admit = append(s.admit, name)
				changed = true
			}
		}
		index++
		s.settle(index)
		ids := make([]LeaseID, 0, len(s.leases))
		for id := range s.leases {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
		for _, id := range ids {
			l := s.leases[id]
			if len(l.waiting) > 0 || len(l.held) == 0 {
				continue
			}
			for _, name := range sortedNames(l.held) {
				index++
				s.releaseGrant(index, name, s.locks[name], id)
				s.settle(index)
			}
			changed = true
		}
	}
	var out []LeaseID
	for id, l := range s.leases {
		if len(l.waiting) > 0 {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// copyState decodes a copy of f's state.
func copyState(t *testing.T, f *FSM) *state {
	t.Helper()
	s, err := decodeSnapshot(f.SnapshotBytes(), nil)
	if err != nil {
		t.Fatalf("copy: %v", err)
	}
	s.maxVersion = Version
	return s
}

// atVersion3 returns an FSM whose cluster runs protocol version 3.
func atVersion3(t testing.TB) *FSM {
	t.Helper()
	f := New(nil)
	if r := f.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 3}); r.Status != StatusOK {
		t.Fatalf("set version: %v", r.Status)
	}
	return f
}

type v3gen struct {
	rng    *rand.Rand
	now    int64
	leases []LeaseID
	names  []string
}

func (g *v3gen) lease() LeaseID { return g.leases[g.rng.Intn(len(g.leases))] }

func (g *v3gen) name() string { return g.names[g.rng.Intn(len(g.names))] }

// next returns a random version 3 lock command for f's current state.
func (g *v3gen) next(f *FSM) Command {
	g.now += int64(g.rng.Intn(400))
	c := Command{Now: g.now, Lease: g.lease(), Owner: "o"}
	if _, ok := f.Lease(c.Lease); !ok && g.rng.Intn(2) == 0 {
		c.NewLease, c.TTL = true, int64(4000+g.rng.Intn(20000))
	}
	wait := func() int64 {
		if g.rng.Intn(4) == 0 {
			return 0
		}
		return int64(1000 + g.rng.Intn(30000))
	}
	options := func(shared bool) {
		if g.rng.Intn(4) == 0 {
			c.MaxHold = int64(500 + g.rng.Intn(4000))
		}
		if !shared && g.rng.Intn(4) == 0 {
			c.LockDelay = int64(300 + g.rng.Intn(3000))
		}
	}
	switch op := g.rng.Intn(100); {
	case op < 35:
		c.Type, c.Name, c.Wait, c.Shared = TypeAcquireEx, g.name(), wait(), g.rng.Intn(3) == 0
		options(c.Shared)
	case op < 55:
		c.Type, c.Wait, c.Shared = TypeLockSet, wait(), g.rng.Intn(4) == 0
		var names []string
		for i := 0; i < 2+g.rng.Intn(2); i++ {
			names = append(names, g.name())
		}
		c.Names = sortSetNames(names)
		options(c.Shared)
	case op < 70:
		c.Type, c.Name = TypeRelease, g.name()
		c.Token = f.Lock(c.Name).Token
		for _, h := range f.Lock(c.Name).Holders {
			if h.Lease == c.Lease {
				c.Token = h.Token
			}
		}
		if g.rng.Intn(10) == 0 {
			c.Token++
		}
	case op < 75:
		c.Type = TypeLockSetRelease
		v, _ := f.Lease(c.Lease)
		if len(v.Locks) == 0 {
			c.Names, c.Tokens = []string{g.name()}, []uint64{1}
			break
		}
		c.Names = v.Locks
		for _, n := range v.Locks {
			tok := uint64(0)
			for _, h := range f.Lock(n).Holders {
				if h.Lease == c.Lease {
					tok = h.Token
				}
			}
			c.Tokens = append(c.Tokens, tok)
		}
	case op < 82:
		c.Type, c.Name = TypeDequeue, g.name()
	case op < 85:
		c.Type = TypeRevoke
	case op < 95:
		c.Type, c.Leases = TypeRenew, g.leases[:g.rng.Intn(len(g.leases))]
	default:
		c.Type = TypeTick
		g.now += int64(g.rng.Intn(3000))
		c.Now = g.now
	}
	if c.Type != TypeAcquireEx && c.Type != TypeLockSet {
		c.NewLease, c.TTL = false, 0
	}
	return c
}

// checkV3 fails when f's state breaks an invariant of the version 3 rules.
func checkV3(t *testing.T, f *FSM, step int) {
	t.Helper()
	checkNoExtra(t, uint64(step))
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := f.s
	for name, lk := range s.locks {
		if lk.ro().v3.vacant {
			if lk.holder != (LeaseID{}) || lk.ro().readers != nil {
				t.Fatalf("step %d: lock %q held by nobody has a holder", step, name)
			}
			if lk.ro().v3.delayUntil == 0 && (lk.ro().queue.head == nil || lk.ro().queue.head.set == nil) {
				t.Fatalf("step %d: lock %q held by nobody with nothing to wait for", step, name)
			}
		} else if _, _, ok := lk.grantOf(lk.holder); !ok || !func() bool { _, h := s.leases[lk.holder].held[name]; return h }() {
			t.Fatalf("step %d: lock %q: holder does not hold it", step, name)
		}
		if h := lk.ro().queue.head; h != nil && h.shared && h.set == nil && lk.isShared() {
			t.Fatalf("step %d: lock %q held shared with a shared single request at its head", step, name)
		}
		if len(s.admit) != 0 {
			t.Fatalf("step %d: locks to admit left after the entry: %v", step, s.admit)
		}
		if lk.ro().v3.delayUntil != 0 && lk.ro().v3.delayUntil <= s.time {
			t.Fatalf("step %d: lock %q: lock delay until %d still runs at %d", step, name, lk.ro().v3.delayUntil, s.time)
		}
		for w := lk.ro().queue.head; w != nil; w = w.next {
			if w.set == nil {
				continue
			}
			ready := true
			for i := range w.set.names {
				ready = ready && s.setReadyOn(w.set, i)
			}
			if ready {
				t.Fatalf("step %d: lockset of %v free for it but not granted", step, w.set.names)
			}
		}
	}
	s.holdExp.Ascend(func(key string, deadline int64) bool {
		if deadline <= s.time {
			name, _ := splitWaitKey(key)
			t.Fatalf("step %d: grant of %q past its maximum hold (%d at %d)", step, name, deadline, s.time)
		}
		return true
	})
}

func TestDeadlock_Model(t *testing.T) {
	totals := map[string]int{}
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			g := &v3gen{rng: rng, now: 1000, names: []string{"a", "b", "c", "d", "e"}}
			for i := 0; i < 6; i++ {
				g.leases = append(g.leases, LeaseID{byte(i + 1)})
			}
			f := atVersion3(t)
			index := uint64(1)
			for step := 0; step < 2000; step++ {
				c := g.next(f)
				index++
				before := f.SnapshotBytes()
				var pre *state
				if c.Type == TypeAcquireEx || c.Type == TypeLockSet {
					pre = copyState(t, f)
				}
				r := f.ApplyCommand(index, &c)
				totals[c.Type.String()+" "+r.Status.String()]++
				switch {
				case r.Status == StatusDeadlock:
					if len(r.Cycle) == 0 || r.Cycle[0].Lease != LeaseFingerprint(c.Lease) {
						t.Fatalf("step %d: deadlock without the requester's cycle: %v", step, r.Cycle)
					}
					dump := dumpLocks(pre)
					pre.noCycleCheck = true
					pc := c
					pre.apply(index, &pc)
					dead := deadlocked(pre)
					found := false
					for _, id := range dead {
						found = found || id == c.Lease
					}
					if !found {
						t.Fatalf("step %d: %s refused as a deadlock (%s), but with the request queued lease %d finishes (%q %v shared=%v)\n%s", step, c.Type, DescribeCycle(r.Cycle), c.Lease[0], c.Name, c.Names, c.Shared, dump)
					}
				default:
					if dead := deadlocked(copyState(t, f)); len(dead) > 0 {
						t.Fatalf("step %d: %s lease %d %q %v shared=%v -> %s left %d leases deadlocked\nbefore:\n%s\nafter:\n%s", step, c.Type, c.Lease[0], c.Name, c.Names, c.Shared, r.Status, len(dead), dumpLocks(pre), dumpLocks(copyState(t, f)))
					}
				}
				if c.Type == TypeLockSet {
					switch r.Status {
					case StatusOK:
						for i, n := range c.Names {
							if tok := r.Tokens[i]; !f.holds(n, c.Lease, tok) {
								t.Fatalf("step %d: lockset granted but %q not held with %d", step, n, tok)
							}
						}
					case StatusQueued:
					case StatusDeadlock:
					default:
						// Refused: the entry did what a tick at its time does, nothing more.
						tick := Command{Type: TypeTick, Now: c.Now}
						pre.apply(index, &tick)
						if !bytes.Equal(pre.encode(), f.SnapshotBytes()) {
							t.Fatalf("step %d: refused lockset (%s) changed more than time does\nexpected:\n%s\ngot:\n%s\nexpected holds %d delays %d, got %d %d", step, r.Status, dumpLocks(pre), dumpLocks(copyState(t, f)), pre.holdExp.Len(), pre.delayExp.Len(), copyState(t, f).holdExp.Len(), copyState(t, f).delayExp.Len())
						}
					}
				}
				checkV3(t, f, step)
				if step%100 == 0 {
					mustRestoreBytes(t, f)
				}
				_ = before
			}
		})
	}
	t.Logf("outcomes: %v", totals)
	for _, k := range []string{"acquire_ex deadlock", "lockset ok", "lockset queued", "lockset lock_held"} {
		if totals[k] == 0 {
			t.Errorf("no %q in the runs: the generator does not reach it", k)
		}
	}
}

// holds reports whether lease id holds lock name with token.
func (f *FSM) holds(name string, id LeaseID, token uint64) bool {
	for _, h := range f.Lock(name).Holders {
		if h.Lease == id && h.Token == token {
			return f.Lock(name).Held
		}
	}
	return false
}

// dumpLocks describes s's locks for a failure message.
func dumpLocks(s *state) string {
	var b bytes.Buffer
	for _, name := range sortedNames(s.locks) {
		lk := s.locks[name]
		fmt.Fprintf(&b, "%s:", name)
		switch {
		case lk.ro().v3.vacant:
			fmt.Fprintf(&b, " vacant(delay %d)", lk.ro().v3.delayUntil)
		case lk.isShared():
			for g := lk.ro().readers.head; g != nil; g = g.next {
				fmt.Fprintf(&b, " r%d", g.lease[0])
			}
		default:
			fmt.Fprintf(&b, " x%d", lk.holder[0])
		}
		b.WriteString(" |")
		for w := lk.ro().queue.head; w != nil; w = w.next {
			m := "x"
			if w.shared {
				m = "s"
			}
			if w.set != nil {
				m += fmt.Sprint(w.set.names)
			}
			fmt.Fprintf(&b, " %s%d", m, w.lease[0])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// newV3Gen returns the generator of TestDeadlock_Model with six leases and five locks.
func newV3Gen(seed int64) *v3gen {
	g := &v3gen{rng: rand.New(rand.NewSource(seed)), now: 1000, names: []string{"a", "b", "c", "d", "e"}}
	for i := 0; i < 6; i++ {
		g.leases = append(g.leases, LeaseID{byte(i + 1)})
	}
	return g
}

// v3Sample returns a version 3 state after n random steps (the fuzzers' seed).
func v3Sample(t testing.TB, n int) *FSM {
	f := atVersion3(t)
	g := newV3Gen(3)
	for i := 0; i < n; i++ {
		c := g.next(f)
		f.ApplyCommand(uint64(i+2), &c)
	}
	return f
}

// v3Seeds returns n random version 3 commands, semaphore ones included.
func v3Seeds(t testing.TB, n int) []Command {
	f := atVersion3(t)
	g := newV3Gen(4)
	out := []Command{{Type: TypeSemAcquireEx, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Name: "s", Limit: 2, MaxHold: 500, Wait: 100}}
	for i := 0; i < n; i++ {
		c := g.next(f)
		f.ApplyCommand(uint64(i+2), &c)
		out = append(out, c)
	}
	return out
}
