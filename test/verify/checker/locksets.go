package checker

import "fmt"

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
