package api

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the API. Durations are milliseconds.
const (
	// DefaultTTLMs is the TTL of a lease whose request leaves ttl_ms at zero.
	DefaultTTLMs = 10_000
	// MinTTLMs is the shortest lease: shorter than this, ordinary scheduling and network
	// delays would expire healthy leases.
	MinTTLMs = 500
	// MaxTTLMs is the longest lease (24 h).
	MaxTTLMs = 24 * 60 * 60 * 1000
	// MaxWaitMs bounds one waiting acquire or blocking query; clients re-issue longer waits.
	MaxWaitMs = 300_000
	// MaxNameLen is the longest lock name in bytes.
	MaxNameLen = 512
	// MaxOwnerLen is the longest owner label in bytes.
	MaxOwnerLen = 256
	// MaxBodyBytes is the largest request body the server reads.
	MaxBodyBytes = 64 << 10
	// MaxKeepAliveBatch is the most lease IDs one keepalive request may list.
	MaxKeepAliveBatch = 10_000
	// MaxKeepAliveBodyBytes is the largest body of POST /v1/leases/keepalive: room for
	// MaxKeepAliveBatch lease IDs (35 bytes each in JSON) and some whitespace.
	MaxKeepAliveBodyBytes = 512 << 10
	// LeaseIDLen is the length of a lease ID in hex characters (128 random bits).
	LeaseIDLen = 32
	// MinRequestIDLen and MaxRequestIDLen bound an acquire's request_id: at least 16
	// characters so that a careless client cannot pick one another client also picks.
	MinRequestIDLen = 16
	MaxRequestIDLen = 128
	// DefaultListLimit and MaxListLimit bound one page of GET /v1/locks.
	DefaultListLimit = 1000
	MaxListLimit     = 10000
	// MaxQueueList bounds ?queue=N: the waiters one status read or one overview item
	// lists in order.
	MaxQueueList = 10000
)

// NameRule states what a valid name is. Every client says the same after "invalid <kind>
// name: ", so that a user meets one rule whichever language refuses the name.
const NameRule = `a name is 1 to 512 bytes of UTF-8, segments separated by "/", with no empty segment, no "." or ".." segment, and no control characters`

// ValidateName checks a lock name (see ValidateNameOf).
func ValidateName(name string) *Error { return ValidateNameOf("lock", name) }

// ValidateNameOf checks the name of a primitive of kind ("lock", "semaphore",
// "election"): 1 to MaxNameLen bytes of UTF-8 without control characters, whose
// "/"-separated segments are neither empty nor "." or "..". The segment rules keep a name
// from aliasing another once a path is cleaned ("a/./b" is "a/b") and from turning into a
// redirect or another route ("/abs", "a//b", "../up"). The message is the rule itself,
// the same in every client.
func ValidateNameOf(kind, name string) *Error {
	if !ValidNameChars(name) || len(name) == 0 {
		return invalidName(kind)
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return invalidName(kind)
		}
	}
	return nil
}

func invalidName(kind string) *Error {
	return Errorf(CodeInvalidName, "invalid %s name: %s", kind, NameRule)
}

// ValidNameChars reports whether s is at most MaxNameLen bytes of UTF-8 without control
// characters: the rule of a name without its segment rules, which a name prefix (of a
// list or an event stream, such as "accounts/") also follows.
func ValidNameChars(s string) bool {
	if len(s) > MaxNameLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidatePrefix checks a name prefix: empty, or 1 to MaxNameLen bytes of UTF-8 without
// control characters. A prefix may end in "/" ("accounts/"), which no name may.
func ValidatePrefix(prefix string) *Error {
	if !ValidNameChars(prefix) {
		return Errorf(CodeInvalidName, "invalid prefix: a prefix is at most %d bytes of UTF-8 with no control characters", MaxNameLen)
	}
	return nil
}

// ValidateOwner checks an owner label: at most MaxOwnerLen bytes of UTF-8 without control
// characters.
func ValidateOwner(owner string) *Error {
	if e := validateText("owner", owner, MaxOwnerLen); e != nil {
		return e
	}
	for _, r := range owner {
		if unicode.IsControl(r) {
			return Errorf(CodeInvalidArgument, "owner contains the control character %U", r)
		}
	}
	return nil
}

// NormalizeTTL applies the default to a zero TTL and checks the range.
func NormalizeTTL(ttlMs int64) (int64, *Error) {
	if ttlMs == 0 {
		return DefaultTTLMs, nil
	}
	if ttlMs < MinTTLMs || ttlMs > MaxTTLMs {
		return 0, Errorf(CodeInvalidTTL, "ttl_ms is %d; it must be between %d and %d", ttlMs, MinTTLMs, MaxTTLMs)
	}
	return ttlMs, nil
}

// ValidateWait checks a wait in milliseconds: 0 to MaxWaitMs.
func ValidateWait(waitMs int64) *Error {
	if waitMs < 0 || waitMs > MaxWaitMs {
		return Errorf(CodeInvalidArgument, "wait_ms is %d; it must be between 0 and %d", waitMs, MaxWaitMs)
	}
	return nil
}

// ValidateLeaseID checks the form of a lease ID: LeaseIDLen lowercase hex characters.
func ValidateLeaseID(id string) *Error {
	if len(id) != LeaseIDLen {
		return Errorf(CodeInvalidArgument, "lease_id must be %d hex characters", LeaseIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return Errorf(CodeInvalidArgument, "lease_id must be %d lowercase hex characters", LeaseIDLen)
		}
	}
	return nil
}

// ValidateRequestID checks an acquire's request_id: empty, or MinRequestIDLen to
// MaxRequestIDLen characters of [A-Za-z0-9_-].
func ValidateRequestID(id string) *Error {
	if id == "" {
		return nil
	}
	if len(id) < MinRequestIDLen || len(id) > MaxRequestIDLen {
		return Errorf(CodeInvalidArgument, "request_id must be %d to %d characters (draw at least 16 random bytes per acquire)", MinRequestIDLen, MaxRequestIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return Errorf(CodeInvalidArgument, "request_id may contain only A-Z, a-z, 0-9, '_' and '-'")
		}
	}
	return nil
}

// NormalizeMode applies the default (ModeExclusive) to an empty lock mode and refuses
// anything but the two modes.
func NormalizeMode(mode string) (string, *Error) {
	switch mode {
	case "", ModeExclusive:
		return ModeExclusive, nil
	case ModeShared:
		return ModeShared, nil
	}
	return "", Errorf(CodeInvalidArgument, "mode %q is not one of %q and %q", mode, ModeExclusive, ModeShared)
}

// ValidateSemaphoreLimit checks a semaphore's limit: 1 to MaxSemaphoreLimit permits.
func ValidateSemaphoreLimit(limit int64) *Error {
	if limit < 1 || limit > MaxSemaphoreLimit {
		return Errorf(CodeInvalidArgument, "limit is %d; it is required and must be between 1 and %d", limit, MaxSemaphoreLimit)
	}
	return nil
}

// ValidateElectionValue checks a leader's published value: at most MaxElectionValueLen
// bytes of UTF-8. Control characters are allowed, so a value may be a JSON document.
func ValidateElectionValue(v string) *Error {
	return validateText("value", v, MaxElectionValueLen)
}

// validateText holds the rules the owner and an election's value share: at most maxLen
// bytes, and valid UTF-8. field names the request field in the error.
func validateText(field, s string, maxLen int) *Error {
	if len(s) > maxLen {
		return Errorf(CodeInvalidArgument, "%s is %d bytes; at most %d are allowed", field, len(s), maxLen)
	}
	if !utf8.ValidString(s) {
		return Errorf(CodeInvalidArgument, "%s is not valid UTF-8", field)
	}
	return nil
}
