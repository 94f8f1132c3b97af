package transport

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/tlsconf"
)

// The rights a route needs; see authorize.
type access uint8

const (
	accessRead access = iota + 1
	accessLock
	accessAdmin
)

// right is the ACL right a route's need is.
func (a access) right() cluster.Access {
	switch a {
	case accessRead:
		return cluster.AccessRead
	case accessLock:
		return cluster.AccessLock
	}
	return cluster.AccessAdmin
}

func (a access) String() string { return a.right().String() }

// anyName asks authorize for a right on some name: lease operations name no lock.
const anyName = "\x00any"

// guard decides what a request may do, from its bearer token and the ACL store.
type guard struct {
	ids Identities
	on  bool // Config.ACL: with ACLs off everything is allowed
}

// identity resolves the request's bearer token (or the anonymous identity when it has
// none). The secret is hashed and looked up; it is never logged or echoed.
func (g *guard) identity(r *http.Request) (id cluster.ACLIdentity, hasToken bool, err error) {
	h := r.Header.Get(api.AuthorizationHeader)
	if h == "" {
		return g.ids.Anonymous(), false, nil
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || secret == "" {
		return id, true, api.Errorf(api.CodeUnauthenticated, "the Authorization header must be \"Bearer <secret_id>\"")
	}
	id, ok = g.ids.Resolve(strings.TrimSpace(secret))
	if !ok {
		return id, true, api.Errorf(api.CodeUnauthenticated, "the ACL token is not known to the cluster (revoked, mistyped, or from another cluster)")
	}
	return id, true, nil
}

// authorize checks that r's token grants need on name (anyName: on some name; "" with
// accessAdmin: cluster-wide administration). With ACLs off it allows everything.
func (g *guard) authorize(r *http.Request, need access, name string) error {
	_, err := g.authorized(r, need, name)
	return err
}

// authorized is authorize that also returns the identity it resolved (the zero identity
// with ACLs off), on name and each of more (a lockset's other names): the token is
// resolved once, and the first name it lacks need on is the one the error names.
func (g *guard) authorized(r *http.Request, need access, name string, more ...string) (cluster.ACLIdentity, error) {
	if !g.on {
		return cluster.ACLIdentity{}, nil
	}
	if !g.ids.Bootstrapped() {
		return cluster.ACLIdentity{}, api.Errorf(api.CodeUnauthenticated, "ACLs are on but not bootstrapped yet: run `raftlock acl bootstrap` once to get the management token")
	}
	id, hasToken, err := g.identity(r)
	if err != nil {
		return id, err
	}
	for i := -1; i < len(more); i++ {
		n := name
		if i >= 0 {
			n = more[i]
		}
		if !grants(id, need, n) {
			return id, denied(hasToken, need, n)
		}
	}
	return id, nil
}

// grants reports whether id has need on name (see authorize for anyName and "").
func grants(id cluster.ACLIdentity, need access, name string) bool {
	if name == anyName {
		return id.AnyAccess(need.right())
	}
	a := id.Access(name)
	return a >= need.right() && a != cluster.AccessDeny
}

// denied is the error for a caller that lacks need on name: unauthenticated without a
// token (a token may grant it), permission_denied with one.
func denied(hasToken bool, need access, name string) error {
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

// reader returns whether r may see each lock name (list answers leave out the others),
// with the token resolved once for the whole listing, not once per name scanned.
func (g *guard) reader(r *http.Request) func(name string) bool {
	if !g.on {
		return func(string) bool { return true }
	}
	if !g.ids.Bootstrapped() {
		return func(string) bool { return false }
	}
	id, _, err := g.identity(r)
	if err != nil {
		return func(string) bool { return false }
	}
	return func(name string) bool { return grants(id, accessRead, name) }
}

func quoteName(name string) string {
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return "\"" + name + "\""
}

// nodeHeader says, on a forwarded request, who the original caller was: the ID of the
// node that sent it (proven to the forwarding node by its certificate), or notANode. The
// forwarding node always sets it, so the node forwarded to authorizes the original caller,
// never the forwarding node whose certificate the connection carries.
const nodeHeader = "X-Raftlock-Node"

// notANode is nodeHeader's value when the original caller was not a node.
const notANode = "-"

// callerNode returns the ID of the node that sent r, or "" when no node did. A verified
// node certificate on the connection speaks only for its own ID, and only while that ID is
// a member (m): a removed node's certificate proves nothing. On a direct request that node
// is the caller. On a forwarded one (hopHeader set) the connection's node is only the
// relay: the caller is the member it names in nodeHeader, and nobody when the header says
// notANode or is missing.
func callerNode(r *http.Request, m Membership) string {
	id := connNode(r, m)
	if id == "" || r.Header.Get(hopHeader) == "" {
		return id
	}
	if v := r.Header.Get(nodeHeader); v != "" && v != notANode && m.Has(v) {
		return v
	}
	return ""
}

// connNode returns the ID of the current member whose verified node certificate is on
// r's connection (the last hop), or "".
func connNode(r *http.Request, m Membership) string {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	id, ok := tlsconf.NodeIDFromCert(r.TLS.PeerCertificates[0])
	if !ok || !m.Has(id) {
		return ""
	}
	return id
}

// selfNode returns the ID of the member that sent r about itself, or "": the member
// whose certificate is on the connection, when the request is its own (direct, or
// forwarded with nodeHeader naming that same member). A node's registration and version
// claim are believed only from selfNode, never from callerNode: a relayed caller is the
// relay's word, and any member could otherwise claim to relay for another (n2's
// certificate with X-Raftlock-Hops: 1 and X-Raftlock-Node: n1 re-pointed the leader n1's
// HTTP address). A genuine relay of a node's registration (the node took a
// follower for the leader) is refused too; the node's register loop asks the leader
// itself when leadership settles.
func selfNode(r *http.Request, m Membership) string {
	id := connNode(r, m)
	if id == "" || r.Header.Get(hopHeader) == "" || r.Header.Get(nodeHeader) == id {
		return id
	}
	return ""
}

// forwardUnknownTokens sends a request whose token this node does not know to the leader
// instead of refusing it, when another node leads: a token created a moment ago through
// the leader may not have reached this follower yet, and the leader's state is the one
// that decides. The leader answers 401 if it does not know the token either.
//
// A request that serve routes to the leader anyway (place.go) is left to serve, which
// forwards it before authorizing anything and holds it: forwarded from here, it would have
// no hold, and an acquire whose answer was lost on the way back would be answered 503
// unknown_outcome where serve repeats it on its request_id or lease (hold.go).
func (s *Server) forwardUnknownTokens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An event stream is never forwarded (a forward buffers the whole answer): a node
		// streams its own applied entries, and refuses a token it does not know yet.
		if !s.cfg.ACL || !strings.HasPrefix(r.URL.Path, "/v1/") || s.svc.Routing.IsLeader() || r.Header.Get(hopHeader) != "" || r.URL.Path == "/v1/events" {
			next.ServeHTTP(w, r)
			return
		}
		secret, ok := strings.CutPrefix(r.Header.Get(api.AuthorizationHeader), "Bearer ")
		if !ok || secret == "" {
			next.ServeHTTP(w, r)
			return
		}
		if _, known := s.svc.Identities.Resolve(strings.TrimSpace(secret)); known {
			next.ServeHTTP(w, r)
			return
		}
		if id, _ := s.svc.Routing.LeaderWatch(); id == "" || s.svc.Routing.LeaderHTTPAddr() == "" {
			next.ServeHTTP(w, r) // nobody to ask: refuse here
			return
		}
		if _, pattern := s.mux.Handler(r); s.routesToLeader(s.places[pattern], r) {
			next.ServeHTTP(w, r) // serve forwards it, with its hold
			return
		}
		body, err := readBody(w, r)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := s.forward(w, r, body, requestWait(r, body), time.Time{}, false); err != nil && !errors.Is(err, errCallerGone) {
			s.writeFailure(w, r, err)
		}
	})
}

// requestWait is how long a request may legitimately be held: its wait_ms, from the
// query (blocking queries) or the body (waiting acquires).
func requestWait(r *http.Request, body []byte) time.Duration {
	ms, _ := strconv.ParseInt(r.URL.Query().Get("wait_ms"), 10, 64)
	var b struct {
		WaitMs int64 `json:"wait_ms"`
	}
	if json.Unmarshal(body, &b) == nil && b.WaitMs > ms {
		ms = b.WaitMs
	}
	return time.Duration(min(max(ms, 0), api.MaxWaitMs)) * time.Millisecond
}
