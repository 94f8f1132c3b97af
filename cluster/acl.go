package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/raftlock/raftlock/fsm"
)

// randomHex draws n random bytes as hex: token secrets and accessors.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("cluster: crypto/rand failed: %v", err)) // never happens on Linux
	}
	return hex.EncodeToString(b)
}

// ACL is the node's access control: policies, tokens, and the identities of secrets.
// Reach it with Node.ACL.
type ACL struct{ n *Node }

// apply proposes an ACL command and answers its outcome.
func (a *ACL) apply(ctx context.Context, c *fsm.Command) error {
	if a.n.fsm.Version() < c.Type.Since() {
		return ErrACLInactive
	}
	r, err := a.n.prop.propose(ctx, c)
	if err != nil {
		return err
	}
	return outcomeError(c.Type, r, a.n.fsm.Limits)
}

// ACLToken is a token as the node returns it; Secret is set only when it was just made.
type ACLToken struct {
	Accessor    string
	Secret      string
	Description string
	Policies    []string
	// Quotas are the token's own quotas (zero: none set on the token).
	Quotas Quotas
}

// quotasReady refuses quotas before the cluster runs protocol version 5: the state
// machine would refuse the entry, and the caller should learn why before it is proposed.
func (a *ACL) quotasReady(q Quotas) error {
	if q.IsZero() || a.n.fsm.Version() >= 5 {
		return nil
	}
	return fmt.Errorf("%w; members that have not registered it: %v", ErrQuotasInactive, a.n.members.below(5))
}

// Bootstrap creates the first management token, once in the cluster's life. Its secret
// is returned here and nowhere else: the state keeps only its hash.
func (a *ACL) Bootstrap(ctx context.Context) (ACLToken, error) {
	secret, accessor := randomHex(32), randomHex(16)
	c := &fsm.Command{Type: fsm.TypeACLBootstrap, ACL: fsm.ACLCommand{Accessor: accessor, SecretHash: fsm.ACLSecretHash(secret)}}
	if err := a.apply(ctx, c); err != nil {
		return ACLToken{}, err
	}
	return ACLToken{Accessor: accessor, Secret: secret, Policies: []string{fsm.ACLPolicyGlobalManagement}}, nil
}

// SetPolicy creates or replaces a policy, with the quotas it grants the tokens that hold
// it (zero: none; protocol version 5).
func (a *ACL) SetPolicy(ctx context.Context, name, description string, rules []ACLRule, quotas Quotas) error {
	if err := fsm.ValidateACLPolicy(name, rules); err != nil {
		return fmt.Errorf("%w: %v", ErrACLInvalid, err)
	}
	if err := a.quotasReady(quotas); err != nil {
		return err
	}
	return a.apply(ctx, &fsm.Command{Type: fsm.TypeACLSetPolicy, ACL: fsm.ACLCommand{Policy: name, Description: description, Rules: rules, Quotas: quotas}})
}

// DeletePolicy deletes a policy; tokens that held it lose its rules.
func (a *ACL) DeletePolicy(ctx context.Context, name string) error {
	return a.apply(ctx, &fsm.Command{Type: fsm.TypeACLDeletePolicy, ACL: fsm.ACLCommand{Policy: name}})
}

// CreateToken creates a token holding policies, with its own quotas (zero: none; protocol
// version 5), and returns it with its secret, which is never shown again.
func (a *ACL) CreateToken(ctx context.Context, description string, policies []string, quotas Quotas) (ACLToken, error) {
	secret, accessor := randomHex(32), randomHex(16)
	if err := fsm.ValidateACLToken(accessor, policies); err != nil {
		return ACLToken{}, fmt.Errorf("%w: %v", ErrACLInvalid, err)
	}
	if err := a.quotasReady(quotas); err != nil {
		return ACLToken{}, err
	}
	c := &fsm.Command{Type: fsm.TypeACLSetToken, ACL: fsm.ACLCommand{Accessor: accessor, SecretHash: fsm.ACLSecretHash(secret),
		Description: description, Policies: policies, Quotas: quotas}}
	if err := a.apply(ctx, c); err != nil {
		return ACLToken{}, err
	}
	return ACLToken{Accessor: accessor, Secret: secret, Description: description, Policies: policies, Quotas: quotas}, nil
}

// UpdateToken replaces the description, policies and quotas of the token with accessor,
// keeping its secret. The state machine refuses the update when the token was deleted (or
// made again with another secret) since this node read it.
func (a *ACL) UpdateToken(ctx context.Context, accessor, description string, policies []string, quotas Quotas) (ACLToken, error) {
	if err := fsm.ValidateACLToken(accessor, policies); err != nil {
		return ACLToken{}, fmt.Errorf("%w: %v", ErrACLInvalid, err)
	}
	hash, ok := a.n.fsm.ACLTokenSecretHash(accessor)
	if !ok {
		return ACLToken{}, fmt.Errorf("%w: token %q", ErrACLNotFound, accessor)
	}
	if err := a.quotasReady(quotas); err != nil {
		return ACLToken{}, err
	}
	c := &fsm.Command{Type: fsm.TypeACLSetToken, ACL: fsm.ACLCommand{Accessor: accessor, SecretHash: hash,
		Description: description, Policies: policies, Quotas: quotas}}
	if err := a.apply(ctx, c); err != nil {
		return ACLToken{}, err
	}
	return ACLToken{Accessor: accessor, Description: description, Policies: policies, Quotas: quotas}, nil
}

// Usage returns identity id's use of the cluster and its quotas, as this node has applied
// them: id is a token's accessor, fsm.CallerAnonymous for callers without a token, or ""
// for leases made without ACLs (whose quotas are the cluster's limits).
func (a *ACL) Usage(id string) UsageView { return a.n.fsm.Usage(id) }

// Usages returns the use of every identity that has a lease, and the cluster's totals.
func (a *ACL) Usages() (ids []UsageView, leases, locks, waiters uint64) {
	leases, locks, waiters = a.n.fsm.Totals()
	return a.n.fsm.Usages(), leases, locks, waiters
}

// DeleteToken revokes a token by its accessor.
func (a *ACL) DeleteToken(ctx context.Context, accessor string) error {
	return a.apply(ctx, &fsm.Command{Type: fsm.TypeACLDeleteToken, ACL: fsm.ACLCommand{Accessor: accessor}})
}

// Resolve returns the identity of a token's secret, and false when no token has it.
// It reads this node's state: a token revoked a moment ago may still resolve on a lagging
// follower, but every write is checked again by the leader.
func (a *ACL) Resolve(secret string) (ACLIdentity, bool) {
	return a.n.fsm.ACLResolve(fsm.ACLSecretHash(secret))
}

// Anonymous returns the identity of requests without a token.
func (a *ACL) Anonymous() ACLIdentity { return a.n.fsm.ACLAnonymous() }

// Bootstrapped reports whether the ACL bootstrap has happened.
func (a *ACL) Bootstrapped() bool { return a.n.fsm.ACLBootstrapped() }

// Policies lists the policies.
func (a *ACL) Policies() []ACLPolicyView { return a.n.fsm.ACLPolicies() }

// Tokens lists the tokens, without secrets or hashes.
func (a *ACL) Tokens() []ACLTokenView { return a.n.fsm.ACLTokens() }

// Token returns one token by accessor.
func (a *ACL) Token(accessor string) (ACLTokenView, bool) {
	return a.n.fsm.ACLToken(accessor)
}
