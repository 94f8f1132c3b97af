package transport

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/raftlock/raftlock/api"
)

// limiter counts requests held open (waiting acquires, blocking queries) against a cap, so
// that a flood of them is refused with 429 instead of exhausting the node.
type limiter struct {
	max  int64
	held atomic.Int64
}

func newLimiter(max int) *limiter { return &limiter{max: int64(max)} }

// acquire takes a slot; ok is false when the cap is reached. release frees the slot.
func (l *limiter) acquire() (release func(), ok bool) {
	if l.held.Add(1) > l.max {
		l.held.Add(-1)
		return nil, false
	}
	return func() { l.held.Add(-1) }, true
}

// perIdentity counts what each caller holds open on this node (held requests, or event
// streams) against a cap per caller, beside the node-wide cap: one caller, however many
// connections it opens, cannot take every slot of the node.
type perIdentity struct {
	max  int
	mu   sync.Mutex
	held map[string]int // only callers that hold at least one
}

func newPerIdentity(max int) *perIdentity {
	return &perIdentity{max: max, held: map[string]int{}}
}

// acquire takes one of key's slots; ok is false when key holds max already. An empty key
// (a caller counted elsewhere: see callerKey) is never refused. release frees the slot,
// once.
func (p *perIdentity) acquire(key string) (release func(), ok bool) {
	if key == "" {
		return func() {}, true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[key] >= p.max {
		return nil, false
	}
	p.held[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.held[key]--; p.held[key] <= 0 {
				delete(p.held, key)
			}
		})
	}, true
}

// callerKey names who r comes from, for the per-identity caps. With ACLs on it is the
// request's token (by accessor) when the token is known here, else the node whose
// certificate speaks for itself, else the anonymous identity, which every caller without
// a token shares. A request forwarded by another node without a known token gets the empty
// key (no per-identity cap): the node the client sent it to counted it. Only a member's
// node certificate proves a forward: without it (TLS off, or a client that sets the hop
// header itself) the request is its caller's, anonymous without a token. With ACLs off
// there are no identities to tell apart (every caller may do everything, and an address
// is not an identity behind a NAT or a proxy): only the node-wide caps apply.
func (s *Server) callerKey(r *http.Request) string {
	if !s.cfg.ACL {
		return ""
	}
	if secret, ok := strings.CutPrefix(r.Header.Get(api.AuthorizationHeader), "Bearer "); ok && secret != "" {
		if id, known := s.svc.Identities.Resolve(strings.TrimSpace(secret)); known {
			return "token:" + id.Accessor
		}
	}
	if id := callerNode(r, s.svc.Members); id != "" {
		return "node:" + id
	}
	if r.Header.Get(hopHeader) != "" && s.fromMember(r) {
		return ""
	}
	return "anonymous"
}

// holdSlot takes a held-request slot for r: one of the node's (Config.MaxHeldRequests)
// and one of its caller's (Config.MaxHeldPerIdentity). Refused, it returns the error to
// answer (429 too_many_requests with Retry-After).
func (s *Server) holdSlot(r *http.Request) (release func(), err error) {
	node, ok := s.held.acquire()
	if !ok {
		return nil, heldLimitError{s.cfg.MaxHeldRequests}
	}
	own, ok := s.heldByID.acquire(s.callerKey(r))
	if !ok {
		node()
		return nil, identityLimitError{what: "waiting acquires and blocking queries", max: s.cfg.MaxHeldPerIdentity}
	}
	return func() { own(); node() }, nil
}

// streamSlot takes one of r's caller's event-stream slots (Config.MaxStreamsPerIdentity);
// the node-wide cap is the EventSource's own (cluster.ErrTooManySubscribers).
func (s *Server) streamSlot(r *http.Request) (release func(), err error) {
	release, ok := s.streamsByID.acquire(s.callerKey(r))
	if !ok {
		return nil, identityLimitError{what: "event streams", max: s.cfg.MaxStreamsPerIdentity}
	}
	return release, nil
}
