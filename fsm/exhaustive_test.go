package fsm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The exhaustive check at small bounds (docs/VERIFICATION.md, "Exhaustive check at small
// bounds"): every sequence of commands over a small alphabet, up to a depth, explored
// breadth-first from one root state, each distinct state checked once.
//
// The alphabet is 41 concrete commands over three leases (L1 and L2 with every command,
// L3 only waiting), a lock taken in both modes (a), a second lock taken exclusively (b),
// a semaphore of limit 2 (s) and an election (e); exAlphabet lists them. A command is a
// function of the reference model's state only where the real client would read the
// state first: a release carries the
// releasing lease's current token (or a stale one), a tick is stamped at the next pending
// deadline (or one millisecond before it). Every other command is stamped at the current
// cluster time, except a late tick (stamped one millisecond in the past) and a leap (a lease
// created by a leader two days ahead of cluster time, which clamps the step).
//
// The dedup key is the whole snapshot encoding, byte for byte: applied index, cluster time,
// leases, locks, queues, histories, semaphores, elections. Nothing is normalised. Every
// command uses one log index and a snapshot none, so the applied index is the depth plus
// one and two paths meet only at the same depth: the search is a DAG of levels, dedup is
// within a level (only the next level's keys are kept), and a state is never revisited at
// another depth, which normalising the index would allow, but tokens, modify indexes and
// the histories are indexes too, so a normalised key would have to renumber them all; we
// keep it exact and bound the depth instead.
//
// A state is kept as the SHA-256 of those bytes and the first path found to it. To expand
// it, its path is replayed on a fresh state machine that never restores (which rebuilds
// the bytes and must hash to the key: determinism), and every letter is applied to its own
// fresh state machine restored from those bytes: so every transition is applied by a
// restored state machine, and the replay makes restore-then-apply and apply agree.
//
// At every transition, duplicates included (two paths to the same bytes must both agree
// with the model):
//   - status, quota and token agree with the reference model (pmodel, prims_model_test.go),
//     and so do cluster time, every lock's mode, holders, owners and queue, every
//     semaphore's limit, permits and queue, every election's leader, token, value and
//     candidates, every lease's TTL and deadline (checkPrims);
//   - SAFETY.md §1 and §10: one exclusive holder or only shared holders, permits within
//     the limit, one leader, and the state's own cross references between leases and what
//     they hold and wait for, nothing grantable left waiting (checkPrims,
//     checkPrimsConsistent);
//   - §2 and §10.4: every grant event's token is the entry's index, every grant in the
//     state either was there before the entry with the same token or carries the entry's
//     index (so tokens strictly increase per primitive along every path, the index being
//     above every earlier index);
//   - §0: cluster time never goes back.
//
// At every distinct state, the last level's included:
//   - §6: restore(encode) re-encodes to the same bytes; replaying the state's path on a
//     fresh state machine gives the same bytes (determinism); and the snapshot action:
//     Snapshot at the path's middle and end, Persist each through the shadow, each equal
//     to the live state's bytes when Snapshot was called, and the persisted bytes restore
//     to the same state.

// exLease are the leases of the alphabet: a TTL each, distinct so that deadlines differ.
var (
	exLeases = []LeaseID{{0xE1, 1}, {0xE2, 2}, {0xE3, 3}}
	exTTL    = []int64{1000, 1500, 2000}
	exNames  = []string{"a", "b", "s", "e"} // the locks, the semaphore, the election
)

const (
	exWait     = 600             // the wait of a waiting request, shorter than every TTL
	exBaseTime = 1000            // cluster time at the root, above zero so that sums can wrap
	exSemLimit = 2               // the semaphore's limit
	exLeap     = 2 * MaxTimeStep // how far ahead of cluster time a leaping leader's clock is
)

// exAction is one letter of the alphabet; cmd builds it from the model's state, or it is
// nil for the snapshot action.
type exAction struct {
	name string
	cmd  func(m *pmodel) Command
}

func exAlphabet() []exAction {
	var as []exAction
	add := func(name string, f func(m *pmodel) Command) { as = append(as, exAction{name, f}) }
	for i := 0; i < 2; i++ {
		i, id, ttl, owner := i, exLeases[i], exTTL[i], fmt.Sprintf("o%d", i+1)
		grant := func(t Type, name string, wait int64) func(m *pmodel) Command {
			return func(m *pmodel) Command {
				return Command{Type: t, Now: m.time, Lease: id, Name: name, Wait: wait, Owner: owner, NewLease: true, TTL: ttl, Limit: exSemLimit, Value: owner}
			}
		}
		l := fmt.Sprintf("L%d", i+1)
		add(l+" acquire a", grant(TypeAcquire, "a", 0))
		add(l+" acquire a wait", grant(TypeAcquire, "a", exWait))
		add(l+" acquire-shared a", grant(TypeAcquireShared, "a", 0))
		add(l+" acquire-shared a wait", grant(TypeAcquireShared, "a", exWait))
		add(l+" release a", func(m *pmodel) Command {
			return Command{Type: TypeRelease, Now: m.time, Lease: id, Name: "a", Token: exLockToken(m, "a", id)}
		})
		add(l+" dequeue a", func(m *pmodel) Command { return Command{Type: TypeDequeue, Now: m.time, Lease: id, Name: "a"} })
		add(l+" sem-acquire s", grant(TypeSemAcquire, "s", 0))
		add(l+" sem-acquire s wait", grant(TypeSemAcquire, "s", exWait))
		add(l+" sem-release s", func(m *pmodel) Command {
			return Command{Type: TypeSemRelease, Now: m.time, Lease: id, Name: "s", Token: exSemToken(m, id)}
		})
		add(l+" campaign e", grant(TypeCampaign, "e", 0))
		add(l+" campaign e wait", grant(TypeCampaign, "e", exWait))
		add(l+" resign e", func(m *pmodel) Command {
			return Command{Type: TypeResign, Now: m.time, Lease: id, Name: "e", Token: exElectionToken(m, id)}
		})
		add(l+" keepalive", func(m *pmodel) Command { return Command{Type: TypeRenew, Now: m.time, Leases: []LeaseID{id}} })
		add(l+" revoke", func(m *pmodel) Command { return Command{Type: TypeRevoke, Now: m.time, Lease: id} })
	}
	add("L1 release a stale", func(m *pmodel) Command {
		return Command{Type: TypeRelease, Now: m.time, Lease: exLeases[0], Name: "a", Token: exLockToken(m, "a", exLeases[0]) - 1}
	})
	add("L3 acquire a wait", func(m *pmodel) Command {
		return Command{Type: TypeAcquire, Now: m.time, Lease: exLeases[2], Name: "a", Wait: exWait, Owner: "o3", NewLease: true, TTL: exTTL[2]}
	})
	add("L3 sem-acquire s wait", func(m *pmodel) Command {
		return Command{Type: TypeSemAcquire, Now: m.time, Lease: exLeases[2], Name: "s", Wait: exWait, Owner: "o3", NewLease: true, TTL: exTTL[2], Limit: exSemLimit}
	})
	add("L3 campaign e wait", func(m *pmodel) Command {
		return Command{Type: TypeCampaign, Now: m.time, Lease: exLeases[2], Name: "e", Wait: exWait, Owner: "o3", NewLease: true, TTL: exTTL[2], Value: "o3"}
	})
	// Lock b, exclusive only: a lease that ends hands two locks over in one entry.
	add("L1 acquire b", func(m *pmodel) Command {
		return Command{Type: TypeAcquire, Now: m.time, Lease: exLeases[0], Name: "b", Owner: "o1", NewLease: true, TTL: exTTL[0]}
	})
	add("L2 acquire b wait", func(m *pmodel) Command {
		return Command{Type: TypeAcquire, Now: m.time, Lease: exLeases[1], Name: "b", Wait: exWait, Owner: "o2", NewLease: true, TTL: exTTL[1]}
	})
	add("L1 release b", func(m *pmodel) Command {
		return Command{Type: TypeRelease, Now: m.time, Lease: exLeases[0], Name: "b", Token: exLockToken(m, "b", exLeases[0])}
	})
	add("L2 acquire a wait forever", func(m *pmodel) Command {
		return Command{Type: TypeAcquire, Now: m.time, Lease: exLeases[1], Name: "a", Wait: math.MaxInt64, Owner: "o2", NewLease: true, TTL: exTTL[1]}
	})
	add("L2 create leaping", func(m *pmodel) Command {
		return Command{Type: TypeCreateLease, Now: m.time + exLeap, Lease: exLeases[1], TTL: exTTL[1]}
	})
	add("tick to deadline", func(m *pmodel) Command {
		next, ok := exNextDeadline(m)
		if !ok {
			next = m.time
		}
		return Command{Type: TypeTick, Now: next}
	})
	add("tick before deadline", func(m *pmodel) Command {
		next, ok := exNextDeadline(m)
		if !ok {
			next = m.time + 1
		}
		return Command{Type: TypeTick, Now: max(m.time, next-1)}
	})
	add("tick late", func(m *pmodel) Command { return Command{Type: TypeTick, Now: m.time - 1} })
	as = append(as, exAction{name: "snapshot+restore"})
	return as
}

// exLockToken is lease id's token on a lock per the model, or else the token of the
// lock's oldest grant (a release by a lease that does not hold it), or 1.
func exLockToken(m *pmodel, name string, id LeaseID) uint64 {
	lk := m.locks[name]
	if lk == nil {
		return 1
	}
	if i := holdsIn(lk.holders, id); i >= 0 {
		return lk.holders[i].token
	}
	return lk.holders[0].token
}

func exSemToken(m *pmodel, id LeaseID) uint64 {
	sm := m.sems["s"]
	if sm == nil {
		return 1
	}
	if i := holdsIn(sm.permits, id); i >= 0 {
		return sm.permits[i].token
	}
	return sm.permits[0].token
}

func exElectionToken(m *pmodel, id LeaseID) uint64 {
	if el := m.elections["e"]; el != nil {
		return el.leader.token
	}
	return 1
}

// exNextDeadline is the earliest pending deadline of a lease or a waiter, per the model.
func exNextDeadline(m *pmodel) (int64, bool) {
	next, ok := int64(0), false
	see := func(d int64) {
		if !ok || d < next {
			next, ok = d, true
		}
	}
	for _, l := range m.leases {
		see(l.deadline)
	}
	for _, lk := range m.locks {
		for _, w := range lk.queue {
			see(w.deadline)
		}
	}
	for _, sm := range m.sems {
		for _, w := range sm.queue {
			see(w.deadline)
		}
	}
	for _, el := range m.elections {
		for _, w := range el.queue {
			see(w.deadline)
		}
	}
	return next, ok
}

// exRoot is the first entry: protocol version 2, at the base time.
var exRoot = Command{Type: TypeSetVersion, Version: 2, Now: exBaseTime}

// exBounds reads the bounds: RAFTLOCK_EXHAUSTIVE_DEPTH (default exDefaultDepth) and
// RAFTLOCK_EXHAUSTIVE_BUDGET, a Go duration after which the search stops (default none).
func exBounds(t *testing.T) (depth int, budget time.Duration) {
	depth = exDefaultDepth
	if v := os.Getenv("RAFTLOCK_EXHAUSTIVE_DEPTH"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 1 {
			t.Fatalf("RAFTLOCK_EXHAUSTIVE_DEPTH=%q: want a positive integer", v)
		}
		depth = d
	}
	if v := os.Getenv("RAFTLOCK_EXHAUSTIVE_BUDGET"); v != "" {
		b, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("RAFTLOCK_EXHAUSTIVE_BUDGET=%q: %v", v, err)
		}
		budget = b
	}
	return depth, budget
}

// exDefaultDepth is the bound of `go test ./fsm` (make test, under -race): depth 4 is
// 59,420 states and 163,631 transitions, about 15 s, 45 s under -race on two shared cores,
// and every mutant of the state machine dies by depth 4. make verify runs depth 5.
const exDefaultDepth = 4

// exSearch is the state of one search.
type exSearch struct {
	t        *testing.T
	alphabet []exAction
	g        *pgen // the universe checkPrims walks: leases and names
	states   int   // distinct states checked, the root included
	trans    int   // transitions taken (alphabet letters applied), duplicates included
	events   []Event
	current  []uint8 // the path being checked, for the failure report
}

// exModel replays path on a fresh model; it returns the model and the index of the last
// entry.
func (x *exSearch) exModel(path []uint8) (*pmodel, uint64) {
	m := newPModel()
	m.apply(1, &exRoot)
	index := uint64(1)
	for _, a := range path {
		if x.alphabet[a].cmd == nil {
			continue
		}
		index++
		c := x.alphabet[a].cmd(m)
		m.apply(index, &c)
	}
	return m, index
}

func (x *exSearch) pathString(path []uint8) string {
	var names []string
	for _, a := range path {
		names = append(names, x.alphabet[a].name)
	}
	return fmt.Sprintf("%q", names)
}

// restore returns a fresh state machine restored from data, its events going to x.events.
func (x *exSearch) restore(data []byte, path []uint8) *FSM {
	f := New(func(e Event) { x.events = append(x.events, e) })
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		x.t.Fatalf("after %s: restore: %v", x.pathString(path), err)
	}
	smallArena(f, 1024)
	return f
}

// grants lists every grant of f's primitives as space/name/lease → token.
func exGrants(f *FSM) map[string]uint64 {
	out := map[string]uint64{}
	for _, name := range []string{"a", "b"} {
		for _, h := range f.Lock(name).Holders {
			out[fmt.Sprint("lock/", name, "/", h.Lease)] = h.Token
		}
	}
	for _, h := range f.Semaphore("s").Permits {
		out[fmt.Sprint("sem/", h.Lease)] = h.Token
	}
	if v := f.Election("e"); v.Elected {
		out[fmt.Sprint("election/", v.Leader)] = v.Token
	}
	return out
}

// replay applies path to a state machine that never restores, taking a snapshot at the
// middle of the path and at its end, each persisted through the shadow after the entries
// that follow it were applied; each must be the live state's bytes at Snapshot. It
// returns the final bytes and the persisted ones.
func (x *exSearch) replay(path []uint8) (live, persisted []byte) {
	t := x.t
	f := New(func(Event) {})
	smallArena(f, 256*(len(path)+1))
	m := newPModel()
	f.ApplyCommand(1, &exRoot)
	m.apply(1, &exRoot)
	index := uint64(1)
	var midSnap, midWant []byte
	var midTaken bool
	var pending []func()
	cmds := 0
	for _, a := range path {
		if x.alphabet[a].cmd != nil {
			cmds++
		}
	}
	seen := 0
	for _, a := range path {
		if x.alphabet[a].cmd == nil {
			continue
		}
		index++
		c := x.alphabet[a].cmd(m)
		f.ApplyCommand(index, &c)
		m.apply(index, &c)
		seen++
		if seen == cmds/2 && !midTaken && cmds >= 2 {
			midTaken = true
			snap, err := f.Snapshot()
			if err != nil {
				t.Fatalf("after %s: Snapshot: %v", x.pathString(path), err)
			}
			midWant = f.SnapshotBytes()
			pending = append(pending, func() {
				var err error
				midSnap, err = persist(t, snap)
				if err != nil {
					t.Fatalf("after %s: Persist: %v", x.pathString(path), err)
				}
			})
		}
	}
	live = f.SnapshotBytes()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("after %s: Snapshot: %v", x.pathString(path), err)
	}
	for _, p := range pending {
		p()
	}
	if midTaken && !bytes.Equal(midSnap, midWant) {
		t.Fatalf("after %s: the snapshot persisted at entry %d (through the shadow) is not the state it was taken of", x.pathString(path), cmds/2+1)
	}
	persisted, err = persist(t, snap)
	if err != nil {
		t.Fatalf("after %s: Persist: %v", x.pathString(path), err)
	}
	return live, persisted
}

// check compares the state an entry made with the model (m, the parent's, which it
// advances) and checks the invariants of the transition from the parent (its time and
// grants) at index.
func (x *exSearch) check(path []uint8, index uint64, c *Command, got *Result, f *FSM, m *pmodel, parentTime int64, parentGrants map[string]uint64) {
	t := x.t
	t.Helper()
	want, token := m.apply(index, c)
	where := func() string { return "after " + x.pathString(path) }
	if got.Status != want || got.Quota != m.quota {
		t.Fatalf("%s: %s: status %s %q, model says %s %q", where(), c.Type, got.Status, got.Quota, want, m.quota)
	}
	if want == StatusOK && token != 0 && got.Token != token {
		t.Fatalf("%s: %s: token %d, model %d", where(), c.Type, got.Token, token)
	}
	if f.Time() < parentTime {
		t.Fatalf("%s: cluster time went back from %d to %d", where(), parentTime, f.Time())
	}
	checkPrims(t, index, f, m, x.g)
	for _, e := range x.events {
		if e.Kind == EventGranted && e.Token != index {
			t.Fatalf("%s: grant event %+v at entry %d", where(), e, index)
		}
	}
	for k, tok := range exGrants(f) {
		if old, ok := parentGrants[k]; !(ok && old == tok) && tok != index {
			t.Fatalf("%s: %s has token %d at entry %d (before: %d, %v)", where(), k, tok, index, old, ok)
		}
	}
}

// clone is a deep copy of the model.
func (m *pmodel) clone() *pmodel {
	c := &pmodel{time: m.time, limits: m.limits, quota: m.quota,
		leases: make(map[LeaseID]*modelLease, len(m.leases)), locks: make(map[string]*pLock, len(m.locks)),
		sems: make(map[string]*pSem, len(m.sems)), elections: make(map[string]*pElection, len(m.elections))}
	for id, l := range m.leases {
		l := *l
		c.leases[id] = &l
	}
	for n, lk := range m.locks {
		c.locks[n] = &pLock{shared: lk.shared, holders: slices.Clone(lk.holders), queue: slices.Clone(lk.queue)}
	}
	for n, sm := range m.sems {
		c.sems[n] = &pSem{limit: sm.limit, permits: slices.Clone(sm.permits), queue: slices.Clone(sm.queue)}
	}
	for n, el := range m.elections {
		c.elections[n] = &pElection{leader: el.leader, value: el.value, queue: slices.Clone(el.queue)}
	}
	return c
}

func TestFSM_ExhaustiveSmallBounds(t *testing.T) {
	depth, budget := exBounds(t)
	x := &exSearch{t: t, alphabet: exAlphabet(), g: &pgen{ids: exLeases, names: exNames}}
	if len(x.alphabet) > math.MaxUint8 {
		t.Fatal("alphabet too large for a byte per letter")
	}
	start := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed at depth %d, path %s, after %d states and %d transitions, %v",
				len(x.current), x.pathString(x.current), x.states, x.trans, time.Since(start).Round(time.Millisecond))
		}
	})
	root := New(nil)
	if r := root.ApplyCommand(1, &exRoot); r.Status != StatusOK {
		t.Fatalf("root: %s", r.Status)
	}
	level := []exNode{{sha256.Sum256(root.SnapshotBytes()), nil}}
	x.states = 1
	reached, stopped := 0, false
	for d := 1; d <= depth && !stopped; d++ {
		next := map[[32]byte]bool{}
		var found []exNode // the next level in discovery order, for a deterministic search
		for _, n := range level {
			if budget > 0 && time.Since(start) > budget {
				stopped = true
				break
			}
			x.expand(n, next, &found)
		}
		if stopped {
			break
		}
		reached = d
		t.Logf("depth %d: %d new states (%d states, %d transitions in all), %v", d, len(found), x.states, x.trans, time.Since(start).Round(time.Millisecond))
		level = found
	}
	// The last level's states were checked against the model as they were found; their
	// snapshots and determinism are checked here, without expanding them.
	if !stopped {
		for _, n := range level {
			x.stateChecks(n)
		}
	}
	t.Logf("exhaustive: alphabet of %d letters, depth %d reached (bound %d), %d states, %d transitions, %v",
		len(x.alphabet), reached, depth, x.states, x.trans, time.Since(start).Round(time.Millisecond))
}

// exNode is a state of the search: the SHA-256 of its snapshot bytes (the dedup key) and
// the first path found to it. Its bytes are not kept: the replay of the path rebuilds
// them, and must (determinism).
type exNode struct {
	key  [32]byte
	path []uint8
}

// stateChecks are the checks of a state that do not depend on the entry that made it: the
// path replayed on a fresh state machine gives the state's bytes, restore re-encodes to
// them, and the snapshot action (Snapshot, Persist through the shadow, Restore) leads back
// to the same state. It returns the state's bytes and a state machine restored from them.
func (x *exSearch) stateChecks(n exNode) ([]byte, *FSM) {
	t := x.t
	x.current = n.path
	data, persisted := x.replay(n.path)
	if sha256.Sum256(data) != n.key {
		t.Fatalf("after %s: replaying the path on a fresh state machine gives other bytes than the search found", x.pathString(n.path))
	}
	if !bytes.Equal(persisted, data) {
		t.Fatalf("after %s: the snapshot persisted through the shadow is not the state", x.pathString(n.path))
	}
	// The persisted bytes are the state's, so restoring them is restoring the state.
	f := x.restore(persisted, n.path)
	if !bytes.Equal(f.SnapshotBytes(), data) {
		t.Fatalf("after %s: encode, restore, encode differs", x.pathString(n.path))
	}
	return data, f
}

// expand checks a state and applies every letter to a copy of it, restored from its bytes,
// adding the new states to next and found. Every transition is checked against the model,
// a duplicate one too: two paths to the same bytes must both agree with the model.
func (x *exSearch) expand(n exNode, next map[[32]byte]bool, found *[]exNode) {
	data, parent := x.stateChecks(n)
	parentTime, parentGrants := parent.Time(), exGrants(parent)
	m, index := x.exModel(n.path)
	index++
	for a, act := range x.alphabet {
		x.trans++
		if act.cmd == nil {
			continue // snapshot+restore: stateChecks took it from this state, back to it
		}
		child := append(slices.Clip(n.path), uint8(a))
		x.current = child
		f := x.restore(data, n.path)
		x.events = x.events[:0]
		c := act.cmd(m)
		got := f.ApplyCommand(index, &c)
		x.check(child, index, &c, got, f, m.clone(), parentTime, parentGrants)
		key := sha256.Sum256(f.SnapshotBytes())
		if next[key] {
			continue
		}
		next[key] = true
		*found = append(*found, exNode{key, child})
		x.states++
	}
}

// smallArena gives f's retention of applied entries (shadow.go) a small first chunk: the
// search makes a state machine per transition, each applying an entry or a few, and
// retain's 64 KiB chunk per state machine was most of the search's allocation. Where the
// entries' bytes live changes nothing else.
func smallArena(f *FSM, n int) {
	f.mu.Lock()
	f.ret.arena = make([]byte, 0, n)
	f.mu.Unlock()
}
