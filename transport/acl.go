package transport

import (
	"net/http"
	"strings"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
)

// The rights a route needs; see authorize.
type access uint8

const (
	accessRead access = iota + 1
	accessLock
	accessAdmin
)

func (a access) fsm() fsm.Access {
	switch a {
	case accessRead:
		return fsm.AccessRead
	case accessLock:
		return fsm.AccessLock
	}
	return fsm.AccessAdmin
}

func (a access) String() string { return a.fsm().String() }

// anyName asks authorize for a right on some name: lease operations name no lock.
const anyName = "\x00any"

// aclOn reports whether ACLs are enforced.
func (s *Server) aclOn() bool { return s.cfg.ACL }

// identity resolves the request's bearer token (or the anonymous identity when it has
// none). The secret is hashed and looked up; it is never logged or echoed.
func (s *Server) identity(r *http.Request) (id fsm.ACLIdentity, hasToken bool, err error) {
	h := r.Header.Get(api.AuthorizationHeader)
	if h == "" {
		return s.node.ACLAnonymous(), false, nil
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || secret == "" {
		return id, true, api.Errorf(api.CodeUnauthenticated, "the Authorization header must be \"Bearer <secret_id>\"")
	}
	id, ok = s.node.ACLResolve(strings.TrimSpace(secret))
	if !ok {
		return id, true, api.Errorf(api.CodeUnauthenticated, "the ACL token is not known to the cluster (revoked, mistyped, or from another cluster)")
	}
	return id, true, nil
}

// authorize checks that r's token grants need on name (anyName: on some name; "" with
// accessAdmin: cluster-wide administration). With ACLs off it allows everything.
func (s *Server) authorize(r *http.Request, need access, name string) error {
	if !s.aclOn() {
		return nil
	}
	if !s.node.ACLBootstrapped() {
		return api.Errorf(api.CodeUnauthenticated, "ACLs are on but not bootstrapped yet: run `raftlock acl bootstrap` once to get the management token")
	}
	id, hasToken, err := s.identity(r)
	if err != nil {
		return err
	}
	var ok bool
	switch {
	case name == anyName:
		ok = id.AnyAccess(need.fsm())
	default:
		ok = id.Access(name) >= need.fsm() && id.Access(name) != fsm.AccessDeny
	}
	if ok {
		return nil
	}
	if !hasToken {
		return api.Errorf(api.CodeUnauthenticated, "ACLs are on: this request needs a token with %s rights (Authorization: Bearer <secret_id>)", need)
	}
	what := "name " + quoteName(name)
	switch name {
	case anyName:
		what = "any name"
	case "":
		what = "the cluster (admin on the empty prefix)"
	}
	return api.Errorf(api.CodePermissionDenied, "the token's policies do not grant %s on %s", need, what)
}

// canRead reports whether r may see lock name (list answers leave out the others).
func (s *Server) canRead(r *http.Request, name string) bool {
	return s.authorize(r, accessRead, name) == nil
}

func quoteName(name string) string {
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return "\"" + name + "\""
}
