package api

import (
	"net/http"
	"strconv"
)

//go:generate go test -run TestOutcomes_JSONIsTheCatalogue -update .

// Retry is an outcome's retry class: what may be done with a request that ended in it.
// Each client decides its retries by it, and the server's hold (transport/hold.go) holds
// only the answers whose class allows a repeat.
type Retry string

// The retry classes.
const (
	// RetryNever: repeating the same request cannot change the answer, so the clients
	// report it at once. A changed request, or the same one once the state has changed
	// (a lock released, a quota raised), may succeed.
	RetryNever Retry = "never"
	// RetryOtherNode: nothing was applied, and the node that answered could not serve the
	// request (no leader for its whole hold, shutting down, a failing disk): send it again
	// at once to another node, then, after a round of them, after a backoff.
	RetryOtherNode Retry = "other_node"
	// RetryAfterDelay: nothing was applied; send it again after the answer's Retry-After
	// delay (or the client's backoff, whichever is longer).
	RetryAfterDelay Retry = "after_delay"
	// RetryAmbiguous: the request may or may not have been applied. Repeat it only as the
	// same request (the same request_id, or on the same lease), whose repetition acts at
	// most once; never as a new one.
	RetryAmbiguous Retry = "ambiguous"
)

// Outcome is one error outcome of the API: its code, the HTTP status it is answered with,
// its retry class, and its message.
type Outcome struct {
	// Code is the machine-matchable code of ErrorDetail.Code (a Code* constant).
	Code string
	// Status is the HTTP status of every answer with this code.
	Status int
	// Retry is the retry class.
	Retry Retry
	// Message is the answer's message when the server has nothing more specific to say;
	// most answers name the field, name, limit or cause concerned instead.
	Message string
}

// outcomes is the catalogue: every error outcome of the API, the one place that says what
// each code is. The server answers with these codes only (transport's error table, whose
// tests check every code it can write, every cluster error and every state machine status
// against this list), api/outcomes.json is generated from it for the other languages (the
// Python, TypeScript and Java clients' tests check their maps against that file), and
// transport's OpenAPI test checks the document's code enums against it. Adding a code is
// one line here, its Code constant, `go generate ./api`, and the clients' maps.
var outcomes = []Outcome{
	{CodeInvalidJSON, http.StatusBadRequest, RetryNever, "the request body is not one JSON object of the route's fields"},
	{CodeInvalidName, http.StatusBadRequest, RetryNever, "invalid name: " + NameRule},
	{CodeInvalidTTL, http.StatusBadRequest, RetryNever, "ttl_ms must be between " + strconv.Itoa(MinTTLMs) + " and " + strconv.Itoa(MaxTTLMs)},
	{CodeInvalidArgument, http.StatusBadRequest, RetryNever, "a field, header, query parameter or path of the request is not valid"},
	{CodeUnauthenticated, http.StatusUnauthorized, RetryNever, "ACLs are on: the request needs a token the cluster knows (Authorization: Bearer <secret_id>)"},
	{CodePermissionDenied, http.StatusForbidden, RetryNever, "the request's token does not grant the right it needs"},
	{CodeLeaseNotFound, http.StatusNotFound, RetryNever, "the lease does not exist: it expired, was revoked, or never existed; create a new one"},
	{CodeNotFound, http.StatusNotFound, RetryNever, "no such route, or nothing of that name"},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, RetryNever, "the route does not allow this method; the Allow header lists the ones it does"},
	{CodeLockHeld, http.StatusConflict, RetryNever, "the lock is held by another lease; retry later, or ask to wait in its queue (the request's wait: wait_ms in the HTTP API, the wait option of the clients)"},
	{CodeWaitTimeout, http.StatusConflict, RetryNever, "the wait ended before the lock was granted; the lease has left the queue"},
	{CodeNotHolder, http.StatusConflict, RetryNever, "this lease and token do not hold the lock (it was released, expired or granted again)"},
	{CodeConflict, http.StatusConflict, RetryNever, "the request contradicts the cluster's state (ACLs bootstrapped already, a member re-pointed without replace)"},
	{CodeModeConflict, http.StatusConflict, RetryNever, "this lease holds or waits for the lock in the other mode; there is no upgrade or downgrade: release it (or leave the queue) first"},
	{CodeSemaphoreFull, http.StatusConflict, RetryNever, "every permit of the semaphore is held; retry later, or ask to wait in its queue (the request's wait: wait_ms in the HTTP API, the wait option of the clients)"},
	{CodeLimitConflict, http.StatusConflict, RetryNever, "the semaphore is in use with another limit; ask with that limit, or wait until it is not in use to set another"},
	{CodeElectionHeld, http.StatusConflict, RetryNever, "another lease leads the election; retry later, or ask to wait as a candidate (the request's wait: wait_ms in the HTTP API, the wait option of the clients)"},
	{CodeDeadlock, http.StatusConflict, RetryNever, "waiting would close a cycle of waiting leases; nothing was queued"},
	{CodeVersionInactive, http.StatusConflict, RetryNever, "the request needs a protocol version the cluster activates once every node runs this release; nothing was applied"},
	{CodeIndexCompacted, http.StatusGone, RetryNever, "this node no longer holds the events asked for; start later, or without from_index to follow new events"},
	{CodeBodyTooLarge, http.StatusRequestEntityTooLarge, RetryNever, "request body exceeds " + strconv.Itoa(MaxBodyBytes) + " bytes"},
	{CodeUnsupportedMediaType, http.StatusUnsupportedMediaType, RetryNever, "a request with a body must say Content-Type: application/json"},
	{CodeMisdirectedRequest, http.StatusMisdirectedRequest, RetryNever, "this node does not answer for the request's host; add the name to its --allowed-hosts"},
	{CodeQuotaExceeded, http.StatusTooManyRequests, RetryNever, "a configured limit was reached; nothing was applied. Release or revoke what you no longer need, or raise the limit on the servers"},
	{CodeTooManyRequests, http.StatusTooManyRequests, RetryAfterDelay, "this node holds its limit of open requests; nothing was proposed. Retry after the Retry-After delay, or on another node"},
	{CodeInternal, http.StatusInternalServerError, RetryNever, "internal error"},
	{CodeNoLeader, http.StatusServiceUnavailable, RetryOtherNode, "no leader is available (an election is in progress); nothing was applied, retry after the Retry-After delay"},
	{CodeUnknownOutcome, http.StatusServiceUnavailable, RetryAmbiguous, "leadership changed or the node stopped while the request was in flight; it may or may not have been applied: repeat it only with the same request_id (or on the same lease)"},
}

// byCode indexes outcomes by code.
var byCode = func() map[string]Outcome {
	m := make(map[string]Outcome, len(outcomes))
	for _, o := range outcomes {
		m[o.Code] = o
	}
	return m
}()

// Outcomes returns the catalogue of error outcomes, in a fixed order (by status). The
// slice is a copy.
func Outcomes() []Outcome { return append([]Outcome(nil), outcomes...) }

// Lookup returns the catalogue's outcome of code, and whether the catalogue has it. A code
// it does not know (a newer server's) is best treated as Status 500 and RetryNever.
func Lookup(code string) (Outcome, bool) {
	o, ok := byCode[code]
	return o, ok
}

// NewError returns the error answer of code with the catalogue's message.
func NewError(code string) *Error {
	return &Error{Code: code, Message: byCode[code].Message}
}
