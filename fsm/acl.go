package fsm

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// Access is the right an ACL rule grants on the lock names it matches. The values are
// ordered so that a larger one includes the smaller ones from AccessRead up: read < lock <
// admin. AccessDeny sits below AccessRead on purpose: it is an explicit "nothing", so a
// check of the form access >= AccessRead refuses it exactly as it refuses AccessNone.
type Access uint8

// Access values. They appear in log entries and snapshots: never renumber them.
const (
	// AccessNone is what a name gets when no rule matches it; it is never a rule's access.
	AccessNone Access = iota
	// AccessDeny grants nothing; a rule with a longer prefix carves a hole in a grant.
	AccessDeny
	// AccessRead allows status, listings, blocking queries and lease lookups.
	AccessRead
	// AccessLock allows acquiring and releasing, and working with leases.
	AccessLock
	// AccessAdmin allows everything; on the empty prefix, cluster and ACL management too.
	AccessAdmin
)

// String returns the name the HTTP API uses for the access ("deny", "read", "lock",
// "admin"), or "none" for AccessNone.
func (a Access) String() string {
	switch a {
	case AccessNone:
		return "none"
	case AccessDeny:
		return "deny"
	case AccessRead:
		return "read"
	case AccessLock:
		return "lock"
	case AccessAdmin:
		return "admin"
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}

// ParseAccess parses the API name of a rule's access. "none" is refused: a rule that
// grants nothing must say deny, so that it is visible as a hole.
func ParseAccess(s string) (Access, error) {
	for a := AccessDeny; a <= AccessAdmin; a++ {
		if s == a.String() {
			return a, nil
		}
	}
	return AccessNone, fmt.Errorf("%w: access %q: want deny, read, lock or admin", ErrACLInvalid, s)
}

// valid reports whether a is an access a rule may carry.
func (a Access) valid() bool { return a >= AccessDeny && a <= AccessAdmin }

// ACLRule grants Access on every lock name that starts with Prefix. The empty prefix
// matches every name, and alone stands for cluster-wide operations (see ACLIdentity.Admin).
type ACLRule struct {
	// Prefix is a lock-name prefix, at most MaxACLPrefix bytes; "" matches every name.
	Prefix string
	// Access is what the rule grants: AccessDeny, AccessRead, AccessLock or AccessAdmin.
	Access Access
}

// Names of the policies the state machine gives a meaning to (the same as the API's).
const (
	// ACLPolicyGlobalManagement is the built-in policy created by the bootstrap: admin on
	// every name. It can be neither changed nor deleted, so the bootstrap token keeps it.
	ACLPolicyGlobalManagement = "global-management"
	// ACLPolicyAnonymous, when an operator creates it, holds the rules of requests that
	// carry no token (ACLAnonymous).
	ACLPolicyAnonymous = "anonymous"
)

// Limits of the ACL commands. They bound the cost of resolving a token, which happens on
// every request, and the size of an entry.
const (
	// MaxACLPolicyName is the longest policy name, in bytes.
	MaxACLPolicyName = 128
	// MaxACLRules is the most rules one policy may have.
	MaxACLRules = 256
	// MaxACLPrefix is the longest rule prefix, in bytes (the longest lock name is 512).
	MaxACLPrefix = 512
	// MaxACLAccessor is the longest token accessor, in bytes.
	MaxACLAccessor = 64
	// MaxACLTokenPolicies is the most policies one token may hold.
	MaxACLTokenPolicies = 64
)

// Descriptions of what the bootstrap creates.
const (
	bootstrapPolicyDescription = "Built-in: admin on every name"
	bootstrapTokenDescription  = "Bootstrap token (global-management)"
)

// ACLSecretHash returns the hash under which the state machine knows a token's secret.
// The cluster layer hashes each secret with it before proposing or resolving, so that the
// secret itself is never in the log, in a snapshot or in memory longer than a request.
func ACLSecretHash(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// ValidateACLPolicy checks a policy as SetPolicy will, so that a caller can refuse a bad
// request before it costs a log entry. The error wraps ErrACLInvalid.
func ValidateACLPolicy(name string, rules []ACLRule) error {
	if err := validatePolicyName(name); err != nil {
		return err
	}
	if len(rules) > MaxACLRules {
		return fmt.Errorf("%w: policy %q has %d rules, at most %d", ErrACLInvalid, name, len(rules), MaxACLRules)
	}
	for _, r := range rules {
		if len(r.Prefix) > MaxACLPrefix {
			return fmt.Errorf("%w: rule prefix of %d bytes, at most %d", ErrACLInvalid, len(r.Prefix), MaxACLPrefix)
		}
		if !r.Access.valid() {
			return fmt.Errorf("%w: rule on %q has no valid access (%s)", ErrACLInvalid, r.Prefix, r.Access)
		}
	}
	return nil
}

// ValidateACLToken checks a token's accessor and policy list as SetToken will (except
// that the policies exist, which only the state knows). The error wraps ErrACLInvalid.
func ValidateACLToken(accessor string, policies []string) error {
	if err := validateAccessor(accessor); err != nil {
		return err
	}
	if len(policies) > MaxACLTokenPolicies {
		return fmt.Errorf("%w: token holds %d policies, at most %d", ErrACLInvalid, len(policies), MaxACLTokenPolicies)
	}
	for i, p := range policies {
		if err := validatePolicyName(p); err != nil {
			return err
		}
		if slices.Contains(policies[:i], p) {
			return fmt.Errorf("%w: policy %q named twice", ErrACLInvalid, p)
		}
	}
	return nil
}

func validatePolicyName(name string) error {
	return validateChars("policy name", name, MaxACLPolicyName, "letters, digits, '_' and '-'", func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	})
}

func validateAccessor(accessor string) error {
	return validateChars("accessor", accessor, MaxACLAccessor, "lowercase hex digits and '-'", func(c byte) bool {
		return c >= 'a' && c <= 'f' || c >= '0' && c <= '9' || c == '-'
	})
}

// validateChars checks that s, a what, is 1 to maxLen bytes, each of which allowed
// accepts; which names the bytes allowed in the error.
func validateChars(what, s string, maxLen int, which string, allowed func(c byte) bool) error {
	if s == "" || len(s) > maxLen {
		return fmt.Errorf("%w: %s must be 1 to %d characters", ErrACLInvalid, what, maxLen)
	}
	for i := 0; i < len(s); i++ {
		if !allowed(s[i]) {
			return fmt.Errorf("%w: %s %q: only %s", ErrACLInvalid, what, s, which)
		}
	}
	return nil
}

// acl is the replicated ACL state (protocol version 2). Tokens are known only by the
// SHA-256 of their secret: a snapshot or a log leaks no credential.
type acl struct {
	bootstrapped bool
	policies     map[string]*aclPolicy
	tokens       map[string]*aclToken
	byHash       map[[32]byte]string // secret hash -> accessor; derived, rebuilt on restore
}

// aclPolicy is a named set of rules. rules is never modified in place: a SetPolicy
// replaces the policy, so views and compiled sets may share it.
type aclPolicy struct {
	name        string
	description string
	rules       []ACLRule
	compiled    *aclRuleSet // derived: the rules merged for resolution
	quotas      Quotas      // the quotas it grants (version 5; quotas.go)
}

// aclToken is a token without its secret. policies is never modified in place either;
// every policy it names exists (deleting a policy takes it out of every token).
type aclToken struct {
	accessor    string
	secretHash  [32]byte
	description string
	policies    []string
	compiled    *aclRuleSet // derived: the rules of all its policies, merged
	quotas      Quotas      // its own quotas (version 5; quotas.go)
	limits      Quotas      // derived: its own quotas over the widest of its policies'
}

func newACL() acl {
	return acl{
		policies: make(map[string]*aclPolicy),
		tokens:   make(map[string]*aclToken),
		byHash:   make(map[[32]byte]string),
	}
}

// aclRefuse sets r to status with an error wrapping base, which says why to operators.
func aclRefuse(r *Result, status Status, base error, format string, args ...any) {
	r.Status, r.Err = status, fmt.Errorf("%w: "+format, append([]any{base}, args...)...)
}

// The handlers of the ACL commands (apply.go). Each acts on the ACL state alone, and
// every refusal comes before its first change, so a refused command changes nothing but
// time.

func (s *state) aclBootstrap(_ uint64, c *Command, r *Result)    { s.acl.bootstrap(&c.ACL, r) }
func (s *state) aclDeletePolicy(_ uint64, c *Command, r *Result) { s.acl.deletePolicy(&c.ACL, r) }

func (s *state) aclSetPolicy(_ uint64, c *Command, r *Result) {
	if s.quotasActive(&c.ACL, r) {
		s.acl.setPolicy(&c.ACL, r)
	}
}

func (s *state) aclSetToken(_ uint64, c *Command, r *Result) {
	if s.revokingToken(c.ACL.Accessor) {
		aclRefuse(r, StatusConflict, ErrACLConflict, "token %q was deleted and its leases are still being revoked; make a new token", c.ACL.Accessor)
		return
	}
	if s.quotasActive(&c.ACL, r) {
		s.acl.setToken(&c.ACL, r)
	}
}

// quotasActive refuses (StatusInvalid) a policy or token with quotas before version 5,
// which has no place for them, and reports whether the command may go on.
func (s *state) quotasActive(cmd *ACLCommand, r *Result) bool {
	if s.version < 5 && !cmd.Quotas.IsZero() {
		aclRefuse(r, StatusInvalid, ErrInactiveVersion, "quotas need protocol version 5, the cluster runs %d", s.version)
		return false
	}
	return true
}

// aclDeleteToken deletes a token and, from version 4, revokes every lease it created in
// the same entry (owner.go): a deleted credential holds nothing and waits for nothing.
func (s *state) aclDeleteToken(index uint64, c *Command, r *Result) {
	if s.acl.deleteToken(&c.ACL, r); r.Status == StatusOK {
		if s.version >= 6 {
			s.revokeCreator(c.ACL.Accessor) // dead from this entry; the sweep ends them (sweep.go)
		} else {
			s.revokeLeasesOf(index, c.ACL.Accessor)
		}
		s.notify(Event{Kind: EventTokenDeleted, Name: c.ACL.Accessor, Index: index})
	}
}

func (a *acl) bootstrap(cmd *ACLCommand, r *Result) {
	switch {
	case a.bootstrapped:
		aclRefuse(r, StatusConflict, ErrACLConflict, "ACLs are already bootstrapped")
		return
	case a.checkSecret(cmd, r):
		return
	case a.tokens[cmd.Accessor] != nil:
		aclRefuse(r, StatusConflict, ErrACLConflict, "token %q exists", cmd.Accessor)
		return
	}
	p := &aclPolicy{
		name:        ACLPolicyGlobalManagement,
		description: bootstrapPolicyDescription,
		rules:       []ACLRule{{Prefix: "", Access: AccessAdmin}},
	}
	a.putPolicy(p)
	a.putToken(&aclToken{
		accessor:    cmd.Accessor,
		secretHash:  cmd.SecretHash,
		description: bootstrapTokenDescription,
		policies:    []string{ACLPolicyGlobalManagement},
	}, nil)
	a.bootstrapped = true
}

// checkSecret refuses (and returns true) a bootstrap or token whose accessor is malformed
// or whose secret hash is zero (a caller that forgot it) or is another token's.
func (a *acl) checkSecret(cmd *ACLCommand, r *Result) bool {
	if err := validateAccessor(cmd.Accessor); err != nil {
		r.Status, r.Err = StatusInvalid, err
		return true
	}
	if cmd.SecretHash == ([32]byte{}) {
		aclRefuse(r, StatusInvalid, ErrACLInvalid, "token %q has no secret hash", cmd.Accessor)
		return true
	}
	if other, used := a.byHash[cmd.SecretHash]; used && other != cmd.Accessor {
		aclRefuse(r, StatusConflict, ErrACLConflict, "secret already belongs to another token")
		return true
	}
	return false
}

func (a *acl) setPolicy(cmd *ACLCommand, r *Result) {
	if err := ValidateACLPolicy(cmd.Policy, cmd.Rules); err != nil {
		r.Status, r.Err = StatusInvalid, err
		return
	}
	if cmd.Policy == ACLPolicyGlobalManagement {
		aclRefuse(r, StatusInvalid, ErrACLInvalid, "policy %q is built in and cannot be changed", cmd.Policy)
		return
	}
	a.putPolicy(&aclPolicy{name: cmd.Policy, description: cmd.Description, rules: slices.Clone(cmd.Rules), quotas: cmd.Quotas})
	memo := make(map[string]*aclRuleSet)
	for _, t := range a.tokens {
		if slices.Contains(t.policies, cmd.Policy) {
			a.compileToken(t, memo)
		}
	}
}

// deletePolicy deletes a policy and takes its name out of every token that held it, in
// the same entry: a policy created later under the same name grants nothing to tokens made
// before it, which an operator deleting a policy would not expect.
func (a *acl) deletePolicy(cmd *ACLCommand, r *Result) {
	switch {
	case cmd.Policy == ACLPolicyGlobalManagement:
		aclRefuse(r, StatusConflict, ErrACLConflict, "policy %q is built in and cannot be deleted", cmd.Policy)
		return
	case a.policies[cmd.Policy] == nil:
		aclRefuse(r, StatusNotFound, ErrACLNotFound, "policy %q", cmd.Policy)
		return
	}
	delete(a.policies, cmd.Policy)
	memo := make(map[string]*aclRuleSet)
	for _, t := range a.tokens {
		if i := slices.Index(t.policies, cmd.Policy); i >= 0 {
			t.policies = slices.Delete(slices.Clone(t.policies), i, i+1)
			a.compileToken(t, memo)
		}
	}
}

// setToken creates a token, or replaces the description and policies of an existing one
// when the command carries the same secret hash (so that a retried create is harmless).
// A token's secret never changes: a new secret is a new token.
func (a *acl) setToken(cmd *ACLCommand, r *Result) {
	if err := ValidateACLToken(cmd.Accessor, cmd.Policies); err != nil {
		r.Status, r.Err = StatusInvalid, err
		return
	}
	if a.checkSecret(cmd, r) {
		return
	}
	if old := a.tokens[cmd.Accessor]; old != nil && old.secretHash != cmd.SecretHash {
		aclRefuse(r, StatusConflict, ErrACLConflict, "token %q exists with another secret", cmd.Accessor)
		return
	}
	for _, p := range cmd.Policies {
		if a.policies[p] == nil {
			aclRefuse(r, StatusNotFound, ErrACLNotFound, "policy %q", p)
			return
		}
	}
	var policies []string
	if len(cmd.Policies) > 0 {
		policies = slices.Clone(cmd.Policies)
	}
	a.putToken(&aclToken{accessor: cmd.Accessor, secretHash: cmd.SecretHash, description: cmd.Description, policies: policies, quotas: cmd.Quotas}, nil)
}

// deleteToken deletes a token.
func (a *acl) deleteToken(cmd *ACLCommand, r *Result) {
	t := a.tokens[cmd.Accessor]
	if t == nil {
		aclRefuse(r, StatusNotFound, ErrACLNotFound, "token %q", cmd.Accessor)
		return
	}
	delete(a.tokens, t.accessor)
	delete(a.byHash, t.secretHash)
}

// putPolicy stores p, compiling its rules.
func (a *acl) putPolicy(p *aclPolicy) {
	p.compiled = compileRules(p.rules)
	a.policies[p.name] = p
}

// putToken stores t (replacing a token with the same accessor and hash), compiling it
// with memo (see compileToken).
func (a *acl) putToken(t *aclToken, memo map[string]*aclRuleSet) {
	a.compileToken(t, memo)
	a.tokens[t.accessor] = t
	a.byHash[t.secretHash] = t.accessor
}

// compileToken recomputes the merged rules of t from its policies. A token with one
// policy shares that policy's compiled set, the common case, which costs nothing. memo,
// when not nil, shares the sets of tokens with the same policy list within one pass over
// many tokens (a policy change, a restore), so that a thousand tokens made alike cost one
// compilation; it must not outlive a change of any policy.
func (a *acl) compileToken(t *aclToken, memo map[string]*aclRuleSet) {
	var widestQuotas Quotas
	for _, name := range t.policies {
		widestQuotas = widest(widestQuotas, a.policies[name].quotas)
	}
	t.limits = t.quotas.over(widestQuotas)
	switch len(t.policies) {
	case 0:
		t.compiled = nil
		return
	case 1:
		t.compiled = a.policies[t.policies[0]].compiled
		return
	}
	key := strings.Join(t.policies, "\x00") // policy names have no NUL
	if set, ok := memo[key]; ok {
		t.compiled = set
		return
	}
	var rules []ACLRule
	for _, name := range t.policies {
		rules = append(rules, a.policies[name].rules...)
	}
	t.compiled = compileRules(rules)
	if memo != nil {
		memo[key] = t.compiled
	}
}

// ACLPolicyView is a copy of a policy, for listing and reading it.
type ACLPolicyView struct {
	// Name is 1 to MaxACLPolicyName characters of [A-Za-z0-9_-].
	Name string
	// Description is the operators' free text.
	Description string
	// Rules are in the order they were set.
	Rules []ACLRule
	// Quotas are the quotas it grants to its tokens (version 5; zero: none).
	Quotas Quotas
}

// ACLTokenView is a token as the API may show it: without its secret or its hash, which
// would let anyone who reads a listing try secrets offline.
type ACLTokenView struct {
	// Accessor is the token's public ID, by which it is listed and deleted.
	Accessor string
	// Description is the operators' free text.
	Description string
	// Policies names the token's policies, in the order they were set; a deleted policy
	// has been taken out.
	Policies []string
	// Quotas are the token's own quotas (version 5; zero: none); its identity's quotas in
	// force are its usage's (FSM.Usage).
	Quotas Quotas
}

func (p *aclPolicy) view() ACLPolicyView {
	return ACLPolicyView{Name: p.name, Description: p.description, Rules: slices.Clone(p.rules), Quotas: p.quotas}
}

func (t *aclToken) view() ACLTokenView {
	return ACLTokenView{Accessor: t.accessor, Description: t.description, Policies: slices.Clone(t.policies), Quotas: t.quotas}
}

// ACLBootstrapped reports whether the ACL bootstrap has happened: before it there is no
// management token, and a bootstrap request is the only way to get one.
func (f *FSM) ACLBootstrapped() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.acl.bootstrapped
}

// ACLPolicies returns every policy, sorted by name.
func (f *FSM) ACLPolicies() []ACLPolicyView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return views[ACLPolicyView](f.s.acl.policies)
}

// ACLPolicy returns policy name and whether it exists.
func (f *FSM) ACLPolicy(name string) (ACLPolicyView, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return viewOf[ACLPolicyView](f.s.acl.policies, name)
}

// ACLTokens returns every token, sorted by accessor, without secrets.
func (f *FSM) ACLTokens() []ACLTokenView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return views[ACLTokenView](f.s.acl.tokens)
}

// ACLToken returns the token with accessor and whether it exists, without its secret.
func (f *FSM) ACLToken(accessor string) (ACLTokenView, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return viewOf[ACLTokenView](f.s.acl.tokens, accessor)
}

// views returns the read-only copies of the policies or tokens of m, in key order.
func views[V any, R interface{ view() V }](m map[string]R) []V {
	out := make([]V, 0, len(m))
	for _, key := range sortedNames(m) {
		out = append(out, m[key].view())
	}
	return out
}

// viewOf returns the read-only copy of the policy or token of m at key, and whether it
// exists.
func viewOf[V any, R interface{ view() V }](m map[string]R, key string) (V, bool) {
	r, ok := m[key]
	if !ok {
		var none V
		return none, false
	}
	return r.view(), true
}

// ACLTokenSecretHash returns the secret hash of the token with accessor, and whether it
// exists: what a SetToken that updates the token must carry (a token's secret never
// changes). Only the node's own update path reads it; no API answer carries it.
func (f *FSM) ACLTokenSecretHash(accessor string) ([32]byte, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if t := f.s.acl.tokens[accessor]; t != nil {
		return t.secretHash, true
	}
	return [32]byte{}, false
}

// ACLResolve returns the identity of the token whose secret hashes to secretHash, and
// false when no token has it (an unknown or deleted secret: the request is
// unauthenticated, not anonymous). It runs on every request, so it does no more than two
// map lookups and a copy of the policy names: the rules were compiled when they changed.
func (f *FSM) ACLResolve(secretHash [32]byte) (ACLIdentity, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	acc, ok := f.s.acl.byHash[secretHash]
	if !ok {
		return ACLIdentity{}, false
	}
	t := f.s.acl.tokens[acc]
	return ACLIdentity{Accessor: t.accessor, Policies: slices.Clone(t.policies), rules: t.compiled}, true
}

// ACLAnonymous returns the identity of requests that carry no token: the rules of the
// policy named ACLPolicyAnonymous when it exists, and no rules (so no access) otherwise.
// Its Accessor is empty.
func (f *FSM) ACLAnonymous() ACLIdentity {
	f.mu.RLock()
	defer f.mu.RUnlock()
	p := f.s.acl.policies[ACLPolicyAnonymous]
	if p == nil {
		return ACLIdentity{}
	}
	return ACLIdentity{Policies: []string{ACLPolicyAnonymous}, rules: p.compiled}
}
