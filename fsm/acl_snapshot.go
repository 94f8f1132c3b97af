package fsm

import (
	"encoding/binary"
	"slices"
)

// appendACL appends the ACL state to a format 2 snapshot: the bootstrapped flag as one
// byte; the policies sorted by name, each as name, description and rules (a count, then
// prefix and access byte); the tokens sorted by accessor, each as accessor, the 32 bytes
// of the secret hash, description and policy names (a count, then the names, in the
// token's order). From version 5 each policy's and each token's quotas follow it (three
// numbers). The hash index, the compiled rules and a token's quotas in force are derived
// and not written.
func (a *acl) appendACL(buf []byte, version uint64) []byte {
	if a.bootstrapped {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(len(a.policies)))
	for _, name := range sortedNames(a.policies) {
		p := a.policies[name]
		buf = appendString(buf, p.name)
		buf = appendString(buf, p.description)
		buf = appendRules(buf, p.rules)
		if version >= 5 {
			buf = appendQuotas(buf, p.quotas)
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(a.tokens)))
	for _, acc := range sortedNames(a.tokens) {
		t := a.tokens[acc]
		buf = appendString(buf, t.accessor)
		buf = append(buf, t.secretHash[:]...)
		buf = appendString(buf, t.description)
		buf = appendStrings(buf, t.policies)
		if version >= 5 {
			buf = appendQuotas(buf, t.quotas)
		}
	}
	return buf
}

// decodeACL reads what appendACL wrote and rebuilds the derived state. It refuses what no
// sequence of commands can produce (a bad name or rule, a token naming a missing policy,
// two tokens with one secret, a built-in policy that is not the bootstrap's), so that a
// restored state holds the invariants that Apply relies on. Order is left to the
// canonical-form check that decodeSnapshot ends with.
func (a *acl) decodeACL(d *decoder, version uint64) error {
	switch d.byte() {
	case 0:
	case 1:
		a.bootstrapped = true
	default:
		return badSnapshot("acl bootstrapped flag")
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		p := &aclPolicy{name: d.string(), description: d.string(), rules: d.rules()}
		if version >= 5 {
			p.quotas = d.quotas()
		}
		if d.err != nil {
			break
		}
		if err := ValidateACLPolicy(p.name, p.rules); err != nil {
			return badSnapshot("%v", err)
		}
		if a.policies[p.name] != nil {
			return badSnapshot("acl policy %q twice", p.name)
		}
		a.putPolicy(p)
	}
	gm := a.policies[ACLPolicyGlobalManagement]
	builtin := gm != nil && gm.description == bootstrapPolicyDescription &&
		slices.Equal(gm.rules, []ACLRule{{Prefix: "", Access: AccessAdmin}}) && gm.quotas.IsZero()
	if d.err == nil && ((gm != nil) != a.bootstrapped || (gm != nil && !builtin)) {
		return badSnapshot("acl policy %q does not match the bootstrap", ACLPolicyGlobalManagement)
	}
	memo := make(map[string]*aclRuleSet)
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		t := &aclToken{accessor: d.string(), secretHash: d.hash(), description: d.string(), policies: d.strings()}
		if version >= 5 {
			t.quotas = d.quotas()
		}
		if d.err != nil {
			break
		}
		if err := ValidateACLToken(t.accessor, t.policies); err != nil {
			return badSnapshot("%v", err)
		}
		if _, used := a.byHash[t.secretHash]; used || t.secretHash == ([32]byte{}) || a.tokens[t.accessor] != nil {
			return badSnapshot("acl token %q: duplicate or missing secret hash, or duplicate accessor", t.accessor)
		}
		for _, p := range t.policies {
			if a.policies[p] == nil {
				return badSnapshot("acl token %q: missing policy %q", t.accessor, p)
			}
		}
		a.putToken(t, memo)
	}
	return nil
}
