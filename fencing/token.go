package fencing

import (
	"fmt"
	"math"
	"strconv"
)

// Token is a fencing token: raftlock's grant of a lock carries one, and tokens of successive
// grants of the same lock strictly increase. raftlock's tokens are Raft log indexes, so they
// start at 1.
type Token uint64

// MaxToken is the largest token a guard accepts: math.MaxInt64, the largest value a SQL
// BIGINT column holds. raftlock's tokens are log indexes and never come near it.
const MaxToken Token = math.MaxInt64

// maxTokenDigits is the length of the longest uint64 in decimal (18446744073709551615).
const maxTokenDigits = 20

// String returns the token in decimal, the form ParseToken reads and the Fencing-Token header
// carries.
func (t Token) String() string { return strconv.FormatUint(uint64(t), 10) }

// Validate reports whether a guard can accept the token: ErrInvalidToken for 0 and
// ErrTokenTooLarge for a token above MaxToken.
func (t Token) Validate() error {
	switch {
	case t == 0:
		return fmt.Errorf("%w: token 0 is never issued", ErrInvalidToken)
	case t > MaxToken:
		return fmt.Errorf("%w: %d", ErrTokenTooLarge, uint64(t))
	}
	return nil
}

// ParseToken reads a token written in canonical decimal: ASCII digits only, no sign, no
// spaces, no leading zeros (except "0" itself), at most 18446744073709551615. It checks the
// syntax only; Token.Validate checks whether a guard would accept the value. Errors wrap
// ErrInvalidToken.
func ParseToken(s string) (Token, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	if len(s) > maxTokenDigits {
		return 0, fmt.Errorf("%w: %s is longer than %d digits", ErrInvalidToken, quoteShort(s), maxTokenDigits)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %s is not a decimal number", ErrInvalidToken, quoteShort(s))
		}
	}
	if s[0] == '0' && len(s) > 1 {
		return 0, fmt.Errorf("%w: %s has a leading zero", ErrInvalidToken, quoteShort(s))
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is out of range", ErrInvalidToken, quoteShort(s))
	}
	return Token(v), nil
}

// quoteShort quotes untrusted input for an error message, cut to a readable length.
func quoteShort(s string) string {
	const max = 32
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
