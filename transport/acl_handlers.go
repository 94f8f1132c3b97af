package transport

import (
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

func tokenJSON(t cluster.ACLToken) api.ACLToken {
	p := t.Policies
	if p == nil {
		p = []string{}
	}
	return api.ACLToken{AccessorID: t.Accessor, SecretID: t.Secret, Description: t.Description, Policies: p}
}

func tokenViewJSON(t fsm.ACLTokenView) api.ACLToken {
	return tokenJSON(cluster.ACLToken{Accessor: t.Accessor, Description: t.Description, Policies: t.Policies})
}

func policyJSON(p fsm.ACLPolicyView) api.ACLPolicy {
	out := api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: []api.ACLRule{}}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, api.ACLRule{Prefix: r.Prefix, Access: r.Access.String()})
	}
	return out
}

// handleACLBootstrap creates the management token. It needs no token: it works exactly
// once in the cluster's life, and the answer is the only place its secret appears.
func (s *Server) handleACLBootstrap(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err == nil {
		err = decodeStrict(body, &struct{}{}, true)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	tok, err := s.node.ACLBootstrap(r.Context())
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("ACL bootstrap: management token created", "accessor_id", tok.Accessor)
	writeJSON(w, http.StatusOK, tokenJSON(tok))
}

func (s *Server) handleACLSetPolicy(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req api.ACLPolicyRequest
	if err == nil {
		err = decodeStrict(body, &req, false)
	}
	var rules []fsm.ACLRule
	for _, rule := range req.Rules {
		if err != nil {
			break
		}
		a, perr := fsm.ParseAccess(rule.Access)
		if perr != nil {
			err = api.Errorf(api.CodeInvalidArgument, "rule for prefix %q: access must be deny, read, lock or admin", rule.Prefix)
		}
		rules = append(rules, fsm.ACLRule{Prefix: rule.Prefix, Access: a})
	}
	if err == nil {
		err = s.authorize(r, accessAdmin, "")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	name := r.PathValue("name")
	err = s.node.ACLSetPolicy(r.Context(), name, req.Description, rules)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	for _, v := range s.node.ACLPolicies() {
		if v.Name == name {
			writeJSON(w, http.StatusOK, policyJSON(v))
			return
		}
	}
	writeJSON(w, http.StatusOK, policyJSON(fsm.ACLPolicyView{Name: name, Description: req.Description, Rules: rules}))
}

func (s *Server) handleACLListPolicies(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	out := api.ACLPolicyList{Policies: []api.ACLPolicy{}}
	for _, p := range s.node.ACLPolicies() {
		out.Policies = append(out.Policies, policyJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleACLGetPolicy(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	for _, p := range s.node.ACLPolicies() {
		if p.Name == r.PathValue("name") {
			writeJSON(w, http.StatusOK, policyJSON(p))
			return
		}
	}
	writeError(w, api.Errorf(api.CodeNotFound, "no ACL policy %q", r.PathValue("name")))
}

func (s *Server) handleACLDeletePolicy(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	name := r.PathValue("name")
	err := s.node.ACLDeletePolicy(r.Context(), name)
	if s.forwarded(w, r, nil, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"deleted": name})
}

func (s *Server) handleACLCreateToken(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req api.ACLTokenRequest
	if err == nil {
		err = decodeStrict(body, &req, false)
	}
	if err == nil && len(req.Policies) == 0 {
		err = api.Errorf(api.CodeInvalidArgument, "policies must name at least one policy")
	}
	if err == nil {
		err = s.authorize(r, accessAdmin, "")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	tok, err := s.node.ACLCreateToken(r.Context(), req.Description, req.Policies)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("ACL token created", "accessor_id", tok.Accessor, "policies", tok.Policies)
	writeJSON(w, http.StatusOK, tokenJSON(tok))
}

func (s *Server) handleACLListTokens(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	out := api.ACLTokenList{Tokens: []api.ACLToken{}}
	for _, t := range s.node.ACLTokens() {
		out.Tokens = append(out.Tokens, tokenViewJSON(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleACLDeleteToken(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	accessor := r.PathValue("accessor")
	err := s.node.ACLDeleteToken(r.Context(), accessor)
	if s.forwarded(w, r, nil, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.log.Info("ACL token revoked", "accessor_id", accessor)
	writeJSON(w, http.StatusOK, map[string]string{"revoked": accessor})
}

// handleACLTokenSelf describes the caller's own token: any valid token may ask.
func (s *Server) handleACLTokenSelf(w http.ResponseWriter, r *http.Request) {
	id, hasToken, err := s.identity(r)
	if err == nil && !hasToken {
		err = api.Errorf(api.CodeUnauthenticated, "no token given (Authorization: Bearer <secret_id>)")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	t, ok := s.node.ACLTokenView(id.Accessor)
	if !ok {
		writeError(w, api.Errorf(api.CodeUnauthenticated, "the ACL token is not known to the cluster"))
		return
	}
	writeJSON(w, http.StatusOK, tokenViewJSON(t))
}
