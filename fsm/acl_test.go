package fsm

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// newACLFSM returns a state machine at version 2; apply applies ACL commands at the next
// indexes and fails the test on an unexpected status.
func newACLFSM(t *testing.T) (*FSM, func(want Status, c Command) *Result) {
	t.Helper()
	f := New(nil)
	index := uint64(1)
	f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: 2})
	return f, func(want Status, c Command) *Result {
		t.Helper()
		index++
		r := f.ApplyCommand(index, &c)
		if r.Status != want {
			t.Fatalf("%s %+v: status %s (%v), want %s", c.Type, c.ACL, r.Status, r.Err, want)
		}
		return r
	}
}

func setPolicy(name string, rules ...ACLRule) Command {
	return Command{Type: TypeACLSetPolicy, ACL: ACLCommand{Policy: name, Rules: rules}}
}

func setToken(accessor, secret string, policies ...string) Command {
	return Command{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: accessor, SecretHash: ACLSecretHash(secret), Policies: policies}}
}

func mustResolve(t *testing.T, f *FSM, secret string) ACLIdentity {
	t.Helper()
	id, ok := f.ACLResolve(ACLSecretHash(secret))
	if !ok {
		t.Fatalf("secret %q does not resolve", secret)
	}
	return id
}

func TestACLIdentity_Rules(t *testing.T) {
	f, apply := newACLFSM(t)
	apply(StatusOK, setPolicy("base", ACLRule{"", AccessRead}, ACLRule{"accounts/", AccessLock}))
	apply(StatusOK, setPolicy("holes",
		ACLRule{"accounts/secret/", AccessDeny},
		ACLRule{"accounts/secret/ok", AccessAdmin},
		ACLRule{"accounts/slow", AccessRead},
		ACLRule{"jobs/", AccessAdmin},
		ACLRule{"jobs/", AccessRead},
		ACLRule{"tmp/", AccessLock},
	))
	apply(StatusOK, setPolicy("deny-tmp", ACLRule{"tmp/", AccessDeny}))
	apply(StatusOK, setToken("a1", "s1", "base", "holes", "deny-tmp"))
	id := mustResolve(t, f, "s1")
	for name, want := range map[string]Access{
		"":                     AccessRead,
		"x":                    AccessRead,
		"accounts/A":           AccessLock,
		"accounts/secret/":     AccessDeny,
		"accounts/secret/key":  AccessDeny,
		"accounts/secret/ok":   AccessAdmin,
		"accounts/secret/ok/2": AccessAdmin,
		"accounts/slow":        AccessRead,
		"accounts/slowly":      AccessRead,
		"accounts/s":           AccessLock,
		"jobs/nightly":         AccessAdmin, // equal prefix in one policy: the highest grant
		"jobs":                 AccessRead,
		"tmp/x":                AccessDeny, // equal prefix in two policies: deny beats lock
	} {
		if got := id.Access(name); got != want {
			t.Errorf("Access(%q) = %s, want %s", name, got, want)
		}
	}
	if id.Admin() {
		t.Error("admin on a longer prefix made the token admin")
	}
	if !id.AnyAccess(AccessAdmin) || !id.AnyAccess(AccessLock) {
		t.Error("AnyAccess misses the admin and lock grants")
	}
	if id.Accessor != "a1" || !slices.Equal(id.Policies, []string{"base", "holes", "deny-tmp"}) {
		t.Errorf("identity %q %q", id.Accessor, id.Policies)
	}

	// Only rules on "" decide Admin; no rules at all decide nothing.
	apply(StatusOK, setPolicy("root", ACLRule{"", AccessAdmin}, ACLRule{"x/", AccessDeny}))
	apply(StatusOK, setToken("b2", "s2", "root"))
	if id := mustResolve(t, f, "s2"); !id.Admin() || id.Access("x/1") != AccessDeny {
		t.Errorf("root: admin %v, x/1 %s", id.Admin(), id.Access("x/1"))
	}
	apply(StatusOK, setToken("c3", "s3"))
	if id := mustResolve(t, f, "s3"); id.Access("") != AccessNone || id.AnyAccess(AccessRead) || id.Admin() {
		t.Error("a token without policies has access")
	}
	var zero ACLIdentity
	if zero.Access("a") != AccessNone || zero.AnyAccess(AccessDeny) || zero.Admin() {
		t.Error("the zero identity has access")
	}
	// A deny on "" with a read deeper: AnyAccess(read) holds, Admin does not.
	apply(StatusOK, setPolicy("narrow", ACLRule{"", AccessDeny}, ACLRule{"jobs/", AccessLock}))
	apply(StatusOK, setToken("d4", "s4", "narrow"))
	if id := mustResolve(t, f, "s4"); !id.AnyAccess(AccessLock) || id.AnyAccess(AccessAdmin) || id.Access("x") != AccessDeny {
		t.Error("narrow token resolves wrongly")
	}
	// Changing a policy changes every token that holds it, in the same entry.
	apply(StatusOK, setPolicy("narrow", ACLRule{"jobs/", AccessRead}))
	if id := mustResolve(t, f, "s4"); id.Access("jobs/1") != AccessRead || id.Access("x") != AccessNone {
		t.Error("a token did not follow its policy's change")
	}
}

func TestACL_AnonymousPolicy(t *testing.T) {
	f, apply := newACLFSM(t)
	if id := f.ACLAnonymous(); id.Access("a") != AccessNone || id.Accessor != "" || id.Policies != nil {
		t.Fatalf("anonymous without its policy: %+v", id)
	}
	apply(StatusOK, setPolicy(ACLPolicyAnonymous, ACLRule{"public/", AccessRead}))
	id := f.ACLAnonymous()
	if id.Access("public/x") != AccessRead || id.Access("private") != AccessNone || id.Admin() {
		t.Fatalf("anonymous: %+v", id)
	}
	// The anonymous policy is not added to tokens.
	apply(StatusOK, setToken("a1", "s1"))
	if mustResolve(t, f, "s1").Access("public/x") != AccessNone {
		t.Fatal("a token got the anonymous rules")
	}
	apply(StatusOK, Command{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: ACLPolicyAnonymous}})
	if f.ACLAnonymous().Access("public/x") != AccessNone {
		t.Fatal("anonymous access survived its policy")
	}
}

func TestACL_BootstrapOnce(t *testing.T) {
	f, apply := newACLFSM(t)
	if f.ACLBootstrapped() {
		t.Fatal("bootstrapped from the start")
	}
	apply(StatusInvalid, Command{Type: TypeACLBootstrap, ACL: ACLCommand{Accessor: "a1"}}) // no hash
	apply(StatusInvalid, Command{Type: TypeACLBootstrap, ACL: ACLCommand{Accessor: "NOPE", SecretHash: ACLSecretHash("s")}})
	apply(StatusOK, Command{Type: TypeACLBootstrap, ACL: ACLCommand{Accessor: "a1", SecretHash: ACLSecretHash("root")}})
	before := f.ACLTokens()
	r := apply(StatusConflict, Command{Type: TypeACLBootstrap, ACL: ACLCommand{Accessor: "b2", SecretHash: ACLSecretHash("again")}})
	if !errors.Is(r.Err, ErrACLConflict) {
		t.Fatalf("second bootstrap error %v", r.Err)
	}
	if !f.ACLBootstrapped() || !slices.EqualFunc(f.ACLTokens(), before, func(a, b ACLTokenView) bool { return a.Accessor == b.Accessor }) {
		t.Fatal("a second bootstrap changed the tokens")
	}
	if _, ok := f.ACLResolve(ACLSecretHash("again")); ok {
		t.Fatal("the second bootstrap's secret resolves")
	}
	id := mustResolve(t, f, "root")
	if !id.Admin() || id.Access("any/lock") != AccessAdmin || !slices.Equal(id.Policies, []string{ACLPolicyGlobalManagement}) {
		t.Fatalf("bootstrap token: %+v", id)
	}
	p, ok := f.ACLPolicy(ACLPolicyGlobalManagement)
	if !ok || !slices.Equal(p.Rules, []ACLRule{{"", AccessAdmin}}) {
		t.Fatalf("global-management = %+v", p)
	}
}

func TestACL_GlobalManagementImmutable(t *testing.T) {
	f, apply := newACLFSM(t)
	// Not even before the bootstrap creates it: the name is reserved.
	apply(StatusInvalid, setPolicy(ACLPolicyGlobalManagement, ACLRule{"", AccessRead}))
	apply(StatusConflict, Command{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: ACLPolicyGlobalManagement}})
	apply(StatusOK, Command{Type: TypeACLBootstrap, ACL: ACLCommand{Accessor: "a1", SecretHash: ACLSecretHash("root")}})
	snap := f.SnapshotBytes()
	r := apply(StatusInvalid, setPolicy(ACLPolicyGlobalManagement))
	if !errors.Is(r.Err, ErrACLInvalid) {
		t.Fatalf("error %v", r.Err)
	}
	apply(StatusConflict, Command{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: ACLPolicyGlobalManagement}})
	if !mustResolve(t, f, "root").Admin() {
		t.Fatal("the bootstrap token lost admin")
	}
	// Deleting the last management token is allowed (the documentation warns operators).
	apply(StatusOK, Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "a1"}})
	if _, ok := f.ACLResolve(ACLSecretHash("root")); ok || !f.ACLBootstrapped() {
		t.Fatal("deleted bootstrap token still resolves, or the bootstrap was forgotten")
	}
	if bytes.Equal(snap, f.SnapshotBytes()) {
		t.Fatal("deleting a token changed nothing")
	}
}

func TestACL_TokensAndPolicies(t *testing.T) {
	f, apply := newACLFSM(t)
	apply(StatusNotFound, setToken("a1", "s1", "ops"))
	apply(StatusOK, setPolicy("ops", ACLRule{"jobs/", AccessLock}))
	apply(StatusOK, setPolicy("dev", ACLRule{"dev/", AccessLock}))
	apply(StatusOK, setToken("a1", "s1", "ops", "dev"))
	apply(StatusInvalid, setToken("a2", "s2", "ops", "ops")) // named twice
	apply(StatusConflict, setToken("a2", "s1", "ops"))       // another token's secret
	apply(StatusConflict, setToken("a1", "other", "ops"))    // a secret never changes
	apply(StatusOK, setToken("a1", "s1", "dev"))             // same secret: an update
	apply(StatusNotFound, Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "ffff"}})
	apply(StatusNotFound, Command{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: "nope"}})
	if v, _ := f.ACLToken("a1"); !slices.Equal(v.Policies, []string{"dev"}) {
		t.Fatalf("updated token %+v", v)
	}
	// Deleting a policy takes it out of its tokens; a new policy of the same name grants
	// them nothing.
	apply(StatusOK, setToken("b2", "s2", "ops", "dev"))
	apply(StatusOK, Command{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: "ops"}})
	if v, _ := f.ACLToken("b2"); !slices.Equal(v.Policies, []string{"dev"}) {
		t.Fatalf("token after its policy was deleted: %+v", v)
	}
	apply(StatusOK, setPolicy("ops", ACLRule{"", AccessAdmin}))
	if id := mustResolve(t, f, "s2"); id.Access("jobs/x") != AccessNone || id.Access("dev/x") != AccessLock {
		t.Fatal("a recreated policy reached a token made before it")
	}
	// Views never carry a hash, and are copies.
	views := f.ACLTokens()
	views[0].Policies[0] = "changed"
	if v, _ := f.ACLToken(views[0].Accessor); v.Policies[0] == "changed" {
		t.Fatal("a view shares the state's slice")
	}
	id := mustResolve(t, f, "s2")
	id.Policies[0] = "changed"
	if mustResolve(t, f, "s2").Policies[0] == "changed" {
		t.Fatal("an identity shares the state's slice")
	}
	if names := f.ACLPolicies(); len(names) != 2 || names[0].Name != "dev" || names[1].Name != "ops" {
		t.Fatalf("policies not sorted: %+v", names)
	}
}

func TestACL_Validation(t *testing.T) {
	_, apply := newACLFSM(t)
	long := strings.Repeat("a", MaxACLPrefix+1)
	for _, c := range []Command{
		setPolicy(""),
		setPolicy(strings.Repeat("p", MaxACLPolicyName+1)),
		setPolicy("a b"),
		setPolicy("é"),
		setPolicy("p", ACLRule{long, AccessRead}),
		setPolicy("p", ACLRule{"", AccessNone}),
		setPolicy("p", ACLRule{"", AccessAdmin + 1}),
		setPolicy("p", make([]ACLRule, MaxACLRules+1)...),
		setToken("", "s"),
		setToken("ABC", "s"),
		setToken(strings.Repeat("a", MaxACLAccessor+1), "s"),
		setToken("a1", "s", "bad name"),
		{Type: TypeACLSetToken, ACL: ACLCommand{Accessor: "a1"}}, // the zero hash
	} {
		r := apply(StatusInvalid, c)
		if !errors.Is(r.Err, ErrACLInvalid) {
			t.Fatalf("%+v: error %v", c.ACL, r.Err)
		}
	}
	ok := make([]ACLRule, MaxACLRules)
	for i := range ok {
		ok[i] = ACLRule{strings.Repeat("a", MaxACLPrefix), AccessRead}
	}
	apply(StatusOK, setPolicy(strings.Repeat("P-_9", MaxACLPolicyName/4), ok...))
	apply(StatusOK, setToken(strings.Repeat("0123456789abcdef", 4), "s"))
	apply(StatusOK, setToken("a1-b2-c3", "s2"))
}

func TestACL_InactiveAtVersion1(t *testing.T) {
	f := New(nil)
	before := f.SnapshotBytes()
	for i, c := range []Command{
		{Type: TypeACLBootstrap, ACL: ACLCommand{Accessor: "a1", SecretHash: ACLSecretHash("s")}},
		setPolicy("p"),
		{Type: TypeACLDeletePolicy, ACL: ACLCommand{Policy: "p"}},
		setToken("a1", "s"),
		{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "a1"}},
	} {
		r := f.ApplyCommand(uint64(i+1), &c)
		if r.Status != StatusInvalid || !errors.Is(r.Err, ErrInactiveVersion) {
			t.Fatalf("%s at version 1: %+v", c.Type, r)
		}
	}
	tick := New(nil)
	restoreFrom(tick, before)
	tick.ApplyCommand(5, &Command{Type: TypeTick})
	if f.ACLBootstrapped() || !bytes.Equal(f.SnapshotBytes(), tick.SnapshotBytes()) {
		t.Fatal("a refused ACL command changed the state")
	}
}

func TestACL_SnapshotRoundTrip(t *testing.T) {
	f, apply := newACLFSM(t)
	for _, c := range aclCommands() {
		apply(StatusOK, c)
	}
	snap := f.SnapshotBytes()
	g := New(nil)
	if err := restoreFrom(g, snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.SnapshotBytes(), snap) || !g.ACLBootstrapped() {
		t.Fatal("restored ACL state differs")
	}
	for _, secret := range []string{"root", "ops"} {
		a, b := mustResolve(t, f, secret), mustResolve(t, g, secret)
		for _, name := range append(aclProbes, "jobs/x", "tmp/") {
			if a.Access(name) != b.Access(name) {
				t.Fatalf("%s: Access(%q) %s after restore, %s before", secret, name, b.Access(name), a.Access(name))
			}
		}
	}
	if bytes.Contains(snap, []byte("root")) {
		t.Fatal("a secret is in the snapshot")
	}
	// The hash index is rebuilt; a snapshot whose parts contradict each other is refused.
	h := ACLSecretHash("ops")
	i := bytes.Index(snap, h[:])
	dup := bytes.Replace(slices.Clone(snap), h[:], func() []byte { r := ACLSecretHash("root"); return r[:] }(), 1)
	if i < 0 || restoreFrom(New(nil), dup) == nil {
		t.Fatal("a snapshot with two tokens of one secret restored")
	}
	gm := bytes.Replace(slices.Clone(snap), []byte(bootstrapPolicyDescription), []byte(strings.ToUpper(bootstrapPolicyDescription)), 1)
	if err := restoreFrom(New(nil), gm); err == nil || !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a changed global-management policy restored: %v", err)
	}
}

func TestAccess_Names(t *testing.T) {
	for a, s := range map[Access]string{AccessDeny: "deny", AccessRead: "read", AccessLock: "lock", AccessAdmin: "admin"} {
		if a.String() != s {
			t.Fatalf("%d.String() = %q", a, a.String())
		}
		if p, err := ParseAccess(s); err != nil || p != a {
			t.Fatalf("ParseAccess(%q) = %s, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "none", "Admin", "write"} {
		if _, err := ParseAccess(s); !errors.Is(err, ErrACLInvalid) {
			t.Fatalf("ParseAccess(%q) = %v", s, err)
		}
	}
	if !(AccessNone < AccessDeny && AccessDeny < AccessRead && AccessRead < AccessLock && AccessLock < AccessAdmin) {
		t.Fatal("access order")
	}
}

// aclCommands are ACL commands that all succeed in order at version 2, for fuzz seeds and
// the snapshot tests.
func aclCommands() []Command {
	return []Command{
		{Type: TypeACLBootstrap, Now: 5, ACL: ACLCommand{Accessor: "0123456789abcdef0123456789abcdef", SecretHash: ACLSecretHash("root")}},
		{Type: TypeACLSetPolicy, Now: 6, ACL: ACLCommand{Policy: "ops", Description: "operators", Rules: []ACLRule{{"", AccessRead}, {"jobs/", AccessLock}, {"jobs/secret/", AccessDeny}}}},
		{Type: TypeACLSetPolicy, Now: 6, ACL: ACLCommand{Policy: ACLPolicyAnonymous, Rules: []ACLRule{{"public/", AccessRead}}}},
		{Type: TypeACLSetPolicy, Now: 6, ACL: ACLCommand{Policy: "tmp", Rules: []ACLRule{{"tmp/", AccessAdmin}}}},
		{Type: TypeACLSetToken, Now: 7, ACL: ACLCommand{Accessor: "a1", SecretHash: ACLSecretHash("ops"), Description: "ci", Policies: []string{"ops", "tmp"}}},
		{Type: TypeACLSetToken, Now: 7, ACL: ACLCommand{Accessor: "b2", SecretHash: ACLSecretHash("gone")}},
		{Type: TypeACLDeleteToken, Now: 8, ACL: ACLCommand{Accessor: "b2"}},
		{Type: TypeACLDeletePolicy, Now: 8, ACL: ACLCommand{Policy: "tmp"}},
	}
}
