package checker

import (
	"fmt"
	"sort"
)

// obs is a token observed on a lock: a grant, or a read of a held lock.
type obs struct {
	op    Op
	owner string
	grant bool
}

// CheckTokens checks, per lock over the whole run: no two leases were given or shown the
// same token; no operation saw a token lower than one seen by an operation that returned
// before it was called; and a lease that released a lock and took it again got a larger
// token.
func CheckTokens(ops []Op) *Verdict {
	v := newVerdict("tokens")
	locks := byLock(ops, func(o Op) bool {
		return o.Outcome == OutOK && ((o.Kind == KindAcquire) || (o.Kind == KindStatus && o.Held) || o.Kind == KindRelease)
	})
	for _, name := range sortedKeys(locks) {
		var all []obs
		var releases []Op
		for _, o := range locks[name] {
			switch o.Kind {
			case KindAcquire:
				all = append(all, obs{op: o, owner: o.Owner, grant: true})
			case KindStatus:
				all = append(all, obs{op: o, owner: o.StatusOwner})
			case KindRelease:
				releases = append(releases, o)
			}
		}
		v.Checked += len(all)
		// (a) one owner per token.
		ownerOf := map[uint64]obs{}
		for _, x := range all {
			if prev, ok := ownerOf[x.op.Token]; ok && prev.owner != x.owner {
				v.add("token_shared", fmt.Sprintf("lock %s: token %d given to %s (%s) and to %s (%s)", name, x.op.Token, prev.owner, prev.op, x.owner, x.op))
			} else if !ok {
				ownerOf[x.op.Token] = x
			}
		}
		// (b) never backwards in real time.
		byRet := append([]obs(nil), all...)
		sort.Slice(byRet, func(i, j int) bool { return byRet[i].op.Return < byRet[j].op.Return })
		byCall := append([]obs(nil), all...)
		sort.Slice(byCall, func(i, j int) bool { return byCall[i].op.Call < byCall[j].op.Call })
		k := 0
		var best obs
		for _, x := range byCall {
			for k < len(byRet) && byRet[k].op.Return < x.op.Call {
				if byRet[k].op.Token > best.op.Token {
					best = byRet[k]
				}
				k++
			}
			if x.op.Token < best.op.Token {
				v.add("token_backwards", fmt.Sprintf("lock %s: %s saw token %d after %s had seen %d", name, x.op, x.op.Token, best.op, best.op.Token))
			}
		}
		// (c) a lease's next grant after its release is larger.
		last := map[string]Op{}
		for _, x := range byCall {
			if !x.grant {
				continue
			}
			if prev, ok := last[x.owner]; ok && x.op.Token <= prev.Token && prev.Token != 0 {
				for _, r := range releases {
					if r.Owner == x.owner && r.Token == prev.Token && r.Call > prev.Return && r.Return < x.op.Call {
						v.add("token_reused", fmt.Sprintf("lock %s: %s released token %d (%s) and was granted %d again (%s)", name, x.owner, prev.Token, r, x.op.Token, x.op))
						break
					}
				}
			}
			last[x.owner] = x.op
		}
	}
	return v
}
