package client

import (
	"errors"
	"fmt"

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
	// ErrServer: the server failed (500) or answered something that is not the API.
	ErrServer = errors.New("client: server error")

	// ErrLeaseLost: the client can no longer assume its lease is alive: a keepalive was
	// answered with lease_not_found, the lease was revoked, or its SafeUntil passed without
	// an answered keepalive. Locks held with it must be treated as lost.
	ErrLeaseLost = errors.New("client: lease lost")
	// ErrLeaseClosed: the lease was closed (revoked) by its owner with Lease.Close.
	ErrLeaseClosed = errors.New("client: lease closed")
	// ErrNotLocked: Unlock was called on a Mutex that does not hold its lock.
	ErrNotLocked = errors.New("client: mutex not locked")
)

// codeSentinel maps an API error code to the client's error value.
func codeSentinel(code string) error {
	switch code {
	case api.CodeLockHeld:
		return ErrLockHeld
	case api.CodeWaitTimeout:
		return ErrWaitTimeout
	case api.CodeNotHolder:
		return ErrNotHolder
	case api.CodeLeaseNotFound:
		return ErrLeaseNotFound
	case api.CodeNoLeader:
		return ErrNoLeader
	case api.CodeUnknownOutcome:
		return ErrUnknownOutcome
	case api.CodeInvalidJSON, api.CodeInvalidName, api.CodeInvalidTTL, api.CodeInvalidArgument,
		api.CodeNotFound, api.CodeMethodNotAllowed, api.CodeBodyTooLarge:
		return ErrInvalid
	}
	return ErrServer
}

// wrapped is an error that matches a client sentinel and, when set, a cause (an
// *api.Error, a context error, a network error).
type wrapped struct {
	sentinel error
	msg      string
	cause    error
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

// fromAPI turns an API answer into a client error for the operation op.
func fromAPI(op string, ae *api.Error) error {
	return wrap(codeSentinel(ae.Code), ae, "%s: %s", op, ae.Message)
}
