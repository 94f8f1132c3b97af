package fsm

import (
	"sort"
	"strings"
)

// ACLIdentity is who a request acts as: a token's accessor and policies, or the anonymous
// identity, with the rules of those policies compiled for fast checks. The zero value has
// no rules and so is allowed nothing. It is a value computed from the state at one moment;
// it does not follow later changes.
type ACLIdentity struct {
	// Accessor is the token's public ID; empty for the anonymous identity.
	Accessor string
	// Policies names the policies whose rules the identity holds; it is the caller's copy.
	Policies []string
	rules    *aclRuleSet
}

// aclRuleSet is a set of rules merged for resolution: one rule per prefix, longest prefix
// first (then in byte order, for a canonical form). Since two different prefixes of the
// same length cannot both start one name, the first rule that matches a name is the
// longest match, and it decides. A set is never modified once built, so identities and
// tokens share it across goroutines.
//
// A set whose prefixes have few distinct lengths (the usual "team/service/" layouts) is
// also indexed by prefix: a lookup then costs one map probe per distinct length instead
// of one comparison per rule.
type aclRuleSet struct {
	rules    []ACLRule
	best     Access            // the highest access of any rule, for AnyAccess
	byPrefix map[string]Access // nil when scanning rules is as cheap
	lengths  []int             // the distinct prefix lengths, longest first, with byPrefix
}

// aclProbeCost is about how many prefix comparisons one map probe costs: a set is
// indexed when it has at least this many rules per distinct prefix length.
const aclProbeCost = 4

// combineAccess is the access of two rules with the same prefix: deny wins over any grant
// (an explicit refusal must not be undone by another policy at the same depth), and
// otherwise the higher grant wins.
func combineAccess(a, b Access) Access {
	if a == AccessDeny || b == AccessDeny {
		return AccessDeny
	}
	return max(a, b)
}

// compileRules merges rules into a rule set, or nil when there are none. The result does
// not depend on the order of the rules, so every node compiles the same set.
func compileRules(rules []ACLRule) *aclRuleSet {
	if len(rules) == 0 {
		return nil
	}
	byPrefix := make(map[string]Access, len(rules))
	for _, r := range rules {
		byPrefix[r.Prefix] = combineAccess(byPrefix[r.Prefix], r.Access)
	}
	set := &aclRuleSet{rules: make([]ACLRule, 0, len(byPrefix))}
	for p, a := range byPrefix {
		set.rules = append(set.rules, ACLRule{Prefix: p, Access: a})
		set.best = max(set.best, a)
	}
	sort.Slice(set.rules, func(i, j int) bool {
		a, b := set.rules[i].Prefix, set.rules[j].Prefix
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	for _, r := range set.rules {
		if n := len(set.lengths); n == 0 || set.lengths[n-1] != len(r.Prefix) {
			set.lengths = append(set.lengths, len(r.Prefix))
		}
	}
	if len(set.lengths)*aclProbeCost <= len(set.rules) {
		set.byPrefix = byPrefix
	} else {
		set.lengths = nil
	}
	return set
}

// access returns the access of the longest prefix of name in the set.
func (set *aclRuleSet) access(name string) Access {
	if set.byPrefix != nil {
		for _, n := range set.lengths {
			if n <= len(name) {
				if a, ok := set.byPrefix[name[:n]]; ok {
					return a
				}
			}
		}
		return AccessNone
	}
	for _, r := range set.rules {
		if strings.HasPrefix(name, r.Prefix) {
			return r.Access
		}
	}
	return AccessNone
}

// Access returns the access the identity has on lock name. Among all the rules of all its
// policies, the one with the longest prefix of name decides, so a longer rule can narrow
// (deny, or read inside lock) or widen a shorter one. When several rules have that same
// longest prefix, deny wins if any of them denies, and otherwise the highest access wins.
// AccessNone means no rule matched; callers treat it like AccessDeny.
//
// Access("") is decided by the rules with the empty prefix alone: that is how a
// cluster-wide operation, which names no lock, is checked (see Admin).
func (id ACLIdentity) Access(name string) Access {
	if id.rules == nil {
		return AccessNone
	}
	return id.rules.access(name)
}

// AnyAccess reports whether some rule of the identity grants at least min on some names.
// Lease operations name no lock, and a lease is only useful for the locks it may take, so
// they need AnyAccess(AccessLock) rather than access to one name.
func (id ACLIdentity) AnyAccess(min Access) bool {
	return id.rules != nil && id.rules.best >= min
}

// Admin reports whether the identity has admin on the empty prefix, which cluster
// membership, ACL management and snapshots require. Admin on a longer prefix only covers
// the locks under it.
func (id ACLIdentity) Admin() bool { return id.Access("") >= AccessAdmin }
