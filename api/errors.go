package api

import (
	"fmt"
	"net/http"
)

// Error codes carried in ErrorDetail.Code. Each is an entry of the catalogue (outcomes.go),
// which gives its HTTP status, retry class and message.
const (
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidName      = "invalid_name"
	CodeInvalidTTL       = "invalid_ttl"
	CodeInvalidArgument  = "invalid_argument"
	CodeLeaseNotFound    = "lease_not_found"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeLockHeld         = "lock_held"
	CodeWaitTimeout      = "wait_timeout"
	CodeNotHolder        = "not_holder"
	CodeBodyTooLarge     = "body_too_large"
	CodeNoLeader         = "no_leader"
	CodeUnknownOutcome   = "unknown_outcome"
	// CodeQuotaExceeded: a configured limit of the replicated state (leases, locks per
	// lease, waiters per lock) would be exceeded; nothing was applied. 429 with Retry-After.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeTooManyRequests: this node already serves its limit of held-open requests
	// (waiting acquires, blocking queries); nothing was proposed. 429 with Retry-After.
	CodeTooManyRequests = "too_many_requests"
	// CodeUnauthenticated: ACLs are on and the request carries no token, or one the cluster
	// does not know (401).
	CodeUnauthenticated = "unauthenticated"
	// CodePermissionDenied: the request's token does not grant the right it needs (403).
	CodePermissionDenied = "permission_denied"
	// CodeConflict: the request contradicts existing state and was refused (409): ACLs
	// bootstrapped already, a member ID re-pointed without "replace".
	CodeConflict = "conflict"
	CodeInternal = "internal"
	// CodeUnsupportedMediaType: a POST, PUT, DELETE or PATCH with a body that is not
	// declared JSON (Content-Type: application/json); nothing was applied (415). Browsers
	// send cross-site forms as text/plain or form data, so these are refused.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeMisdirectedRequest: the request's Host is not a name the node answers for (an
	// IP address, localhost, its advertised name or certificate names, --allowed-hosts);
	// nothing was done (421). This is what keeps DNS-rebinding pages out.
	CodeMisdirectedRequest = "misdirected_request"
)

// Error codes of the coordination primitives (shared locks, semaphores, elections); each
// is a 409: the request contradicts the primitive's state and nothing was applied.
const (
	// CodeModeConflict: the lease holds or waits for the lock in the other mode; there is
	// no upgrade or downgrade, release first.
	CodeModeConflict = "mode_conflict"
	// CodeSemaphoreFull: every permit is held and the request did not wait.
	CodeSemaphoreFull = "semaphore_full"
	// CodeLimitConflict: the semaphore is in use with another limit.
	CodeLimitConflict = "limit_conflict"
	// CodeElectionHeld: another lease leads and the request did not wait.
	CodeElectionHeld = "election_held"
)

// CodeIndexCompacted: an event stream was asked to start at an index older than the
// events the node still holds (410); start live, or from the index the message names.
const CodeIndexCompacted = "index_compacted"

// Status returns the HTTP status that goes with an error code, as the catalogue
// (Outcomes) says; 500 for a code it does not know.
func Status(code string) int {
	if o, ok := byCode[code]; ok {
		return o.Status
	}
	return http.StatusInternalServerError
}

// Error is an API error as a Go error value: the server returns it from handlers and the
// client returns it to callers, so both sides match on the same Code.
type Error struct {
	// Code is one of the Code* constants.
	Code string
	// Message is the human sentence.
	Message string
}

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is lets errors.Is match two *Error values by code alone, so callers can compare against
// a sentinel such as &api.Error{Code: api.CodeLockHeld}.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Body returns the JSON payload for the error.
func (e *Error) Body() ErrorBody {
	return ErrorBody{Error: ErrorDetail{Code: e.Code, Message: e.Message}}
}
