package checker

import (
	"fmt"
	"sort"
	"time"
)

// CheckLockSets checks the lockset workload ("set"): its single acquires, locksets, their
// releases and status reads, and the revokes of its leases, with LockModel, one porcupine
// history per lock. A lockset op is split into one op per lock it names (splitSets): on
// each lock it is an ordinary exclusive acquire (or release) whose token is that lock's,
// so no lock of a set can have two holders and a set's grant must fit every lock's
// history. All-or-none across the locks comes from two more facts: a granted set's tokens
// are all one (the index of the one entry that granted it: "set_tokens_differ"
// otherwise), and a refused set took nothing, so a lock its lock_held answer did not name
// stays free for the model to judge every later operation on it. Maximum holds are in
// the model (lockState.EndAfter).
func CheckLockSets(ops []Op, opt LinOptions) *Verdict {
	split := splitSets(ops)
	v := checkModel("locksets", "set", LockModel, split, opt)
	for _, o := range ops {
		if o.Workload != "set" || o.Kind != KindLockSet || o.Outcome != OutOK {
			continue
		}
		v.Checked++
		if len(o.Tokens) != len(o.Names) {
			v.add("set_answer_incomplete", fmt.Sprintf("%s: %d tokens for %d names", o, len(o.Tokens), len(o.Names)))
			continue
		}
		for _, t := range o.Tokens {
			if t != o.Tokens[0] || t == 0 {
				v.add("set_tokens_differ", fmt.Sprintf("%s: a lockset granted in one commit has one token", o))
				break
			}
		}
	}
	return v
}

// splitSets returns ops with every lockset op (and lockset release) of the set workload
// replaced by one op per lock it names, on that lock, with that lock's token and whether
// the answer named it. The other ops are kept as they are.
func splitSets(ops []Op) []Op {
	out := make([]Op, 0, len(ops))
	for _, o := range ops {
		if o.Kind != KindLockSet && o.Kind != KindLockSetRelease {
			out = append(out, o)
			continue
		}
		named := map[string]bool{}
		for _, n := range o.HeldNames {
			named[n] = true
		}
		for i, name := range o.Names {
			p := o
			p.Lock, p.Token, p.named = name, 0, named[name]
			if i < len(o.Tokens) {
				p.Token = o.Tokens[i]
			}
			out = append(out, p)
		}
	}
	return out
}

// LockDelayWaits counts the grants of the set workload that waited out a lock delay: the
// lock's previous grant (by token) was another lease's, with a lock delay and no maximum
// hold, and ended with its lease (a revoke of it, or no op of it ending the grant: it
// expired), and the grant was asked for before that delay could have ended (the lease's
// end, as the model bounds it, plus the delay). The campaign requires some: without them
// the model's lock delays judge nothing.
func LockDelayWaits(ops []Op) int {
	var ls map[string]*leaseInfo
	n := 0
	locks := byLock(splitSets(ops), func(o Op) bool { return o.Workload == "set" })
	for _, name := range sortedKeys(locks) {
		lockOps := locks[name]
		var gs []Op
		for _, o := range lockOps {
			if (o.Kind == KindAcquire || o.Kind == KindLockSet) && o.Outcome == OutOK {
				gs = append(gs, o)
			}
		}
		sort.Slice(gs, func(i, j int) bool { return gs[i].Token < gs[j].Token })
		for i := 1; i < len(gs); i++ {
			p, g := gs[i-1], gs[i]
			if p.LockDelayMs <= 0 || p.MaxHoldMs > 0 || p.Owner == g.Owner {
				continue
			}
			if ls == nil {
				ls = leases(ops)
			}
			end, ok := leaseEnd(p, name, ops, ls)
			if ok && g.Call < end+p.LockDelayMs*int64(time.Millisecond) {
				n++
			}
		}
	}
	return n
}

// leaseEnd returns the earliest real time at which grant g of lock ended with its lease:
// the call of the lease's first revoke after g, or, when no op of the lease could have
// ended the grant, the end of the lease's protected time (it expired). False when a
// release could have ended it (no lock delay then) or the lease's TTL is unknown.
func leaseEnd(g Op, lock string, ops []Op, ls map[string]*leaseInfo) (int64, bool) {
	first := Op{Call: Never}
	for _, e := range ops {
		if e.Owner == g.Owner && e.Call > g.Call && e.Call < first.Call && ends(e, lock) && e.Outcome != OutUnavailable {
			first = e
		}
	}
	switch {
	case first.Call == Never:
		if l := ls[g.Owner]; l != nil && l.ttl > 0 {
			return l.protected(Never), true
		}
		return 0, false
	case first.Kind == KindRevoke:
		return first.Call, true
	}
	return 0, false
}
