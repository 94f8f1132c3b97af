package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/raftlock/raftlock/api"
)

// ACL management. Every call needs a token (WithToken) whose policies grant admin on the
// empty prefix (the bootstrap token's global-management policy does), except
// ACLBootstrap, which needs none, and ACLTokenSelf, which any valid token may call.

// ACLBootstrap turns ACLs on and returns the first management token, holding the
// api.PolicyGlobalManagement policy. Its SecretID is in this answer only: the cluster
// keeps a hash and can never show it again, so store it at once. A cluster bootstraps
// once; later calls fail with ErrConflict.
//
// Unlike most calls it is not retried once an attempt may have been applied (an
// unknown_outcome answer, a connection lost after sending): a retry would meet
// ErrConflict and the secret of the first attempt would be lost. Such a failure matches
// ErrUnknownOutcome or ErrUnavailable; if ACLTokenList then shows a global-management
// token nobody has the secret of, the cluster needs the operator's recovery procedure.
func (c *Client) ACLBootstrap(ctx context.Context) (api.ACLToken, error) {
	return call[api.ACLToken](ctx, c, &request{op: "acl bootstrap", method: http.MethodPost, path: "/v1/acl/bootstrap", once: true})
}

// ACLPolicySet creates policy name, or replaces its description and rules. Setting the
// same policy twice is harmless, so it is retried like any other call.
func (c *Client) ACLPolicySet(ctx context.Context, name string, p api.ACLPolicyRequest) (api.ACLPolicy, error) {
	op := fmt.Sprintf("acl policy set %q", name)
	if err := checkPolicyName(op, name); err != nil {
		return api.ACLPolicy{}, err
	}
	if err := checkRules(op, p.Rules); err != nil {
		return api.ACLPolicy{}, err
	}
	if p.Rules == nil {
		p.Rules = []api.ACLRule{}
	}
	return call[api.ACLPolicy](ctx, c, &request{
		op: op, method: http.MethodPut, path: "/v1/acl/policies/" + url.PathEscape(name),
		body: func() any { return p },
	})
}

// ACLPolicyList returns every policy, sorted by name.
func (c *Client) ACLPolicyList(ctx context.Context) ([]api.ACLPolicy, error) {
	out, err := call[api.ACLPolicyList](ctx, c, &request{op: "acl policy list", method: http.MethodGet, path: "/v1/acl/policies"})
	return orEmpty(out.Policies, err)
}

// ACLPolicyDelete deletes policy name. Tokens that name it lose its rules. A delete that
// had to be retried and then finds no such policy reports success: the earlier attempt
// deleted it.
func (c *Client) ACLPolicyDelete(ctx context.Context, name string) error {
	op := fmt.Sprintf("acl policy delete %q", name)
	if err := checkPolicyName(op, name); err != nil {
		return err
	}
	return c.remove(ctx, op, "/v1/acl/policies/"+url.PathEscape(name))
}

// ACLTokenCreate creates a token holding the policies req names. The answer's SecretID
// is shown this once: hand it to whoever will use the token, and keep it out of logs and
// command lines. Like ACLBootstrap it is not retried once an attempt may have been
// applied, so that no second token is minted whose secret nobody has seen.
func (c *Client) ACLTokenCreate(ctx context.Context, req api.ACLTokenRequest) (api.ACLToken, error) {
	op := "acl token create"
	if len(req.Policies) == 0 {
		return api.ACLToken{}, wrap(ErrInvalid, nil, "%s: name at least one policy", op)
	}
	for _, p := range req.Policies {
		if err := checkPolicyName(op, p); err != nil {
			return api.ACLToken{}, err
		}
	}
	return call[api.ACLToken](ctx, c, &request{
		op: op, method: http.MethodPost, path: "/v1/acl/tokens",
		body: func() any { return req }, once: true,
	})
}

// ACLTokenList returns every token, sorted by accessor ID, without secrets.
func (c *Client) ACLTokenList(ctx context.Context) ([]api.ACLToken, error) {
	out, err := call[api.ACLTokenList](ctx, c, &request{op: "acl token list", method: http.MethodGet, path: "/v1/acl/tokens"})
	return orEmpty(out.Tokens, err)
}

// ACLTokenRevoke revokes the token whose accessor ID is accessorID (the public half: the
// secret is never needed to revoke). A revoke that had to be retried and then finds no
// such token reports success: the earlier attempt revoked it.
func (c *Client) ACLTokenRevoke(ctx context.Context, accessorID string) error {
	op := fmt.Sprintf("acl token revoke %q", accessorID)
	if accessorID == "" {
		return wrap(ErrInvalid, nil, "%s: the accessor ID is required", op)
	}
	return c.remove(ctx, op, "/v1/acl/tokens/"+url.PathEscape(accessorID))
}

// ACLTokenUpdate replaces the description, policies and quotas of the token whose accessor
// ID is accessorID; its secret stays, so whoever holds it goes on using it. Setting the
// same values twice is harmless, so it is retried like any other call.
func (c *Client) ACLTokenUpdate(ctx context.Context, accessorID string, req api.ACLTokenRequest) (api.ACLToken, error) {
	op := fmt.Sprintf("acl token update %q", accessorID)
	if accessorID == "" {
		return api.ACLToken{}, wrap(ErrInvalid, nil, "%s: the accessor ID is required", op)
	}
	if len(req.Policies) == 0 {
		return api.ACLToken{}, wrap(ErrInvalid, nil, "%s: name at least one policy", op)
	}
	for _, p := range req.Policies {
		if err := checkPolicyName(op, p); err != nil {
			return api.ACLToken{}, err
		}
	}
	return call[api.ACLToken](ctx, c, &request{
		op: op, method: http.MethodPut, path: "/v1/acl/tokens/" + url.PathEscape(accessorID),
		body: func() any { return req },
	})
}

// Usage returns what the client's identity (its token, or every caller without one) holds
// in the cluster against its quotas, as the node it asks has applied it.
func (c *Client) Usage(ctx context.Context) (api.Usage, error) {
	return call[api.Usage](ctx, c, &request{op: "usage", method: http.MethodGet, path: "/v1/usage"})
}

// Usages returns every identity's use of the cluster and the cluster's against its limits;
// it needs a token with admin on the empty prefix.
func (c *Client) Usages(ctx context.Context) (api.UsageList, error) {
	out, err := call[api.UsageList](ctx, c, &request{op: "usage all", method: http.MethodGet, path: "/v1/usage", query: url.Values{"all": {""}}})
	if err == nil && out.Identities == nil {
		out.Identities = []api.Usage{}
	}
	return out, err
}

// ACLTokenSelf describes the token the client sends (WithToken), without its secret.
func (c *Client) ACLTokenSelf(ctx context.Context) (api.ACLToken, error) {
	return call[api.ACLToken](ctx, c, &request{op: "acl token self", method: http.MethodGet, path: "/v1/acl/token/self"})
}

// checkPolicyName checks a policy name as the server will: 1-128 characters of
// [A-Za-z0-9_-].
func checkPolicyName(op, name string) error {
	if name == "" || len(name) > 128 {
		return wrap(ErrInvalid, nil, "%s: a policy name is 1 to 128 characters", op)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return wrap(ErrInvalid, nil, "%s: a policy name holds only letters, digits, '_' and '-'", op)
		}
	}
	return nil
}

// checkRules checks that every rule names one of the four rights.
func checkRules(op string, rules []api.ACLRule) error {
	for _, r := range rules {
		switch r.Access {
		case api.AccessDeny, api.AccessRead, api.AccessLock, api.AccessAdmin:
		default:
			return wrap(ErrInvalid, nil, "%s: rule for prefix %q: access %q is not one of deny, read, lock, admin", op, r.Prefix, r.Access)
		}
	}
	return nil
}
