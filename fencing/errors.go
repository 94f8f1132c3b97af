package fencing

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Match them with errors.Is: the returned errors wrap them
// with details.
var (
	// ErrStaleToken means a write was refused because its token is lower than a token the
	// resource has already accepted. The error is a *StaleTokenError, which carries both
	// tokens. Nothing the refused write did was applied.
	ErrStaleToken = errors.New("fencing: stale token")

	// ErrInvalidToken means a token is malformed (not a canonical decimal number) or zero.
	ErrInvalidToken = errors.New("fencing: invalid token")

	// ErrTokenTooLarge means a token is above MaxToken (math.MaxInt64), the largest value a
	// SQL BIGINT fence can store. Every guard refuses such tokens, so that swapping guards
	// never changes which tokens are accepted.
	ErrTokenTooLarge = errors.New("fencing: token above the largest accepted token (9223372036854775807)")

	// ErrMissingToken means a request carried no Fencing-Token header.
	ErrMissingToken = errors.New("fencing: missing Fencing-Token header")

	// ErrEmptyResource means a guard was asked to fence the empty resource name.
	ErrEmptyResource = errors.New("fencing: empty resource name")

	// ErrUnknownDialect means a Dialect value is neither SQLite nor Postgres.
	ErrUnknownDialect = errors.New("fencing: unknown SQL dialect")
)

// StaleTokenError is the error returned when a guard refuses a write. It matches
// ErrStaleToken with errors.Is.
type StaleTokenError struct {
	// Resource is the fenced resource the write was for.
	Resource string
	// Offered is the token the refused write carried.
	Offered Token
	// Current is the highest token the resource had accepted when the write was refused.
	// It is greater than Offered.
	Current Token
}

// Error implements error.
func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fencing: stale token %d for resource %q: it has already accepted token %d",
		e.Offered, e.Resource, e.Current)
}

// Is makes errors.Is(err, ErrStaleToken) true for a *StaleTokenError.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }
