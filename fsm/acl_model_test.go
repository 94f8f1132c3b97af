package fsm

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modelACL is the reference for the ACL state: maps and loops, no index, no compiled rules.
type modelACL struct {
	bootstrapped bool
	policies     map[string]modelPolicy
	tokens       map[string]modelToken
}

type modelPolicy struct {
	description string
	rules       []ACLRule
	quotas      Quotas
}

type modelToken struct {
	hash        [32]byte
	description string
	policies    []string
	quotas      Quotas
}

var (
	modelPolicyName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	modelAccessor   = regexp.MustCompile(`^[a-f0-9-]{1,64}$`)
)

func newModelACL() modelACL {
	return modelACL{policies: map[string]modelPolicy{}, tokens: map[string]modelToken{}}
}

func isACL(t Type) bool { return t >= TypeACLBootstrap && t <= TypeACLDeleteToken }

// hashOwner returns the accessor of the token with hash h, if any.
func (a *modelACL) hashOwner(h [32]byte) (string, bool) {
	for acc, t := range a.tokens {
		if t.hash == h {
			return acc, true
		}
	}
	return "", false
}

func (a *modelACL) apply(c *Command) Status {
	cmd := c.ACL
	switch c.Type {
	case TypeACLBootstrap:
		if a.bootstrapped {
			return StatusConflict
		}
		if !modelAccessor.MatchString(cmd.Accessor) || cmd.SecretHash == ([32]byte{}) {
			return StatusInvalid
		}
		if _, used := a.hashOwner(cmd.SecretHash); used {
			return StatusConflict
		}
		if _, exists := a.tokens[cmd.Accessor]; exists {
			return StatusConflict
		}
		a.policies[ACLPolicyGlobalManagement] = modelPolicy{description: bootstrapPolicyDescription, rules: []ACLRule{{"", AccessAdmin}}}
		a.tokens[cmd.Accessor] = modelToken{hash: cmd.SecretHash, description: bootstrapTokenDescription, policies: []string{ACLPolicyGlobalManagement}}
		a.bootstrapped = true
	case TypeACLSetPolicy:
		if !modelPolicyName.MatchString(cmd.Policy) || len(cmd.Rules) > 256 || cmd.Policy == ACLPolicyGlobalManagement {
			return StatusInvalid
		}
		for _, r := range cmd.Rules {
			if len(r.Prefix) > 512 || r.Access < AccessDeny || r.Access > AccessAdmin {
				return StatusInvalid
			}
		}
		a.policies[cmd.Policy] = modelPolicy{description: cmd.Description, rules: slices.Clone(cmd.Rules), quotas: cmd.Quotas}
	case TypeACLDeletePolicy:
		if cmd.Policy == ACLPolicyGlobalManagement {
			return StatusConflict
		}
		if _, ok := a.policies[cmd.Policy]; !ok {
			return StatusNotFound
		}
		delete(a.policies, cmd.Policy)
		for acc, t := range a.tokens {
			t.policies = slices.DeleteFunc(slices.Clone(t.policies), func(p string) bool { return p == cmd.Policy })
			a.tokens[acc] = t
		}
	case TypeACLSetToken:
		if !modelAccessor.MatchString(cmd.Accessor) || len(cmd.Policies) > 64 {
			return StatusInvalid
		}
		seen := map[string]bool{}
		for _, p := range cmd.Policies {
			if !modelPolicyName.MatchString(p) || seen[p] {
				return StatusInvalid
			}
			seen[p] = true
		}
		if cmd.SecretHash == ([32]byte{}) {
			return StatusInvalid
		}
		if owner, used := a.hashOwner(cmd.SecretHash); used && owner != cmd.Accessor {
			return StatusConflict
		}
		if old, exists := a.tokens[cmd.Accessor]; exists && old.hash != cmd.SecretHash {
			return StatusConflict
		}
		for _, p := range cmd.Policies {
			if _, ok := a.policies[p]; !ok {
				return StatusNotFound
			}
		}
		a.tokens[cmd.Accessor] = modelToken{hash: cmd.SecretHash, description: cmd.Description, policies: slices.Clone(cmd.Policies), quotas: cmd.Quotas}
	case TypeACLDeleteToken:
		if _, ok := a.tokens[cmd.Accessor]; !ok {
			return StatusNotFound
		}
		delete(a.tokens, cmd.Accessor)
	}
	return StatusOK
}

// access is the resolution rule as the documentation states it: among the rules of all
// the policies whose prefix starts name, the longest prefix decides; at equal length deny
// wins, else the highest access.
func (a *modelACL) access(policies []string, name string) Access {
	bestLen, acc := -1, AccessNone
	for _, pn := range policies {
		for _, r := range a.policies[pn].rules {
			switch {
			case !strings.HasPrefix(name, r.Prefix), len(r.Prefix) < bestLen:
			case len(r.Prefix) > bestLen:
				bestLen, acc = len(r.Prefix), r.Access
			case acc == AccessDeny || r.Access == AccessDeny:
				acc = AccessDeny
			default:
				acc = max(acc, r.Access)
			}
		}
	}
	return acc
}

// anyAccess: some name gets at least min, and the names a rule's prefix itself is one of
// those that rule decides.
func (a *modelACL) anyAccess(policies []string, min Access) bool {
	for _, pn := range policies {
		for _, r := range a.policies[pn].rules {
			if a.access(policies, r.Prefix) >= min {
				return true
			}
		}
	}
	return false
}

// aclProbes are the names whose access is compared after every step: every string of up
// to three letters over the generator's prefix alphabet, so that rules overlap and nest.
var aclProbes = func() []string {
	out := []string{""}
	for n, level := 0, []string{""}; n < 3; n++ {
		var next []string
		for _, s := range level {
			next = append(next, s+"a", s+"b")
		}
		out = append(out, next...)
		level = next
	}
	return append(out, "accounts/A", "b/\u00e9")
}()

// aclUniverse is the small set of names, accessors and secrets the generator draws from,
// with rare values that break a rule.
type aclUniverse struct {
	accessors []string
	hashes    [][32]byte
	policies  []string
}

func newACLUniverse() aclUniverse {
	u := aclUniverse{
		accessors: []string{"a1", "b2", "c3", "0f-9"},
		policies:  []string{ACLPolicyAnonymous, "p1", "p2", "P_3", ACLPolicyGlobalManagement},
	}
	for i := 0; i < 4; i++ {
		u.hashes = append(u.hashes, ACLSecretHash(fmt.Sprint("secret", i)))
	}
	return u
}

// nextACL fills c with a random ACL command.
func (g *gen) nextACL(c *Command) {
	u, rng := &g.acl, g.rng
	rare := func() bool { return rng.Intn(40) == 0 }
	i := rng.Intn(len(u.accessors))
	accessor := u.accessors[i]
	if rare() {
		accessor = []string{"", "A1", "g", strings.Repeat("a", 65), strings.Repeat("f", 64)}[rng.Intn(5)]
	}
	// Mostly each accessor's own secret, so that tokens are created and updated; else any.
	hash := u.hashes[i]
	if rng.Intn(3) == 0 {
		hash = u.hashes[rng.Intn(len(u.hashes))]
	}
	if rare() {
		hash = [32]byte{}
	}
	policy := func() string {
		if rare() {
			return []string{"", "bad name", "x.y", strings.Repeat("p", 129), strings.Repeat("q", 128)}[rng.Intn(5)]
		}
		return u.policies[rng.Intn(len(u.policies))]
	}
	switch op := rng.Intn(100); {
	case op < 5:
		c.Type, c.ACL.Accessor, c.ACL.SecretHash = TypeACLBootstrap, accessor, hash
	case op < 45:
		c.Type, c.ACL.Policy, c.ACL.Description = TypeACLSetPolicy, policy(), fmt.Sprint("d", rng.Intn(3))
		n := rng.Intn(5)
		if rare() {
			n = 257
		}
		for i := 0; i < n; i++ {
			var p []byte
			for j := rng.Intn(4); j > 0; j-- {
				p = append(p, "ab"[rng.Intn(2)])
			}
			r := ACLRule{Prefix: string(p), Access: Access(1 + rng.Intn(4))}
			switch {
			case rare():
				r.Access = Access(rng.Intn(2) * 7) // none, or no access at all
			case rare():
				r.Prefix = strings.Repeat("a", 512+rng.Intn(2))
			}
			c.ACL.Rules = append(c.ACL.Rules, r)
		}
	case op < 55:
		c.Type, c.ACL.Policy = TypeACLDeletePolicy, policy()
	case op < 90:
		c.Type, c.ACL.Accessor, c.ACL.SecretHash = TypeACLSetToken, accessor, hash
		c.ACL.Description = fmt.Sprint("t", rng.Intn(3))
		for n := rng.Intn(4); n > 0; n-- {
			c.ACL.Policies = append(c.ACL.Policies, policy())
		}
		if rare() {
			for len(c.ACL.Policies) <= MaxACLTokenPolicies {
				c.ACL.Policies = append(c.ACL.Policies, fmt.Sprint("p", len(c.ACL.Policies)))
			}
		}
	default:
		c.Type, c.ACL.Accessor = TypeACLDeleteToken, accessor
	}
}

// checkACLAgainstModel compares the ACL reads of f with the model: listings, lookups,
// resolution of every secret of the universe and of the anonymous identity, on every
// probe name.
func checkACLAgainstModel(t *testing.T, index uint64, f *FSM, a *modelACL, u *aclUniverse) {
	t.Helper()
	if f.ACLBootstrapped() != a.bootstrapped {
		t.Fatalf("step %d: bootstrapped %v, model %v", index, f.ACLBootstrapped(), a.bootstrapped)
	}
	var wantPolicies []ACLPolicyView
	for _, name := range sortedNames(a.policies) {
		p := a.policies[name]
		wantPolicies = append(wantPolicies, ACLPolicyView{Name: name, Description: p.description, Rules: p.rules})
	}
	gotPolicies := f.ACLPolicies()
	if !slices.EqualFunc(gotPolicies, wantPolicies, func(x, y ACLPolicyView) bool {
		return x.Name == y.Name && x.Description == y.Description && slices.Equal(x.Rules, y.Rules)
	}) {
		t.Fatalf("step %d: policies %+v, model %+v", index, gotPolicies, wantPolicies)
	}
	var wantTokens []ACLTokenView
	for _, acc := range sortedNames(a.tokens) {
		tk := a.tokens[acc]
		wantTokens = append(wantTokens, ACLTokenView{Accessor: acc, Description: tk.description, Policies: tk.policies})
	}
	gotTokens := f.ACLTokens()
	sameToken := func(x, y ACLTokenView) bool {
		return x.Accessor == y.Accessor && x.Description == y.Description && slices.Equal(x.Policies, y.Policies)
	}
	if !slices.EqualFunc(gotTokens, wantTokens, sameToken) {
		t.Fatalf("step %d: tokens %+v, model %+v", index, gotTokens, wantTokens)
	}
	for _, acc := range u.accessors {
		v, ok := f.ACLToken(acc)
		tk, want := a.tokens[acc]
		if ok != want || ok && !sameToken(v, ACLTokenView{Accessor: acc, Description: tk.description, Policies: tk.policies}) {
			t.Fatalf("step %d: ACLToken(%s) = %+v %v, model %+v", index, acc, v, ok, tk)
		}
	}
	for _, name := range u.policies {
		if _, ok := f.ACLPolicy(name); ok != hasKey(a.policies, name) {
			t.Fatalf("step %d: ACLPolicy(%s) exists=%v", index, name, ok)
		}
	}

	check := func(what string, id ACLIdentity, policies []string) {
		t.Helper()
		if !slices.Equal(id.Policies, policies) {
			t.Fatalf("step %d: %s policies %q, model %q", index, what, id.Policies, policies)
		}
		// Both lookups of a rule set, the scan and the index by prefix, whichever the
		// set chose, must agree with the model.
		scan, indexed := id, id
		scan.rules, indexed.rules = id.rules.withLookup(false), id.rules.withLookup(true)
		for _, name := range aclProbes {
			want := a.access(policies, name)
			for _, x := range []ACLIdentity{id, scan, indexed} {
				if got := x.Access(name); got != want {
					t.Fatalf("step %d: %s Access(%q) = %s, model %s (policies %q, indexed %v)", index, what, name, got, want, policies, x.rules != nil && x.rules.byPrefix != nil)
				}
			}
		}
		for min := AccessDeny; min <= AccessAdmin; min++ {
			if got, want := id.AnyAccess(min), a.anyAccess(policies, min); got != want {
				t.Fatalf("step %d: %s AnyAccess(%s) = %v, model %v", index, what, min, got, want)
			}
		}
		if got, want := id.Admin(), a.access(policies, "") == AccessAdmin; got != want {
			t.Fatalf("step %d: %s Admin() = %v, model %v", index, what, got, want)
		}
	}
	for _, h := range u.hashes {
		id, ok := f.ACLResolve(h)
		acc, want := a.hashOwner(h)
		if ok != want || id.Accessor != acc {
			t.Fatalf("step %d: resolve %x = %q %v, model %q %v", index, h[:4], id.Accessor, ok, acc, want)
		}
		if ok {
			check("token "+acc, id, a.tokens[acc].policies)
		}
	}
	if _, ok := f.ACLResolve([32]byte{}); ok {
		t.Fatalf("step %d: the zero hash resolved", index)
	}
	var anon []string
	if hasKey(a.policies, ACLPolicyAnonymous) {
		anon = []string{ACLPolicyAnonymous}
	}
	check("anonymous", f.ACLAnonymous(), anon)
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// checkACLRestore restores f's snapshot into a new FSM, whose derived ACL state (the hash
// index, the compiled rules) must then resolve exactly as f does.
func checkACLRestore(t *testing.T, index uint64, f *FSM, a *modelACL, u *aclUniverse) {
	t.Helper()
	g := New(nil)
	snap := f.SnapshotBytes()
	if err := restoreFrom(g, snap); err != nil {
		t.Fatalf("step %d: restore: %v", index, err)
	}
	if !bytes.Equal(g.SnapshotBytes(), snap) {
		t.Fatalf("step %d: restored state encodes differently", index)
	}
	checkACLAgainstModel(t, index, g, a, u)
}

// withLookup returns a copy of the set that looks names up by scanning its rules, or by
// its prefix index, whatever compileRules chose for it.
func (set *aclRuleSet) withLookup(indexed bool) *aclRuleSet {
	if set == nil {
		return nil
	}
	c := &aclRuleSet{rules: set.rules, best: set.best}
	if indexed {
		c.byPrefix = map[string]Access{}
		for _, r := range set.rules {
			c.byPrefix[r.Prefix] = r.Access
			if n := len(c.lengths); n == 0 || c.lengths[n-1] != len(r.Prefix) {
				c.lengths = append(c.lengths, len(r.Prefix))
			}
		}
	}
	return c
}
