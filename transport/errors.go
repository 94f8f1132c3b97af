package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// ErrMissingRole: NewServer was given a Services with a nil role; the error names it.
var ErrMissingRole = errors.New("transport: config: a role is missing")

// The server's own reasons to refuse a request; errorFor says how each is answered.
var (
	// errNotReady: a write sent to this node now would be neither served nor forwarded.
	errNotReady = errors.New("transport: not ready")
)

// heldLimitError: the node already holds Config.MaxHeldRequests waiting requests.
type heldLimitError struct{ max int }

func (e heldLimitError) Error() string {
	return fmt.Sprintf("transport: %d requests held already", e.max)
}

// identityLimitError: the caller (see Server.callerKey) already holds max of what
// open on this node.
type identityLimitError struct {
	what string
	max  int
}

func (e identityLimitError) Error() string {
	return fmt.Sprintf("transport: the caller holds %d %s already", e.max, e.what)
}

// hopLimitError: the request was forwarded hops times without reaching the leader.
type hopLimitError struct{ hops uint64 }

func (e hopLimitError) Error() string {
	return fmt.Sprintf("transport: forwarded %d times without reaching the leader", e.hops)
}

// forwardError: a forward to the leader got no answer. reached says whether the request
// may have reached the leader (so may have been applied).
type forwardError struct {
	leader, addr string
	why          error
	reached      bool
}

func (e forwardError) Error() string {
	return fmt.Sprintf("transport: forwarding to the leader %s at %s: %v", e.leader, e.addr, e.why)
}

// failure is how the API answers an error: status, the body's code and message, and the
// Retry-After header ("" for none).
type failure struct {
	status     int
	err        *api.Error
	retryAfter string
}

// errorFor is the one table of the API's errors: it maps any error a request can end in
// (a decoding fault, the server's own refusals above, the cluster's errors) to its code
// and message; the code's entry of the API's catalogue of outcomes (api/outcomes.go) gives
// the status, and Retry-After goes with the statuses 429 and 503. Decoding and validation
// build their *api.Error where they find the fault (decode.go, api.Validate*); those pass
// through unchanged. The errors that carry values of their own (a limit, an index, a
// leader) are answered here; those known by identity alone, by the table answers, whose
// lines without a message of their own answer the catalogue's.
func errorFor(err error) failure {
	ae, _ := apiError(err)
	f := failure{status: api.Status(ae.Code), err: ae}
	if f.status == http.StatusServiceUnavailable || f.status == http.StatusTooManyRequests {
		f.retryAfter = "1"
	}
	return f
}

// apiError is the API's error for err, as errorFor's table says; known is false when no
// line of the table answers err, which is then an internal error.
func apiError(err error) (ae *api.Error, known bool) {
	var (
		lc  *cluster.LimitConflictError
		ce  *cluster.IndexCompactedError
		ie  *cluster.InactiveError
		dl  *cluster.DeadlockError
		ne  *cluster.NamesError
		hl  heldLimitError
		il  identityLimitError
		hop hopLimitError
		fe  forwardError
		rh  relayedHoldable
		rd  relayedDenial
	)
	switch {
	case errors.As(err, &ae):
		// Decoding and validation faults: already the API's.
	case errors.As(err, &hl):
		ae = api.Errorf(api.CodeTooManyRequests, "this node already holds %d waiting acquires and blocking queries open; retry after the Retry-After delay, or on another node", hl.max)
	case errors.As(err, &il):
		ae = api.Errorf(api.CodeTooManyRequests, "this caller (its token, node or address) already holds %d %s open on this node; close some, or retry after the Retry-After delay", il.max, il.what)
	case errors.As(err, &hop):
		ae = api.Errorf(api.CodeNoLeader, "request forwarded %d times without reaching the leader; an election is settling, retry", hop.hops)
	case errors.As(err, &fe) && !fe.reached:
		ae = api.Errorf(api.CodeNoLeader, "the leader %s at %s could not be reached (%v); nothing was applied, retry", fe.leader, fe.addr, fe.why)
	case errors.As(err, &fe):
		ae = api.Errorf(api.CodeUnknownOutcome, "forwarded to the leader %s, no answer: %v; the request may or may not have been applied: repeat it only with the same request_id (or on the same lease)", fe.leader, fe.why)
	case errors.As(err, &rh):
		// Written as the leader answered it (Server.writeFailure); answered here for the
		// hold, which reads its retry class.
		ae = api.NewError(api.CodeNoLeader)
	case errors.As(err, &rd):
		ae = api.NewError(rd.code)
	case errors.As(err, &lc):
		ae = api.Errorf(api.CodeLimitConflict, "the semaphore is in use with limit %d; ask with that limit, or wait until it is not in use to set another", lc.Limit)
	case errors.As(err, &dl):
		ae = deadlockError(dl.Described)
	case errors.As(err, &ne) && errors.Is(err, cluster.ErrLockHeld):
		ae = api.Errorf(api.CodeLockHeld, "held by other leases: %s; nothing was taken. Retry later, or ask to wait for all of them at once (the request's wait: wait_ms in the HTTP API, the wait option of the clients)", strings.Join(ne.Names, ", "))
	case errors.As(err, &ne) && errors.Is(err, cluster.ErrNotHolder):
		ae = api.Errorf(api.CodeNotHolder, "this lease does not hold %s with those tokens (released, expired, ended by the maximum hold, or granted again); nothing was released", strings.Join(ne.Names, ", "))
	case errors.As(err, &ie) && errors.Is(err, cluster.ErrV3Inactive):
		ae = api.Errorf(api.CodeVersionInactive, "locksets, max_hold_ms and lock_delay_ms need protocol version %d, which the cluster activates once every node runs this release; %s; nothing was applied", ie.Need, lagging(ie.Lagging))
	case errors.As(err, &ie):
		ae = api.Errorf(api.CodeNoLeader, "shared locks, semaphores and elections need protocol version %d, which the cluster activates once every node runs this release (a rolling upgrade is in progress); %s; nothing was applied, retry after upgrading every node", ie.Need, lagging(ie.Lagging))
	case errors.As(err, &ce):
		ae = api.Errorf(api.CodeIndexCompacted, "this node no longer holds the events before index %d; start from from_index=%d or later, or without from_index to follow new events", ce.Oldest, ce.Oldest)
	case errors.Is(err, cluster.ErrQuotaExceeded):
		ae = api.Errorf(api.CodeQuotaExceeded, "%s", quotaMessage(err))
	default:
		return answerFor(err)
	}
	return ae, true
}

// retryOf is the retry class (api/outcomes.go) of the answer to err.
func retryOf(err error) api.Retry {
	ae, _ := apiError(err)
	o, _ := api.Lookup(ae.Code)
	return o.Retry
}

// answer is one line of answers: an error known by identity and how the API answers it. A
// message with %v quotes the error itself there (the cluster's message names what was
// wrong); an empty message is the catalogue's for the code.
type answer struct {
	err     error
	code    string
	message string
}

// answers is the part of errorFor's table for the errors known by identity, tried in order:
// the first that the error wraps answers it.
var answers = []answer{
	// The server's own.
	{errNotReady, api.CodeNoLeader, "not ready: no ready leader known yet, the leader's HTTP address is not registered, or this node is still catching up"},

	// Shared locks, semaphores and elections.
	{cluster.ErrModeConflict, api.CodeModeConflict, ""},
	{cluster.ErrSemaphoreFull, api.CodeSemaphoreFull, ""},
	{cluster.ErrElectionHeld, api.CodeElectionHeld, ""},
	{cluster.ErrPrimsInactive, api.CodeNoLeader, "shared locks, semaphores and elections need protocol version 2, which the cluster activates once every node runs this release (a rolling upgrade is in progress); nothing was applied, retry after upgrading every node"},

	// The event stream.
	{cluster.ErrTooManySubscribers, api.CodeTooManyRequests, "%v; retry later or on another node"},
	{cluster.ErrSubscriberLagging, api.CodeTooManyRequests, "the stream was read too slowly and was dropped; resume with Last-Event-ID"},
	{cluster.ErrStreamReset, api.CodeIndexCompacted, "this node restored a snapshot; the events before it are unknown here"},

	// Locks, leases and the cluster.
	{cluster.ErrLockHeld, api.CodeLockHeld, ""},
	{cluster.ErrWaitTimeout, api.CodeWaitTimeout, ""},
	{cluster.ErrNotHolder, api.CodeNotHolder, ""},
	{cluster.ErrTokenRevoked, api.CodeUnauthenticated, "the ACL token was revoked while the request was in flight; the leases it created were revoked with it"},
	{cluster.ErrLeaseNotFound, api.CodeLeaseNotFound, ""},
	// Before no_leader: the cluster wraps the cause (no leader, shutdown) in it once a
	// command may have been proposed.
	{cluster.ErrUnknownOutcome, api.CodeUnknownOutcome, ""},
	{cluster.ErrNoLeader, api.CodeNoLeader, ""},
	{cluster.ErrNotLeader, api.CodeNoLeader, ""},
	{cluster.ErrShutdown, api.CodeNoLeader, "this node is shutting down; nothing was applied, retry on another node"},
	{cluster.ErrACLConflict, api.CodeConflict, "%v"},
	{cluster.ErrACLNotFound, api.CodeNotFound, "%v"},
	{cluster.ErrACLInvalid, api.CodeInvalidArgument, "%v"},
	{cluster.ErrACLInactive, api.CodeNoLeader, "%v; upgrade every node, then retry"},
	{cluster.ErrQuotasInactive, api.CodeVersionInactive, "%v (the cluster activates it once every node runs this release); nothing was applied"},
	{cluster.ErrStorage, api.CodeNoLeader, "%v; nothing was applied, retry on another node"},
	{cluster.ErrHalted, api.CodeInternal, "this node's state machine halted on a command it does not know; it serves nothing until it is upgraded (see its log); use another node"},
	// A command the state machine refused as malformed: the encoder never writes one.
	{cluster.ErrInvalidCommand, api.CodeInternal, "internal error: %v"},
	{cluster.ErrInvalidMember, api.CodeInvalidArgument, "%v"},
	{cluster.ErrMemberConflict, api.CodeConflict, "%v"},
	{cluster.ErrNotMember, api.CodeNotFound, "no such member of the cluster"},
	{cluster.ErrTransferFailed, api.CodeConflict, "%v; leadership stays where it was"},
	// Only reached when the cluster did not say that nothing was proposed.
	{context.DeadlineExceeded, api.CodeUnknownOutcome, endedEarly},
	{context.Canceled, api.CodeUnknownOutcome, endedEarly},
}

// endedEarly is the message that two errors of answers share.
const endedEarly = "the request ended before the cluster answered; it may or may not have been applied: repeat it only with the same request_id (or on the same lease)"

// answerFor answers err by the first line of answers it wraps (known), and as an internal
// error when it wraps none.
func answerFor(err error) (ae *api.Error, known bool) {
	for _, a := range answers {
		switch {
		case !errors.Is(err, a.err):
			continue
		case a.message == "":
			return api.NewError(a.code), true
		case strings.Contains(a.message, "%v"):
			return api.Errorf(a.code, a.message, err), true
		}
		return &api.Error{Code: a.code, Message: a.message}, true
	}
	return api.Errorf(api.CodeInternal, "internal error: %v", err), false
}

// quotaMessage names the limit an ErrQuotaExceeded error reports, how far its use is, and
// what to do: free what is no longer needed, or have the limit raised where it is set (an
// identity's quota on its token or policy, the others on the servers).
func quotaMessage(err error) string {
	var q *cluster.QuotaError
	if !errors.As(err, &q) {
		return api.NewError(api.CodeQuotaExceeded).Message
	}
	what := "raise the limit on the servers (raftlock serve --" + strings.ReplaceAll(q.Limit, "_", "-") + ")"
	if q.Identity != "" {
		what = "ask an operator to raise this identity's quota (raftlock acl token update ACCESSOR --" +
			strings.ReplaceAll(strings.TrimSuffix(q.Limit, "_per_identity"), "_", "-") + " N, or the quotas of one of its policies)"
	}
	return "quota exceeded: " + q.Message() + "; nothing was applied. Release or revoke what you no longer need, or " + what
}

// writeError writes err as errorFor answers it.
func writeError(w http.ResponseWriter, err error) {
	f := errorFor(err)
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	writeJSON(w, f.status, f.err.Body())
}

// jsonContentType is the Content-Type of every JSON answer, one slice for all of them: a
// Header.Set would allocate it per answer. Nothing writes into a header's value slice in
// place (Set replaces it, Add appends past its capacity), so sharing it is safe.
var jsonContentType = []string{"application/json"}

// writeJSON writes v as a JSON answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing useful to do
}

// lagging names the members below a protocol version in a sentence.
func lagging(ids []string) string {
	switch len(ids) {
	case 0:
		return "every member speaks it now, and the leader is raising it"
	case 1:
		return "node " + ids[0] + " has not registered it yet"
	}
	return "nodes " + strings.Join(ids, ", ") + " have not registered it yet"
}
