package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/raftlock/raftlock/fsm"
)

// ACL errors. Transport maps them to 409, 404 and 400.
var (
	// ErrACLConflict: the ACL request collides with the state (a second bootstrap, the
	// built-in policy, a secret already in use).
	ErrACLConflict = errors.New("cluster: ACL conflict")
	// ErrACLNotFound: the policy or token named does not exist.
	ErrACLNotFound = errors.New("cluster: ACL policy or token not found")
	// ErrACLInvalid: the ACL request breaks a rule of names, sizes or rights.
	ErrACLInvalid = errors.New("cluster: invalid ACL request")
	// ErrACLInactive: the cluster does not speak the protocol version that ACLs need yet
	// (a member runs an older release).
	ErrACLInactive = errors.New("cluster: ACLs need protocol version 2 on every member")
)

// randomHex draws n random bytes as hex: token secrets and accessors.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("cluster: crypto/rand failed: %v", err)) // never happens on Linux
	}
	return hex.EncodeToString(b)
}

// aclResult maps an ACL command's outcome to an error.
func (n *Node) aclApply(ctx context.Context, c *fsm.Command) error {
	if n.fsm.Version() < c.Type.Since() {
		return ErrACLInactive
	}
	r, err := n.propose(ctx, c)
	if err != nil {
		if errors.Is(err, ErrInvalidCommand) {
			return fmt.Errorf("%w: %v", ErrACLInvalid, r.Err)
		}
		return err
	}
	switch r.Status {
	case fsm.StatusConflict:
		return fmt.Errorf("%w: %v", ErrACLConflict, r.Err)
	case fsm.StatusNotFound:
		return fmt.Errorf("%w: %v", ErrACLNotFound, r.Err)
	}
	return nil
}

// ACLToken is a token as the node returns it; Secret is set only when it was just made.
type ACLToken struct {
	Accessor    string
	Secret      string
	Description string
	Policies    []string
}

// ACLBootstrap creates the first management token, once in the cluster's life. Its secret
// is returned here and nowhere else: the state keeps only its hash.
func (n *Node) ACLBootstrap(ctx context.Context) (ACLToken, error) {
	secret, accessor := randomHex(32), randomHex(16)
	c := &fsm.Command{Type: fsm.TypeACLBootstrap, ACL: fsm.ACLCommand{Accessor: accessor, SecretHash: fsm.ACLSecretHash(secret)}}
	if err := n.aclApply(ctx, c); err != nil {
		return ACLToken{}, err
	}
	return ACLToken{Accessor: accessor, Secret: secret, Policies: []string{fsm.ACLPolicyGlobalManagement}}, nil
}

// ACLSetPolicy creates or replaces a policy.
func (n *Node) ACLSetPolicy(ctx context.Context, name, description string, rules []fsm.ACLRule) error {
	if err := fsm.ValidateACLPolicy(name, rules); err != nil {
		return fmt.Errorf("%w: %v", ErrACLInvalid, err)
	}
	return n.aclApply(ctx, &fsm.Command{Type: fsm.TypeACLSetPolicy, ACL: fsm.ACLCommand{Policy: name, Description: description, Rules: rules}})
}

// ACLDeletePolicy deletes a policy; tokens that held it lose its rules.
func (n *Node) ACLDeletePolicy(ctx context.Context, name string) error {
	return n.aclApply(ctx, &fsm.Command{Type: fsm.TypeACLDeletePolicy, ACL: fsm.ACLCommand{Policy: name}})
}

// ACLCreateToken creates a token holding policies and returns it with its secret, which
// is never shown again.
func (n *Node) ACLCreateToken(ctx context.Context, description string, policies []string) (ACLToken, error) {
	secret, accessor := randomHex(32), randomHex(16)
	if err := fsm.ValidateACLToken(accessor, policies); err != nil {
		return ACLToken{}, fmt.Errorf("%w: %v", ErrACLInvalid, err)
	}
	c := &fsm.Command{Type: fsm.TypeACLSetToken, ACL: fsm.ACLCommand{Accessor: accessor, SecretHash: fsm.ACLSecretHash(secret), Description: description, Policies: policies}}
	if err := n.aclApply(ctx, c); err != nil {
		return ACLToken{}, err
	}
	return ACLToken{Accessor: accessor, Secret: secret, Description: description, Policies: policies}, nil
}

// ACLDeleteToken revokes a token by its accessor.
func (n *Node) ACLDeleteToken(ctx context.Context, accessor string) error {
	return n.aclApply(ctx, &fsm.Command{Type: fsm.TypeACLDeleteToken, ACL: fsm.ACLCommand{Accessor: accessor}})
}

// ACLResolve returns the identity of a token's secret, and false when no token has it.
// It reads this node's state: a token revoked a moment ago may still resolve on a lagging
// follower, but every write is checked again by the leader.
func (n *Node) ACLResolve(secret string) (fsm.ACLIdentity, bool) {
	return n.fsm.ACLResolve(fsm.ACLSecretHash(secret))
}

// ACLAnonymous returns the identity of requests without a token.
func (n *Node) ACLAnonymous() fsm.ACLIdentity { return n.fsm.ACLAnonymous() }

// ACLBootstrapped reports whether the ACL bootstrap has happened.
func (n *Node) ACLBootstrapped() bool { return n.fsm.ACLBootstrapped() }

// ACLPolicies lists the policies.
func (n *Node) ACLPolicies() []fsm.ACLPolicyView { return n.fsm.ACLPolicies() }

// ACLTokens lists the tokens, without secrets or hashes.
func (n *Node) ACLTokens() []fsm.ACLTokenView { return n.fsm.ACLTokens() }

// ACLTokenView returns one token by accessor.
func (n *Node) ACLTokenView(accessor string) (fsm.ACLTokenView, bool) {
	return n.fsm.ACLToken(accessor)
}
