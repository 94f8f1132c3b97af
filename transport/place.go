package transport

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/internal/mutant"
)

// Where a request is served is decided first, from its method, its route and its query,
// before its endpoint reads the body: a request that needs the leader and reaches a
// follower that knows the leader is forwarded at once, as rqlite routes a request before
// it executes it and Consul forwards an RPC before it does any work. The follower then
// draws no lease ID, registers no wait, passes no lease gate and decodes nothing: the
// leader does all of that once, on its own state, as for a request sent to it (it also
// decides the caller's rights, and which member relayed the request: authorize.go).
//
// What the follower still needs in order to hold and bound the forward is read from the
// route and the query, and for a holder's body (an acquire, a lockset, a permit, a
// campaign) from three of its top-level fields without decoding the request (holderHints):
// how long it may wait, and whether it names its lease or a request_id, which makes
// repeating it safe after an ambiguous outcome (hold.go).
//
// A route served here (zero place) runs its endpoint on the node that received it; its
// call is forwarded only when the node answers cluster.ErrNotLeader. So do the routes
// below whenever the node cannot route them first: no leader is known, this node is
// becoming the leader, or the leader's HTTP address is not registered yet. cluster.ErrNotLeader
// then remains for a leadership change in flight: a request routed here as the leader
// that lost its office before proposing is still forwarded.

// place says where a route's requests are served and what a follower needs to know of
// one it forwards before decoding it.
type place struct {
	// leader: the route needs the leader (a write, or a linearizable read). A follower
	// that knows the leader forwards it before its endpoint runs.
	leader bool
	// staleHere: with ?stale the route reads this node's applied state as it is, and is
	// served here.
	staleHere bool
	// holder: the body is a holder's (holderFields): its wait_ms bounds the forward, and
	// it is idempotent with a lease_id or a request_id (acquireCall).
	holder bool
	// idempotent: a repetition has the effect of one whatever the body (call.idempotent).
	idempotent bool
	// limit is the largest body the route reads; zero means api.MaxBodyBytes.
	limit int64
	// traced: the route's requests are decoded in their latency-budget trace (call.traced).
	traced bool
}

// The places of the routes (routes.go).
//
// The routes of administration (ACLs, membership, versions, leadership transfer, backups)
// are served here: they are rare, their endpoints do no cluster work before the node
// answers cluster.ErrNotLeader, and some of them check what a forward does not carry (the
// connection a node registers itself over, the Origin of a bootstrap).
var (
	// here is a route served by the node that received the request.
	here = place{}
	// atLeader is a write whose repetition is not known to be harmless (a lease create).
	atLeader = place{leader: true}
	// atLeaderOnce is a write whose repetition has the effect of one (a release, a
	// keepalive, a revoke).
	atLeaderOnce = place{leader: true, idempotent: true}
	// atLeaderHolder is a request that can wait in a queue.
	atLeaderHolder = place{leader: true, holder: true}
	// atLeaderRead is a read that is linearizable unless ?stale.
	atLeaderRead = place{leader: true, staleHere: true}
	// keepAlives is POST /v1/leases/keepalive, whose batch form takes a larger body.
	keepAlives = place{leader: true, idempotent: true, limit: api.MaxKeepAliveBodyBytes}
)

// traced is p for a route whose requests are decoded in their latency-budget trace.
func traced(p place) place {
	p.traced = true
	return p
}

// routesToLeader reports whether request r, of a route at p, is forwarded before its
// endpoint runs: p needs the leader, r does not ask for this node's own state, this node
// can write its data directory, and another node leads at a registered HTTP address this
// node can send it to.
func (s *Server) routesToLeader(p place, r *http.Request) bool {
	if !p.leader || mutant.Is("grant-without-commit") || mutant.Is("follower-local-read") {
		// Those mutants make a follower answer what it should forward: the request must
		// reach the node's own code for them to act.
		return false
	}
	if p.staleHere && r.URL.RawQuery != "" && askedStale(r.URL.Query()) {
		return false
	}
	rt := s.svc.Routing
	if rt.IsLeader() {
		return false
	}
	if rt.StorageErr() != nil {
		// A node that cannot write its data directory takes no part, not even as a relay
		// (cluster refuses it every write with ErrStorage, 503 no_leader): its client goes
		// to a healthy node, as /readyz tells a load balancer to.
		return false
	}
	id, _ := rt.LeaderWatch()
	if id == "" || id == rt.ID() {
		return false // no leader known, or this node is becoming it: served here
	}
	addr := rt.LeaderHTTPAddr()
	return addr != "" && addr != rt.HTTPAddr()
}

// askedStale reports whether a query may ask for a stale read (queryBool): ?stale,
// ?stale=true or ?stale=1, and a malformed value, which the endpoint here refuses.
func askedStale(q url.Values) bool {
	v, ok := q["stale"]
	return ok && v[0] != "0" && v[0] != "false"
}

// undecoded is the call of a request forwarded before its endpoint ran: its body as read,
// and what the hold and the forward need (call's fields of the same names), from the
// route, the query and holderHints. It has no do: the node never makes it itself.
func undecoded(p place, r *http.Request, body []byte) call {
	c := call{body: body, idempotent: p.idempotent, traced: p.traced}
	if r.URL.RawQuery != "" {
		if ms, err := queryUint(r.URL.Query(), "wait_ms", api.MaxWaitMs); err == nil {
			c.wait = time.Duration(ms) * time.Millisecond // a blocking query
		}
	}
	if p.holder {
		wait, named := holderHints(body)
		c.wait, c.idempotent = wait, named
	}
	return c
}

// holderHints reads the top-level fields of a holder's body that a follower's hold needs,
// with the rules the leader's decoder will read them by (field names matched as
// encoding/json matches them), without decoding the request: how long it may wait, and
// whether it names a lease or a request_id. A body the leader will refuse answers zero.
func holderHints(body []byte) (wait time.Duration, named bool) {
	var f struct {
		LeaseID   given `json:"lease_id"`
		RequestID given `json:"request_id"`
		WaitMs    int64 `json:"wait_ms"`
	}
	if json.Unmarshal(body, &f) != nil {
		return 0, false
	}
	ms := min(max(f.WaitMs, 0), api.MaxWaitMs)
	return time.Duration(ms) * time.Millisecond, bool(f.LeaseID || f.RequestID)
}

// given is a string field read only for whether it is there and not empty.
type given bool

func (g *given) UnmarshalJSON(b []byte) error {
	*g = len(b) > 2 && b[0] == '"' // a JSON string with at least one character
	return nil
}

// readBodyFor reads the body of a request at p, within the route's limit.
func readBodyFor(w http.ResponseWriter, r *http.Request, p place) ([]byte, error) {
	if p.limit > 0 {
		return readBodyLimit(w, r, p.limit)
	}
	return readBody(w, r)
}
