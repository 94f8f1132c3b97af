package transport

import (
	"context"
	"mime"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// aclRoutes serves /v1/acl: bootstrap, policies and tokens. Every route but bootstrap
// and token/self needs the admin right.
type aclRoutes struct {
	acl  ACLStore
	auth *guard
	log  hclog.Logger
}

func tokenJSON(t cluster.ACLToken) api.ACLToken {
	p := t.Policies
	if p == nil {
		p = []string{}
	}
	return api.ACLToken{AccessorID: t.Accessor, SecretID: t.Secret, Description: t.Description, Policies: p, Quotas: quotasJSON(t.Quotas)}
}

func tokenViewJSON(t cluster.ACLTokenView) api.ACLToken {
	return tokenJSON(cluster.ACLToken{Accessor: t.Accessor, Description: t.Description, Policies: t.Policies, Quotas: t.Quotas})
}

func policyJSON(p cluster.ACLPolicyView) api.ACLPolicy {
	out := api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: []api.ACLRule{}, Quotas: quotasJSON(p.Quotas)}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, api.ACLRule{Prefix: r.Prefix, Access: r.Access.String()})
	}
	return out
}

// quotasJSON is a policy's or token's quotas as the API shows them: absent when none is
// set.
func quotasJSON(q cluster.Quotas) *api.Quotas {
	if q.IsZero() {
		return nil
	}
	return &api.Quotas{MaxLeases: q.MaxLeases, MaxLocks: q.MaxLocks, MaxWaiters: q.MaxWaiters}
}

// limitsJSON is the limits of the replicated state as the API shows them.
func limitsJSON(l cluster.Limits) api.Limits {
	q := l.PerIdentity
	return api.LimitsOf(l.MaxLeases, l.MaxLocksPerLease, l.MaxWaitersPerLock, l.MaxLocks, l.MaxWaiters,
		api.Quotas{MaxLeases: q.MaxLeases, MaxLocks: q.MaxLocks, MaxWaiters: q.MaxWaiters})
}

// quotasOf reads a request's quotas (nil: none).
func quotasOf(q *api.Quotas) cluster.Quotas {
	if q == nil {
		return cluster.Quotas{}
	}
	return cluster.Quotas{MaxLeases: q.MaxLeases, MaxLocks: q.MaxLocks, MaxWaiters: q.MaxWaiters}
}

// bootstrap creates the management token. It needs no token: it works exactly once in
// the cluster's life, and the answer is the only place its secret appears. So it is
// refused where it would be a trap: on a node without --acl (the token would protect
// nothing here, and a stranger could take it before the operator turns ACLs on), and for a
// request a browser could send from another site without the user's knowing (a form's
// content types, or an Origin header), which could use the one bootstrap up.
func (h aclRoutes) bootstrap(w http.ResponseWriter, r *http.Request) (call, error) {
	if !h.auth.on {
		return call{}, api.Errorf(api.CodeInvalidArgument, "ACLs are off on this node: start every node with --acl, then bootstrap")
	}
	if err := notCrossSite(r); err != nil {
		return call{}, err
	}
	body, _, err := readJSON[struct{}](w, r, true)
	if err != nil {
		return call{}, err
	}
	return call{body: body, do: func(ctx context.Context) (any, error) {
		tok, err := h.acl.Bootstrap(ctx)
		if err != nil {
			return nil, err
		}
		h.log.Info("ACL bootstrap: management token created", "accessor_id", tok.Accessor)
		return tokenJSON(tok), nil
	}}, nil
}

func (h aclRoutes) setPolicy(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.ACLPolicyRequest](w, r, false)
	var rules []cluster.ACLRule
	for _, rule := range req.Rules {
		if err != nil {
			break
		}
		a, perr := cluster.ParseAccess(rule.Access)
		if perr != nil {
			err = api.Errorf(api.CodeInvalidArgument, "rule for prefix %q: access must be deny, read, lock or admin", rule.Prefix)
		}
		rules = append(rules, cluster.ACLRule{Prefix: rule.Prefix, Access: a})
	}
	if err != nil {
		return call{}, err
	}
	name := r.PathValue("name")
	return call{body: body, need: accessAdmin, do: func(ctx context.Context) (any, error) {
		if err := h.acl.SetPolicy(ctx, name, req.Description, rules, quotasOf(req.Quotas)); err != nil {
			return nil, err
		}
		for _, v := range h.acl.Policies() {
			if v.Name == name {
				return policyJSON(v), nil
			}
		}
		return policyJSON(cluster.ACLPolicyView{Name: name, Description: req.Description, Rules: rules, Quotas: quotasOf(req.Quotas)}), nil
	}}, nil
}

func (h aclRoutes) listPolicies(w http.ResponseWriter, r *http.Request) (call, error) {
	return call{need: accessAdmin, do: func(context.Context) (any, error) {
		out := api.ACLPolicyList{Policies: []api.ACLPolicy{}}
		for _, p := range h.acl.Policies() {
			out.Policies = append(out.Policies, policyJSON(p))
		}
		return out, nil
	}}, nil
}

func (h aclRoutes) getPolicy(w http.ResponseWriter, r *http.Request) (call, error) {
	name := r.PathValue("name")
	return call{need: accessAdmin, do: func(context.Context) (any, error) {
		for _, p := range h.acl.Policies() {
			if p.Name == name {
				return policyJSON(p), nil
			}
		}
		return nil, api.Errorf(api.CodeNotFound, "no ACL policy %q", name)
	}}, nil
}

func (h aclRoutes) deletePolicy(w http.ResponseWriter, r *http.Request) (call, error) {
	name := r.PathValue("name")
	return call{need: accessAdmin, do: func(ctx context.Context) (any, error) {
		return map[string]string{"deleted": name}, h.acl.DeletePolicy(ctx, name)
	}}, nil
}

func (h aclRoutes) createToken(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.ACLTokenRequest](w, r, false)
	if err == nil && len(req.Policies) == 0 {
		err = api.Errorf(api.CodeInvalidArgument, "policies must name at least one policy")
	}
	if err != nil {
		return call{}, err
	}
	return call{body: body, need: accessAdmin, do: func(ctx context.Context) (any, error) {
		tok, err := h.acl.CreateToken(ctx, req.Description, req.Policies, quotasOf(req.Quotas))
		if err != nil {
			return nil, err
		}
		h.log.Info("ACL token created", "accessor_id", tok.Accessor, "policies", tok.Policies)
		return tokenJSON(tok), nil
	}}, nil
}

// updateToken replaces a token's description, policies and quotas; its secret stays,
// so its holders go on using it.
func (h aclRoutes) updateToken(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.ACLTokenRequest](w, r, false)
	if err == nil && len(req.Policies) == 0 {
		err = api.Errorf(api.CodeInvalidArgument, "policies must name at least one policy")
	}
	if err != nil {
		return call{}, err
	}
	accessor := r.PathValue("accessor")
	return call{body: body, need: accessAdmin, do: func(ctx context.Context) (any, error) {
		tok, err := h.acl.UpdateToken(ctx, accessor, req.Description, req.Policies, quotasOf(req.Quotas))
		if err != nil {
			return nil, err
		}
		h.log.Info("ACL token updated", "accessor_id", tok.Accessor, "policies", tok.Policies)
		return tokenJSON(tok), nil
	}}, nil
}

// tokenSelf describes the caller's own token: any valid token may ask.
func (h aclRoutes) tokenSelf(w http.ResponseWriter, r *http.Request) (call, error) {
	id, hasToken, err := h.auth.identity(r)
	if err == nil && !hasToken {
		err = api.Errorf(api.CodeUnauthenticated, "no token given (Authorization: Bearer <secret_id>)")
	}
	if err != nil {
		return call{}, err
	}
	return call{do: func(context.Context) (any, error) {
		t, ok := h.acl.Token(id.Accessor)
		if !ok {
			return nil, api.Errorf(api.CodeUnauthenticated, "the ACL token is not known to the cluster")
		}
		return tokenViewJSON(t), nil
	}}, nil
}

// notCrossSite refuses a request that a web page of another site could have made a
// browser send: one with an Origin header (browsers add it to cross-origin POSTs; raftlock's
// own clients never send one), or with one of the content types an HTML form or a
// no-preflight fetch may use.
func notCrossSite(r *http.Request) error {
	if r.Header.Get("Origin") != "" {
		return api.Errorf(api.CodePermissionDenied, "a request with an Origin header (sent by a web browser) is refused here; bootstrap with `raftlock acl bootstrap` or curl")
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return api.Errorf(api.CodeInvalidArgument, "Content-Type %s is refused here: send no body, or application/json", mt)
	}
	return nil
}
