package fsm

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
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
// The root is the newest protocol version (Version) at cluster time exBaseTime, and the
// alphabet (exAlphabet) produces every command type this code knows, which
// TestFSM_ExhaustiveAlphabetCoversEveryCommand checks against the registry, so that a new
// command cannot be left out. The letters act on three leases (L1 and L2 with every lock,
// semaphore and election command, L3 mostly waiting), a lock taken in both modes (a), a
// second lock taken exclusively (b), the lockset {a, b} in both modes, a semaphore of
// limit 2 (s), an election (e), one ACL token whose leases the ownership letters use, and
// the cluster's own commands (versions, nodes, limits). A command is a function of the
// reference model's state only where the real client would read the state first: a
// release carries the releasing lease's current token (or a stale one), a tick is stamped
// at the next pending deadline (or one millisecond before it). Every other command is
// stamped at the current cluster time, except a late tick (stamped one millisecond in the
// past) and a leap (a lease created by a leader two days ahead of cluster time, which
// clamps the step).
//
// The dedup key is the whole snapshot encoding, byte for byte: applied index, cluster time,
// leases, locks, queues, histories, semaphores, elections, lock delays, maximum holds,
// waiting locksets, ACLs, nodes. Nothing is normalised. Every command uses one log index
// and a snapshot none, so the applied index is the depth plus one and two paths meet only
// at the same depth: the search is a DAG of levels, dedup is within a level (only the next
// level's keys are kept), and a state is never revisited at another depth, which
// normalising the index would allow, but tokens, modify indexes and the histories are
// indexes too, so a normalised key would have to renumber them all; we keep it exact and
// bound the depth instead.
//
// A state is kept as the SHA-256 of those bytes and the first path found to it. To expand
// it, its path is replayed on a fresh state machine that never restores (which rebuilds
// the bytes and must hash to the key: determinism), and every letter is applied to its own
// fresh state machine restored from those bytes: so every transition is applied by a
// restored state machine, and the replay makes restore-then-apply and apply agree.
//
// At every transition, duplicates included (two paths to the same bytes must both agree
// with the model):
//   - status, quota, token and a lockset's tokens agree with the reference model (pmodel,
//     primitives_model_test.go), which decides deadlocks by simulation, not by a wait-for graph;
//     and so do cluster time, every lock's mode, holders, owners, queue, lock delay and
//     maximum hold, every semaphore's limit, permits and queue, every election's leader,
//     token, value and candidates, every lease's TTL, deadline and creator (checkPrims),
//     and the version, limits, nodes, node versions, ACL tokens and policies (exCheckRest);
//   - SAFETY.md §1, §10 and §11: one exclusive holder or only shared holders, permits
//     within the limit, one leader, and the state's own cross references between leases
//     and what they hold and wait for, nothing grantable left waiting (checkPrims,
//     checkPrimsConsistent);
//   - §2 and §10.4: every grant event's token is the entry's index, every grant in the
//     state either was there before the entry with the same token or carries the entry's
//     index (so tokens strictly increase per primitive along every path, the index being
//     above every earlier index);
//   - §0: cluster time never goes back.
//
// After the last complete level, its first states in discovery order are expanded once
// more (exBeyond): a deterministic part of the next level, whose transitions get every
// check below and whose states get none of the state checks.
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
	exSet    = []string{"a", "b"}           // the lockset
)

const (
	exWait     = 600             // the wait of a waiting request, shorter than every TTL
	exBaseTime = 1000            // cluster time at the root, above zero so that sums can wrap
	exSemLimit = 2               // the semaphore's limit
	exLeap     = 2 * MaxTimeStep // how far ahead of cluster time a leaping leader's clock is
	exHold     = 300             // a maximum hold, shorter than every wait and TTL
	exDelay    = 400             // a lock delay
	exRootACL  = "0a-0"          // the accessor ACL bootstrap creates
	exToken    = "0c-1"          // the accessor of the token whose leases the ownership letters use
	exPolicy   = "p"             // the policy the policy letters set and delete
	exNodeID   = "n1"            // the node the node letters register and remove
)

// exLimits are the quotas the limits letter sets: each binds within a few letters.
var exLimits = Limits{MaxLeases: 2, MaxLocksPerLease: 1, MaxWaitersPerLock: 1}

// exIdentityLimits are what the letter of version 5's limits sets: the cluster-wide grants
// and waits, and an identity's defaults, each binding within a few letters.
var exIdentityLimits = Limits{MaxLocks: 3, MaxWaiters: 2, PerIdentity: Quotas{MaxLeases: 1, MaxLocks: 1, MaxWaiters: 1}}

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
		id, ttl, owner := exLeases[i], exTTL[i], fmt.Sprintf("o%d", i+1)
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
			return Command{Type: TypeResign, Now: m.time, Lease: id, Name: "e", Token: exElectionToken(m)}
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

	// Version 3: maximum holds and lock delays, locksets (deadlocks come from these with
	// the letters above: L1 acquire b, L2 lockset a b, L1 acquire a wait).
	ex := func(t Type, i int, wait int64, shared bool, hold, delay int64) func(m *pmodel) Command {
		return func(m *pmodel) Command {
			c := Command{Type: t, Now: m.time, Lease: exLeases[i], Name: "a", Wait: wait, Owner: fmt.Sprintf("o%d", i+1),
				NewLease: true, TTL: exTTL[i], Shared: shared, MaxHold: hold, LockDelay: delay}
			if t == TypeLockSet {
				c.Name, c.Names = "", exSet
			}
			return c
		}
	}
	add("L1 acquire-ex a hold delay", ex(TypeAcquireEx, 0, 0, false, exHold, exDelay))
	add("L2 acquire-ex a hold delay wait", ex(TypeAcquireEx, 1, exWait, false, exHold, exDelay))
	add("L2 acquire-ex a shared hold wait", ex(TypeAcquireEx, 1, exWait, true, exHold, 0))
	add("L1 lockset a b", ex(TypeLockSet, 0, 0, false, 0, 0))
	add("L2 lockset a b delay wait", ex(TypeLockSet, 1, exWait, false, 0, exDelay))
	add("L3 lockset a b shared hold wait", ex(TypeLockSet, 2, exWait, true, exHold, 0))
	for i := 0; i < 2; i++ {
		id := exLeases[i]
		add(fmt.Sprintf("L%d lockset-release a b", i+1), func(m *pmodel) Command {
			return Command{Type: TypeLockSetRelease, Now: m.time, Lease: id, Names: exSet, Tokens: m.holdingTokens(exSet, id)}
		})
	}
	add("L2 sem-acquire-ex s hold wait", func(m *pmodel) Command {
		return Command{Type: TypeSemAcquireEx, Now: m.time, Lease: exLeases[1], Name: "s", Wait: exWait, Owner: "o2", NewLease: true, TTL: exTTL[1], Limit: exSemLimit, MaxHold: exHold}
	})
	add("L2 sem-dequeue s", func(m *pmodel) Command {
		return Command{Type: TypeSemDequeue, Now: m.time, Lease: exLeases[1], Name: "s"}
	})
	add("L2 election-dequeue e", func(m *pmodel) Command {
		return Command{Type: TypeElectionDequeue, Now: m.time, Lease: exLeases[1], Name: "e"}
	})
	add("L1 proclaim e", func(m *pmodel) Command {
		return Command{Type: TypeCampaign, Now: m.time, Lease: exLeases[0], Name: "e", Owner: "o1", Value: "v1", Token: exElectionToken(m)}
	})

	// Version 4: lease ownership. The token's leases, another caller's use of them, and
	// the ACL commands that make and delete the token.
	add("token: L1 acquire b", func(m *pmodel) Command {
		return Command{Type: TypeAcquire, Now: m.time, Lease: exLeases[0], Name: "b", Owner: "o1", NewLease: true, TTL: exTTL[0], Creator: exToken}
	})
	add("anonymous: L1 acquire b", func(m *pmodel) Command {
		return Command{Type: TypeAcquire, Now: m.time, Lease: exLeases[0], Name: "b", Owner: "o1", NewLease: true, TTL: exTTL[0], Creator: CallerAnonymous}
	})
	add("anonymous: keepalive L1 L2", func(m *pmodel) Command {
		return Command{Type: TypeRenew, Now: m.time, Leases: exLeases[:2], Callers: []string{CallerAnonymous, CallerAnonymous}}
	})
	add("acl bootstrap", func(m *pmodel) Command {
		return Command{Type: TypeACLBootstrap, Now: m.time, ACL: ACLCommand{Accessor: exRootACL, SecretHash: ACLSecretHash("exhaustive root")}}
	})
	add("acl set token", func(m *pmodel) Command {
		return Command{Type: TypeACLSetToken, Now: m.time, ACL: ACLCommand{Accessor: exToken, SecretHash: ACLSecretHash("exhaustive token")}}
	})
	add("acl delete token", func(m *pmodel) Command {
		return Command{Type: TypeACLDeleteToken, Now: m.time, ACL: ACLCommand{Accessor: exToken}}
	})
	add("acl set policy", func(m *pmodel) Command {
		return Command{Type: TypeACLSetPolicy, Now: m.time, ACL: ACLCommand{Policy: exPolicy, Rules: []ACLRule{{Prefix: "x/", Access: AccessRead}}}}
	})
	add("acl delete policy", func(m *pmodel) Command {
		return Command{Type: TypeACLDeletePolicy, Now: m.time, ACL: ACLCommand{Policy: exPolicy}}
	})

	// Version 5: quotas per identity, from the cluster's defaults, a policy and a token.
	add("set limits per identity", func(m *pmodel) Command { return Command{Type: TypeSetLimits, Now: m.time, Limits: exIdentityLimits} })
	add("acl set policy quotas", func(m *pmodel) Command {
		return Command{Type: TypeACLSetPolicy, Now: m.time, ACL: ACLCommand{Policy: exPolicy, Rules: []ACLRule{{Prefix: "x/", Access: AccessRead}}, Quotas: Quotas{MaxLeases: 2, MaxWaiters: 2}}}
	})
	add("acl set token quotas", func(m *pmodel) Command {
		return Command{Type: TypeACLSetToken, Now: m.time, ACL: ACLCommand{Accessor: exToken, SecretHash: ACLSecretHash("exhaustive token"), Policies: []string{exPolicy}, Quotas: Quotas{MaxLocks: 2}}}
	})

	// The cluster's own commands.
	add("set version", func(m *pmodel) Command { return Command{Type: TypeSetVersion, Now: m.time, Version: Version} })
	add("node version", func(m *pmodel) Command {
		return Command{Type: TypeNodeVersion, Now: m.time, Node: NodeInfo{ID: exNodeID}, Version: Version}
	})
	add("register node", func(m *pmodel) Command {
		return Command{Type: TypeRegisterNode, Now: m.time, Node: NodeInfo{ID: exNodeID, RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"}}
	})
	add("remove node", func(m *pmodel) Command {
		return Command{Type: TypeRemoveNode, Now: m.time, Node: NodeInfo{ID: exNodeID}}
	})
	add("set limits", func(m *pmodel) Command { return Command{Type: TypeSetLimits, Now: m.time, Limits: exLimits} })
	as = append(as, exAction{name: "snapshot+restore"})
	return as
}

// exLockToken is lease id's token on a lock per the model, or else the token of the
// lock's oldest grant (a release by a lease that does not hold it), or 1.
func exLockToken(m *pmodel, name string, id LeaseID) uint64 {
	lk := m.locks[name]
	if lk == nil || len(lk.holders) == 0 {
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

// exElectionToken is the leader's token, or 1.
func exElectionToken(m *pmodel) uint64 {
	if el := m.elections["e"]; el != nil {
		return el.leader.token
	}
	return 1
}

// exNextDeadline is the earliest pending deadline per the model: of a lease, a waiter, a
// maximum hold or a lock delay.
func exNextDeadline(m *pmodel) (int64, bool) {
	if len(m.revoking) > 0 {
		return m.time, true // a deleted token's leases are left to sweep (version 6)
	}
	next, ok := int64(0), false
	see := func(d int64) {
		if d != 0 && (!ok || d < next) {
			next, ok = d, true
		}
	}
	for _, l := range m.leases {
		see(l.deadline)
	}
	seeAll := func(q []pWaiter, hs []pHold) {
		for _, w := range q {
			see(w.deadline)
		}
		for _, h := range hs {
			see(h.maxUntil)
		}
	}
	for _, lk := range m.locks {
		seeAll(lk.queue, lk.holders)
		see(lk.delayUntil)
	}
	for _, sm := range m.sems {
		seeAll(sm.queue, sm.permits)
	}
	for _, el := range m.elections {
		seeAll(el.queue, nil)
	}
	return next, ok
}

// exRoot is the first entry: the newest protocol version, at the base time.
var exRoot = Command{Type: TypeSetVersion, Version: Version, Now: exBaseTime}

// exBudget is the sweep's budget per entry in the search (version 6): small enough that a
// lease holding two locks and waiting for one is swept over several entries.
const exBudget = 2

// exNew is a state machine of the search: its events go to observe, and each entry sweeps
// at most exBudget units.
func exNew(observe func(Event)) *FSM {
	return NewWithOptions(Options{Observe: observe, sweepBudget: exBudget})
}

// exNewModel is the search's reference model, with the same budget.
func exNewModel() *pmodel {
	m := newPModel()
	m.budgetMax = exBudget
	return m
}

// exCheckRest compares what checkPrims does not with the model: the version, the limits,
// the nodes and their versions, and the ACL tokens and policies.
func exCheckRest(t *testing.T, where func() string, f *FSM, m *pmodel) {
	t.Helper()
	if f.Version() != m.version || f.Limits() != m.limits {
		t.Fatalf("%s: version %d, limits %+v; model %d, %+v", where(), f.Version(), f.Limits(), m.version, m.limits)
	}
	nodes := f.Nodes()
	if n, ok := m.nodes[exNodeID]; len(nodes) != len(m.nodes) || ok && nodes[0] != n {
		t.Fatalf("%s: nodes %+v, model %+v", where(), nodes, m.nodes)
	}
	if v, ok := f.NodeVersion(exNodeID); v != m.nodeVersions[exNodeID] || ok != (m.nodeVersions[exNodeID] != 0) {
		t.Fatalf("%s: node version %d %v, model %d", where(), v, ok, m.nodeVersions[exNodeID])
	}
	var tokens, policies []string
	for _, tv := range f.ACLTokens() {
		tokens = append(tokens, tv.Accessor)
	}
	for _, pv := range f.ACLPolicies() {
		policies = append(policies, pv.Name)
	}
	slices.Sort(tokens)
	slices.Sort(policies)
	if !slices.Equal(tokens, slices.Sorted(maps.Keys(m.acl.tokens))) || !slices.Equal(policies, slices.Sorted(maps.Keys(m.acl.policies))) ||
		f.ACLBootstrapped() != m.acl.bootstrapped {
		t.Fatalf("%s: ACL tokens %v, policies %v; model %v, %v", where(), tokens, policies, slices.Sorted(maps.Keys(m.acl.tokens)), slices.Sorted(maps.Keys(m.acl.policies)))
	}
	checkUsage(t, where, f, m, []string{"", exToken, CallerAnonymous})
}

// checkUsage compares each identity's use and quotas, the policies' and tokens' quotas,
// and the cluster's totals with the model's.
func checkUsage(t *testing.T, where func() string, f *FSM, m *pmodel, ids []string) {
	t.Helper()
	for _, pv := range f.ACLPolicies() {
		if pv.Quotas != m.acl.policies[pv.Name].quotas {
			t.Fatalf("%s: policy %s quotas %+v, model %+v", where(), pv.Name, pv.Quotas, m.acl.policies[pv.Name].quotas)
		}
	}
	for _, tv := range f.ACLTokens() {
		if tv.Quotas != m.acl.tokens[tv.Accessor].quotas {
			t.Fatalf("%s: token %s quotas %+v, model %+v", where(), tv.Accessor, tv.Quotas, m.acl.tokens[tv.Accessor].quotas)
		}
	}
	for _, id := range ids {
		leases, locks, waits := m.modelUse(func(x LeaseID) bool { return m.creators[x] == id })
		want := UsageView{Identity: id, Leases: uint64(leases), Locks: uint64(locks), Waiters: uint64(waits), Quotas: m.modelQuotas(id)}
		if id == "" {
			want.Quotas = Quotas{MaxLeases: m.limits.MaxLeases, MaxLocks: m.limits.MaxLocks, MaxWaiters: m.limits.MaxWaiters}
		}
		if got := f.Usage(id); got != want {
			t.Fatalf("%s: usage of %q %+v, model %+v", where(), id, got, want)
		}
	}
	leases, locks, waits := m.modelUse(func(LeaseID) bool { return true })
	if l, k, w := f.Totals(); l != uint64(leases) || k != uint64(locks) || w != uint64(waits) {
		t.Fatalf("%s: totals %d leases %d grants %d waits, model %d %d %d", where(), l, k, w, leases, locks, waits)
	}
}

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

// exBeyond reads RAFTLOCK_EXHAUSTIVE_BEYOND (default exDefaultBeyond): how many states of
// the last complete level, in discovery order, are expanded once more. Their transitions
// one level deeper get every check of a transition; the states they reach are not checked
// further (no replay, no snapshot). The discovery order is deterministic, so this part of
// the next level is the same on every run; it is where the mutants that need one more
// entry than the full depth gives die (docs/VERIFICATION.md).
func exBeyond(t *testing.T, levelLen int) int {
	n := exDefaultBeyond
	if v := os.Getenv("RAFTLOCK_EXHAUSTIVE_BEYOND"); v != "" {
		b, err := strconv.Atoi(v)
		if err != nil || b < 0 {
			t.Fatalf("RAFTLOCK_EXHAUSTIVE_BEYOND=%q: want a count of states", v)
		}
		n = b
	}
	return min(n, levelLen)
}

// exDefaultBeyond is RAFTLOCK_EXHAUSTIVE_BEYOND's default: 500 states of depth 3, 33,000
// more transitions.
const exDefaultBeyond = 500

// exDefaultDepth is the bound of `go test ./fsm` (make test, under -race): with the
// partial level after it (exDefaultBeyond) every mutant of the state machine dies in it,
// handover-skips-head, which needs four entries, in the partial level
// (docs/VERIFICATION.md gives the depths and counts). Depth 4 in full is about 1.3
// million transitions; make verify runs it.
const exDefaultDepth = 3

// exSearch is the state of one search.
type exSearch struct {
	t        *testing.T
	alphabet []exAction
	g        *pgen // the universe checkPrims walks: leases and names
	states   int   // distinct states checked, the root included
	trans    int   // transitions taken (alphabet letters applied), duplicates included
	events   []Event
	outcomes map[string]int // transitions by command type and status, duplicates included
	current  []uint8        // the path being checked, for the failure report
}

// exModel replays path on a fresh model; it returns the model and the index of the last
// entry.
func (x *exSearch) exModel(path []uint8) (*pmodel, uint64) {
	m := exNewModel()
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
	f := exNew(func(e Event) { x.events = append(x.events, e) })
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		x.t.Fatalf("after %s: restore: %v", x.pathString(path), err)
	}
	smallArena(f, 1024)
	return f
}

// exCheckCycle checks the cycle of request c, refused at index (StatusDeadlock), against
// the state before the entry (parent) and the history after it (f): the first step is the
// request, for a lock it names; each step's Holder is the next step's lease, and holds the
// step's lock under HolderOwner (Holds) or asked for it under HolderOwner ahead of the
// step's lease (the request itself: anywhere in the queue); and the lock of the first
// step, one the request would have waited for, keeps these steps in its history at index
// (version 8), as does every other lock named whose history has the refusal.
func exCheckCycle(t *testing.T, where func() string, index uint64, c *Command, cycle []CycleStep, parent, f *FSM) {
	t.Helper()
	names := c.Names
	if c.Type != TypeLockSet {
		names = []string{c.Name}
	}
	if len(cycle) == 0 || cycle[0].Lease != LeaseFingerprint(c.Lease) || !slices.Contains(names, cycle[0].Lock) {
		t.Fatalf("%s: %s refused with the cycle %+v", where(), c.Type, cycle)
	}
	for i, st := range cycle {
		v := parent.LockQueue(st.Lock, -1)
		pos := len(v.Queue) // the request is behind everything queued
		if i > 0 {
			pos = slices.IndexFunc(v.Queue, func(w Waiting) bool { return LeaseFingerprint(w.Lease) == st.Lease })
		}
		blocks := false
		if st.Holds {
			blocks = slices.ContainsFunc(v.Holders, func(h Holding) bool { return LeaseFingerprint(h.Lease) == st.Holder && h.Owner == st.HolderOwner })
		} else if pos >= 0 {
			blocks = slices.ContainsFunc(v.Queue[:pos], func(w Waiting) bool { return LeaseFingerprint(w.Lease) == st.Holder && w.Owner == st.HolderOwner })
		}
		if pos < 0 || !blocks || st.Holder != cycle[(i+1)%len(cycle)].Lease {
			t.Fatalf("%s: step %d of the cycle %+v is no wait of the state before: lock %+v", where(), i, cycle, v)
		}
	}
	for _, name := range names {
		h := f.History(name)
		refused := len(h) > 0 && h[len(h)-1].Kind == HistoryDeadlock && h[len(h)-1].Index == index
		if (refused || name == cycle[0].Lock) && !(refused && slices.Equal(h[len(h)-1].Cycle.Steps, cycle)) {
			t.Fatalf("%s: the history of %q does not end with the refusal's cycle %+v: %+v", where(), name, cycle, h)
		}
	}
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
	f := exNew(func(Event) {})
	smallArena(f, 256*(len(path)+1))
	m := exNewModel()
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
func (x *exSearch) check(path []uint8, index uint64, c *Command, got *Result, f, parent *FSM, m *pmodel, parentTime int64, parentGrants map[string]uint64) {
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
	if c.Type == TypeLockSet && (want == StatusOK || want == StatusQueued) && !slices.Equal(got.Tokens, m.tokens) {
		t.Fatalf("%s: %s: tokens %v, model %v", where(), c.Type, got.Tokens, m.tokens)
	}
	if got.Status == StatusDeadlock {
		exCheckCycle(t, where, index, c, got.Cycle, parent, f)
	}
	x.outcomes[c.Type.String()+" "+got.Status.String()]++
	if f.Time() < parentTime {
		t.Fatalf("%s: cluster time went back from %d to %d", where(), parentTime, f.Time())
	}
	checkPrims(t, index, f, m, x.g)
	exCheckRest(t, where, f, m)
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

func TestFSM_ExhaustiveSmallBounds(t *testing.T) {
	depth, budget := exBounds(t)
	x := &exSearch{t: t, alphabet: exAlphabet(), g: &pgen{ids: exLeases, names: exNames}, outcomes: map[string]int{}}
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
	root := exNew(nil)
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
	// snapshots and determinism are checked here. The first few of them are expanded once
	// more (the partial level, exBeyond), the rest are not.
	if !stopped {
		beyond := exBeyond(t, len(level))
		next, found := map[[32]byte]bool{}, []exNode(nil)
		for i, n := range level {
			if i < beyond {
				x.expand(n, next, &found)
			} else {
				x.stateChecks(n)
			}
		}
		if beyond > 0 {
			t.Logf("depth %d in part: the first %d states of depth %d expanded, %d new states", reached+1, beyond, reached, len(found))
		}
	}
	t.Logf("exhaustive: alphabet of %d letters, depth %d reached (bound %d), %d states, %d transitions, %v",
		len(x.alphabet), reached, depth, x.states, x.trans, time.Since(start).Round(time.Millisecond))
	// The outcomes that the version 3 and 4 letters exist for, all reachable by depth 3: a
	// search that no longer reaches one of them checks less than it claims.
	if reached >= 3 {
		for _, k := range exWantOutcomes {
			if x.outcomes[k] == 0 {
				t.Errorf("no %q in %d transitions: the alphabet no longer reaches it", k, x.trans)
			}
		}
	}
}

// exWantOutcomes are outcomes the search must reach by depth 3 (see the end of
// TestFSM_ExhaustiveSmallBounds).
var exWantOutcomes = []string{
	"acquire deadlock", "acquire_ex ok", "acquire_ex queued", "lockset ok", "lockset queued",
	"lockset lock_held", "lockset_release ok", "sem_acquire_ex queued", "acquire unauthenticated",
	"acquire lease_not_found", "acl_delete_token ok", "acquire quota_exceeded",
}

// TestFSM_ExhaustiveAlphabetCoversEveryCommand: every command type the registry knows is
// produced by a letter of the exhaustive check's alphabet, and its root runs the newest
// protocol version, so that the next command cannot be left out of the check.
func TestFSM_ExhaustiveAlphabetCoversEveryCommand(t *testing.T) {
	if exRoot.Type != TypeSetVersion || exRoot.Version != Version {
		t.Errorf("the root is %+v, not the newest protocol version %d", exRoot, Version)
	}
	m := exNewModel()
	m.apply(1, &exRoot)
	made := map[Type][]string{}
	var late, leap, forever bool
	for _, a := range exAlphabet() {
		if a.cmd == nil {
			continue
		}
		c := a.cmd(m)
		made[c.Type&^FlagSkippable] = append(made[c.Type&^FlagSkippable], a.name)
		late = late || c.Now < m.time
		leap = leap || c.Now > m.time+MaxTimeStep
		forever = forever || c.Wait == math.MaxInt64
	}
	// The stamps and waits that the time mutants need: without a late stamp time going
	// back is never seen, without a leap the clamp never acts, without an endless wait no
	// deadline saturates.
	if !late || !leap || !forever {
		t.Errorf("the alphabet lacks a command stamped before cluster time (%v), one beyond a step (%v) or an endless wait (%v)", late, leap, forever)
	}
	known := 0
	for i := 1; i < int(FlagSkippable); i++ {
		typ := Type(i)
		if typ.Since() == 0 {
			continue
		}
		known++
		if len(made[typ]) == 0 {
			t.Errorf("command type %d (%s, since version %d) is made by no letter of exAlphabet", i, typ, typ.Since())
		}
	}
	t.Logf("%d command types known, an alphabet of %d letters", known, len(exAlphabet()))
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
		x.check(child, index, &c, got, f, parent, m.clone(), parentTime, parentGrants)
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
