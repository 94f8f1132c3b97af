package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/cluster"
)

// An endpoint is one route's own part of a request: it reads and checks what the caller
// sent and returns the call to make, or the error to answer. Everything else (authorize,
// hold, serve here or forward to the leader, write the answer or the error) is the same
// for every route and done once, by Server.serve.
type endpoint func(w http.ResponseWriter, r *http.Request) (call, error)

// A call is a decoded request.
type call struct {
	// body is the request body as read, sent on unchanged when the call is forwarded.
	body []byte
	// need is the right the caller needs on name (see guard.authorize); zero for none:
	// an open route, or one whose endpoint has checked the caller itself.
	need access
	name string
	// more are further names need is checked on (a lockset's other locks).
	more []string
	// leases are the existing leases the call acts on (its lease_id): each must exist
	// and, with ACLs on, be the caller's own, or the call is answered lease_not_found
	// without proposing anything (the lease gate, leasegate.go).
	leases []cluster.LeaseID
	// requestID is the request_id whose implicit lease the call acts on (a retry may find
	// it made): the gate lets it be missing (the call creates it) but not another
	// identity's; it is found once the caller is known, since from protocol version 4 the
	// lease depends on the caller (cluster.Leases.ImplicitLease).
	requestID string
	// stale marks a call that reads this node's applied state as it is (a stale lookup):
	// the gate judges its leases from that state too, without a read barrier.
	stale bool
	// wait is how long a waiting acquire or blocking query may be held: while it is
	// served here it takes a slot of Config.MaxHeldRequests, and a forward of it may take
	// that much longer.
	wait time.Duration
	// slow is how much longer a forward may take, for a call that holds no slot (a backup).
	slow time.Duration
	// traced marks the request decoded in its latency-budget trace (Config.Budget).
	traced bool
	// idempotent marks a call whose repetition has the effect of one (a keepalive, a
	// release with its token, an acquire on a named lease or with a request_id, a
	// revoke): after an ambiguous outcome the node that received it makes it again, within
	// its hold. GET requests are idempotent without saying so.
	idempotent bool
	// do makes the call: it returns the answer (see writeAnswer) or the error. An
	// error that is cluster.ErrNotLeader sends the request to the leader instead.
	do func(ctx context.Context) (any, error)
}

// created is an answer written with 201 Created.
type created struct{ v any }

// rawAnswer is an answer that writes itself (a backup file, an event stream, a file).
type rawAnswer func(w http.ResponseWriter)

// serve turns an endpoint into the handler of a route at p: route, then decode and
// authorize (only what is served here), hold, serve here or forward, answer.
//
// Routing comes first (place.go): a request that needs the leader and reaches a follower
// that knows it is forwarded as it came, its endpoint never run here. The route is
// decided again before every further try of a held request, so a request held through an
// election goes to whichever node then leads, this one included.
func (s *Server) serve(p place, ep endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var (
			c       call
			id      cluster.ACLIdentity
			ctx     = r.Context()
			err     error
			decoded bool
		)
		toLeader := s.routesToLeader(p, r)
		if toLeader {
			var body []byte
			if body, err = readBodyFor(w, r, p); err != nil {
				writeError(w, err)
				return
			}
			c = undecoded(p, r, body)
		} else {
			if c, id, ctx, err = s.decode(w, r, ep); err != nil {
				writeError(w, err)
				return
			}
			decoded = true
		}
		if c.traced && s.cfg.Budget != nil {
			markDecoded(r)
		}
		if c.wait > 0 {
			release, err := s.holdSlot(r)
			if err != nil {
				writeError(w, err)
				return
			}
			defer release()
		}
		h := s.newHold(r, c)
		defer h.done()
		idempotent := c.idempotent || r.Method == http.MethodGet
		// maybe is the ambiguous outcome of an earlier attempt, once the call is repeated
		// after one: the repeat may then meet the first attempt's own effect (the lease it
		// revoked, the permit it gave back), and an answer that denies an effect which may
		// have happened would be false; the call answers maybe's unknown_outcome instead.
		var maybe error
		for {
			var v any
			if toLeader {
				err = s.forward(w, r, c.body, c.wait+c.slow, h.end(c), maybe != nil)
			} else {
				if !decoded {
					// First served here after a hold that began with a forward: decode the
					// body as read. A refusal now (the leader would have given it too) must
					// not deny an effect an earlier attempt may have had.
					r.Body = io.NopCloser(bytes.NewReader(c.body))
					if c, id, ctx, err = s.decode(w, r, ep); err != nil {
						if maybe != nil {
							err = maybe
						}
						s.writeFailure(w, r, err)
						return
					}
					decoded = true
					idempotent = c.idempotent || r.Method == http.MethodGet
				}
				v, err = s.attempt(ctx, id, c)
				// The node returns ErrNotLeader only when it proposed nothing (leadership
				// moved after the request was routed here), so a request is forwarded at
				// most once per attempt and never after any part of it may have been applied.
				if errors.Is(err, cluster.ErrNotLeader) {
					err = s.forward(w, r, c.body, c.wait+c.slow, h.end(c), maybe != nil)
				} else if err == nil {
					writeAnswer(w, v)
					return
				}
			}
			if err == nil || errors.Is(err, errCallerGone) {
				return // relayed, or nobody to answer
			}
			if maybe != nil && deniesEffect(err) {
				s.writeFailure(w, r, maybe)
				return
			}
			if h.retry(err, idempotent) {
				if ambiguous(err) {
					maybe = err
				}
				toLeader = s.routesToLeader(p, r)
				continue
			}
			s.writeFailure(w, r, err)
			return
		}
	}
}

// decode runs the endpoint of a request served here, and authorizes the caller for the
// call: the call, the caller's identity, and the context to make the call with.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, ep endpoint) (call, cluster.ACLIdentity, context.Context, error) {
	ctx := r.Context()
	c, err := ep(w, r)
	var id cluster.ACLIdentity
	if err == nil && c.need != 0 {
		id, err = s.auth.authorized(r, c.need, c.name, c.more...)
		if err == nil && s.cfg.ACL {
			ctx = cluster.WithLeaseCreator(ctx, id.Accessor)
		}
	}
	return c, id, ctx, err
}

// attempt makes call c once for the caller id: behind the lease gate when it acts on
// leases, so that a lease that is missing or another identity's is refused before
// anything is proposed, on the leader, whatever node the request came to (leasegate.go).
// The gate's barrier fails as the call would (cluster.ErrNotLeader on a follower: the
// call is forwarded), having proposed nothing either.
func (s *Server) attempt(ctx context.Context, id cluster.ACLIdentity, c call) (any, error) {
	if len(c.leases) > 0 || c.requestID != "" {
		if err := s.gate.admit(ctx, id, s.gate.leaseUses(ctx, c), c.stale); err != nil {
			return nil, err
		}
	}
	return c.do(ctx)
}

// writeFailure answers the error a request ended in. A node that a request was forwarded
// to marks an answer that changed nothing for want of a leader (holdableHeader), so that
// the node the client chose holds the request instead of passing the 503 on; a relayed
// such answer that the hold could not outlast is passed on as it was.
func (s *Server) writeFailure(w http.ResponseWriter, r *http.Request, err error) {
	var rh relayedHoldable
	if errors.As(err, &rh) {
		for k, vs := range rh.header {
			w.Header()[k] = vs
		}
		w.WriteHeader(rh.status)
		_, _ = w.Write(rh.body)
		return
	}
	if r.Header.Get(hopHeader) != "" && leaderless(err) {
		w.Header().Set(holdableHeader, "1")
	}
	writeError(w, s.deadlockFor(r, err))
}

// writeAnswer writes a call's answer: JSON with 200, or as its type says.
func writeAnswer(w http.ResponseWriter, v any) {
	switch a := v.(type) {
	case created:
		writeJSON(w, http.StatusCreated, a.v)
	case rawAnswer:
		a(w)
	default:
		writeJSON(w, http.StatusOK, v)
	}
}
