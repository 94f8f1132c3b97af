package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Errors returned by the client. Errors that come from an API answer wrap both one of
// these values and the server's *api.Error, so either can be matched with errors.Is:
//
//	errors.Is(err, client.ErrLockHeld)                       // true
//	errors.Is(err, &api.Error{Code: api.CodeLockHeld})       // true as well
//
// errors.As(err, new(*api.Error)) recovers the server's code and message.
var (
	// ErrLockHeld: the lock is held by another lease and the request did not wait
	// (409 lock_held).
	ErrLockHeld = errors.New("client: lock held")
	// ErrWaitTimeout: the wait for the lock ended before it was granted; the lease has left
	// the lock's queue (409 wait_timeout).
	ErrWaitTimeout = errors.New("client: wait timed out")
	// ErrNotHolder: the lease and token given do not hold the lock: it was released,
	// expired, or granted again since (409 not_holder).
	ErrNotHolder = errors.New("client: not the holder")
	// ErrLeaseNotFound: the lease does not exist: it expired, was revoked, or never existed
	// (404 lease_not_found).
	ErrLeaseNotFound = errors.New("client: lease not found")
	// ErrNoLeader: the cluster has no leader (an election is running) and the caller's
	// context ended before one was found (503 no_leader).
	ErrNoLeader = errors.New("client: no leader")
	// ErrUnknownOutcome: the cluster could not tell whether the request was applied
	// (leadership changed while it was in flight; 503 unknown_outcome). The client retries:
	// every operation is safe to repeat. Callers see it only once their context ends.
	ErrUnknownOutcome = errors.New("client: outcome unknown")
	// ErrUnavailable: an endpoint could not be reached or did not answer in time. The
	// client tries the other endpoints; callers see it only once their context ends.
	ErrUnavailable = errors.New("client: endpoint unavailable")
	// ErrInvalid: the server refused the request as malformed (400, 404 not_found,
	// 405, 413). Retrying the same request cannot succeed.
	ErrInvalid = errors.New("client: invalid request")
	// ErrServer: the server failed (500) or answered something that is not the API, or
	// answered an error code this client does not know (a newer server's): such an error
	// is not retried, and errors.As(err, new(*api.Error)) still recovers its code and
	// message.
	ErrServer = errors.New("client: server error")
	// ErrQuotaExceeded: a configured limit of the cluster's replicated state (leases,
	// locks per lease, waiters per lock) would be exceeded, and nothing was applied
	// (429 quota_exceeded). The client does not retry it: the same request can only
	// succeed once something is released, revoked or expires, which only the caller (or
	// another client) can bring about. RetryAfter returns the server's suggested pause.
	ErrQuotaExceeded = errors.New("client: quota exceeded")
	// ErrTooManyRequests: the node already serves its limit of held-open requests
	// (waiting acquires, blocking queries) and proposed nothing (429 too_many_requests).
	// The client retries it after the answer's Retry-After (or its own backoff, whichever
	// is longer); callers see it only when their context ends first, or when its deadline
	// falls before the Retry-After delay would pass (the client then gives up at once).
	ErrTooManyRequests = errors.New("client: too many requests")
	// ErrUnauthenticated: ACLs are on and the request carried no token, or one the cluster
	// does not know (401 unauthenticated). Not retried: another node knows the same tokens.
	ErrUnauthenticated = errors.New("client: unauthenticated")
	// ErrPermissionDenied: the request's token does not grant the right it needs
	// (403 permission_denied). Not retried.
	ErrPermissionDenied = errors.New("client: permission denied")
	// ErrConflict: the request contradicts the cluster's state and was refused (409
	// conflict): ACLs are bootstrapped already, a member ID would be re-pointed at a new
	// address without AddNodeRequest.Replace, or a leadership transfer did not happen (the
	// target could not be reached or cannot write its data directory). Not retried.
	ErrConflict = errors.New("client: conflict")
	// ErrTLS: the TLS handshake failed in a way waiting cannot fix: the server's
	// certificate does not verify against the CA (or names another host), the server
	// refused the client's certificate, or the endpoint does not speak TLS. The client
	// tries the other endpoints, and gives up once a whole round failed this way.
	ErrTLS = errors.New("client: TLS handshake failed")

	// ErrLeaseLost: the client can no longer assume its lease is alive: a keepalive was
	// answered with lease_not_found, the lease was revoked, or its SafeUntil passed without
	// an answered keepalive. Locks held with it must be treated as lost.
	ErrLeaseLost = errors.New("client: lease lost")
	// ErrLeaseClosed: the lease was closed (revoked) by its owner with Lease.Close.
	ErrLeaseClosed = errors.New("client: lease closed")
	// ErrNotLocked: Unlock was called on a Mutex (or RWMutex) that does not hold its lock,
	// Release on a Semaphore that holds no permit, or Resign (Proclaim) on an Election
	// that does not lead.
	ErrNotLocked = errors.New("client: mutex not locked")

	// ErrModeConflict: the lease holds (or waits for) the lock in the other mode, shared
	// or exclusive (409 mode_conflict). There is no upgrade or downgrade: release first.
	ErrModeConflict = errors.New("client: lock held in the other mode")
	// ErrSemaphoreFull: every permit of the semaphore is taken and the request did not
	// wait (409 semaphore_full).
	ErrSemaphoreFull = errors.New("client: semaphore full")
	// ErrLimitConflict: the semaphore is in use with another limit (409 limit_conflict);
	// the error's text says the current limit. A limit is set by the first acquirer and
	// holds while any permit is taken or awaited.
	ErrLimitConflict = errors.New("client: semaphore limit conflict")
	// ErrElectionHeld: another lease leads the election and the campaign did not wait
	// (409 election_held).
	ErrElectionHeld = errors.New("client: election held by another leader")
)

// sentinels maps each code of the API's catalogue of outcomes (api/outcomes.go) to the
// client's error value; TestSentinels_EveryCatalogueCode fails when a code is missing here
// or is not the catalogue's. The retries read the catalogue itself (retryClass).
var sentinels = map[string]error{
	api.CodeLockHeld:         ErrLockHeld,
	api.CodeDeadlock:         ErrDeadlock,
	api.CodeVersionInactive:  ErrVersionInactive,
	api.CodeWaitTimeout:      ErrWaitTimeout,
	api.CodeNotHolder:        ErrNotHolder,
	api.CodeLeaseNotFound:    ErrLeaseNotFound,
	api.CodeNoLeader:         ErrNoLeader,
	api.CodeUnknownOutcome:   ErrUnknownOutcome,
	api.CodeQuotaExceeded:    ErrQuotaExceeded,
	api.CodeTooManyRequests:  ErrTooManyRequests,
	api.CodeUnauthenticated:  ErrUnauthenticated,
	api.CodePermissionDenied: ErrPermissionDenied,
	api.CodeConflict:         ErrConflict,
	api.CodeModeConflict:     ErrModeConflict,
	api.CodeSemaphoreFull:    ErrSemaphoreFull,
	api.CodeLimitConflict:    ErrLimitConflict,
	api.CodeElectionHeld:     ErrElectionHeld,
	api.CodeIndexCompacted:   ErrIndexCompacted,
	api.CodeInternal:         ErrServer,

	api.CodeInvalidJSON:          ErrInvalid,
	api.CodeInvalidName:          ErrInvalid,
	api.CodeInvalidTTL:           ErrInvalid,
	api.CodeInvalidArgument:      ErrInvalid,
	api.CodeNotFound:             ErrInvalid,
	api.CodeMethodNotAllowed:     ErrInvalid,
	api.CodeBodyTooLarge:         ErrInvalid,
	api.CodeUnsupportedMediaType: ErrInvalid,
	api.CodeMisdirectedRequest:   ErrInvalid,
}

// codeSentinel maps an API error code to the client's error value. A code the client does
// not know (a newer server's) is ErrServer, not retried; the error still holds the
// server's *api.Error with that code and message.
func codeSentinel(code string) error {
	if s, ok := sentinels[code]; ok {
		return s
	}
	return ErrServer
}

// wrapped is an error that matches a client sentinel and, when set, a cause (an
// *api.Error, a context error, a network error).
type wrapped struct {
	sentinel error
	msg      string
	cause    error
	// retryAfter is the answer's Retry-After delay; zero when it had none.
	retryAfter time.Duration
}

func (e *wrapped) Error() string {
	if e.msg == "" {
		return e.sentinel.Error()
	}
	return e.sentinel.Error() + ": " + e.msg
}

func (e *wrapped) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// wrap builds an error matching sentinel and cause, with a formatted message.
func wrap(sentinel, cause error, format string, args ...any) error {
	return &wrapped{sentinel: sentinel, msg: fmt.Sprintf(format, args...), cause: cause}
}

// fromAPI turns an API answer into a client error for the operation op; retryAfter is
// the answer's Retry-After delay (zero when none).
func fromAPI(op string, ae *api.Error, retryAfter time.Duration) error {
	return &wrapped{sentinel: codeSentinel(ae.Code), msg: fmt.Sprintf("%s: %s", op, ae.Message), cause: ae, retryAfter: retryAfter}
}

// RetryAfter returns the delay the server asked for in the Retry-After header of the
// answer that err comes from (429 quota_exceeded and too_many_requests, 503 no_leader),
// and whether it gave one.
func RetryAfter(err error) (time.Duration, bool) {
	var w *wrapped
	if errors.As(err, &w) && w.retryAfter > 0 {
		return w.retryAfter, true
	}
	return 0, false
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date. It returns
// zero for an absent, malformed or past value.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, maxRetryAfterSeconds)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// maxRetryAfterSeconds keeps an absurd Retry-After from overflowing a Duration.
const maxRetryAfterSeconds = 24 * 3600
