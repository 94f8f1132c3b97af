package transport

import (
	"errors"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/internal/mutant"
)

// DefaultHoldTimeout is how long a node holds a request while it knows no leader, as
// Consul's rpc_hold_timeout: longer than any election on a healthy cluster, short enough
// that a client still learns of an outage.
const DefaultHoldTimeout = 7 * time.Second

// holdableHeader marks an answer of a node that a request was forwarded to, when what it
// answers certainly changed nothing and is about leadership (no leader known there, the
// hop limit, the leader unreachable): the node the client sent the request to then holds
// and retries it, as it would its own such error. Other 503s (a protocol version not yet
// active, a halted node) are relayed as they are.
const holdableHeader = "X-Raftlock-Holdable"

// holdPoll is how often a held request looks again for a leader besides the leader
// changes raft reports: readiness also waits for a registration and for the log to apply.
const holdPoll = 20 * time.Millisecond

// A hold keeps one request on the node that received it while the cluster has no leader
// it can reach, and says when to try it again. Only the node the client sent the request
// to holds it (a forwarded request is answered at once, marked holdable), so holds never
// nest.
type hold struct {
	s        *Server
	r        *http.Request
	deadline time.Time // zero: this request is not held
	release  func()    // the held-request slot taken when holding began
}

// newHold returns the hold of request r: bounded by Config.HoldTimeout, and by the
// request's own wait when it has one (a waiting acquire is not held past the time it
// asked to wait).
func (s *Server) newHold(r *http.Request, c call) *hold {
	h := &hold{s: s, r: r}
	bound := s.cfg.HoldTimeout
	if c.wait > 0 && c.wait < bound {
		bound = c.wait
	}
	if bound > 0 && r.Header.Get(hopHeader) == "" {
		h.deadline = time.Now().Add(bound)
	}
	if c.wait > 0 {
		h.release = func() {} // a waiting call holds its slot already (Server.serve)
	}
	return h
}

// end is when a forward of call c must give up so that the answer comes within the
// hold: the hold's deadline for a call that does not wait, zero (no limit beyond the
// forward's own bound) for one that waits, whose forward may take its whole wait.
func (h *hold) end(c call) time.Time {
	if c.wait > 0 || c.slow > 0 {
		return time.Time{}
	}
	return h.deadline
}

// done frees the slot a held request took.
func (h *hold) done() {
	if h.release != nil {
		h.release()
	}
}

// retry says whether the call that ended in err should be made again: err must mean that
// nothing was applied and that the cluster has no leader this node could reach, or, for
// a call whose repetition is idempotent, that it may have been applied. retry then waits
// until this node would serve or forward a request again, and reports false when the
// hold's bound, the caller or the held-request cap ends the hold first.
func (h *hold) retry(err error, idempotent bool) bool {
	if mutant.Is("hold-never-retries") {
		return false
	}
	if mutant.Is("hold-retries-non-idempotent") {
		idempotent = true
	}
	if h.deadline.IsZero() || !(leaderless(err) || (idempotent && ambiguous(err))) {
		return false
	}
	if h.release == nil {
		release, err := h.s.holdSlot(h.r)
		if err != nil {
			return false
		}
		h.release = release
	}
	ctx := h.r.Context()
	timer := time.NewTimer(time.Until(h.deadline))
	defer timer.Stop()
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	first := true
	for {
		_, changed := h.s.svc.Routing.LeaderWatch()
		// Try again at once only after at least one look: the attempt that just failed
		// saw a node that seemed ready, and repeating it at once would spin.
		if !first && h.s.svc.Routing.Serving() != "" {
			return true
		}
		first = false
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		case <-changed:
		case <-tick.C:
		}
	}
}

// The hold decides by the retry class of the answer an error would be (the API's
// catalogue, api/outcomes.go, through errorFor's table), and holds only what a new leader
// ends: an error whose class allows no repeat is never held, whatever its cause.

// leaderless reports an error after which the request was certainly not applied and a
// new leader, or a reachable one, is what it waits for: answered no_leader (retry class
// other_node) for want of a leader, not because this node is going away or cannot write
// (the client should try another node) nor for a protocol version not active yet.
func leaderless(err error) bool {
	var hop hopLimitError
	var fe forwardError
	var rh relayedHoldable
	cause := false
	switch {
	case errors.Is(err, cluster.ErrShutdown):
		return false // this node is going away: the client should try another
	case errors.Is(err, cluster.ErrUnknownOutcome):
		return false
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotLeader):
		cause = true
	case errors.As(err, &hop), errors.As(err, &rh):
		cause = true
	case errors.As(err, &fe):
		cause = !fe.reached
	}
	return cause && retryOf(err) == api.RetryOtherNode
}

// ambiguous reports an error after which the request may or may not have been applied:
// answered unknown_outcome (retry class ambiguous) because a command was in flight as
// leadership moved, or a forward may have reached the leader.
func ambiguous(err error) bool {
	var fe forwardError
	cause := errors.Is(err, cluster.ErrUnknownOutcome)
	if errors.As(err, &fe) {
		cause = fe.reached
	}
	return cause && retryOf(err) == api.RetryAmbiguous
}

// relayedHoldable is the answer of a node this request was forwarded to, which said (with
// holdableHeader) that it changed nothing for want of a leader. status and body are what
// it answered, written as they are if the hold ends.
type relayedHoldable struct {
	status int
	header http.Header
	body   []byte
}

func (e relayedHoldable) Error() string {
	return "transport: the node forwarded to has no leader either: " + string(e.body)
}

// deniesEffect reports an answer that says a call changed nothing because what it acts on
// is gone or no longer its own: what a repeat meets when the first attempt did take effect.
func deniesEffect(err error) bool {
	if mutant.Is("hold-passes-repeat-denial") {
		return false
	}
	var rd relayedDenial
	return errors.Is(err, cluster.ErrNotHolder) || errors.Is(err, cluster.ErrLeaseNotFound) || errors.As(err, &rd)
}

// relayedDenial is a not_holder or lease_not_found answer of the leader to a forwarded
// repeat (see deniesEffect), kept instead of relayed.
type relayedDenial struct{ code string }

func (e relayedDenial) Error() string {
	return "transport: the leader answered " + e.code + " to a repeat"
}
