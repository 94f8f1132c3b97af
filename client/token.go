package client

import (
	"errors"
	"strings"
)

// minSecretLen is the shortest value redact replaces: a lease ID, request ID or token is
// far longer, and replacing a few characters would mangle messages for nothing.
const minSecretLen = 8

// secret holds an ACL token's secret ID. The Client keeps a pointer to it, which fmt
// prints as an address: printing a Client with %v or %+v cannot show the token (fmt
// prints unexported string fields as they are, Stringer or not). It prints as
// "[redacted]" itself. A nil *secret means no token.
type secret struct {
	v   string
	hdr []string // the Authorization header's value, built once
}

// newSecret returns nil for an empty token.
func newSecret(s string) *secret {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &secret{v: s, hdr: []string{"Bearer " + s}}
}

// String implements fmt.Stringer.
func (*secret) String() string { return "[redacted]" }

// GoString implements fmt.GoStringer, for %#v.
func (*secret) GoString() string { return `"[redacted]"` }

// header returns the Authorization header's value, one slice shared by every request (see
// jsonHeader).
func (s *secret) header() []string { return s.hdr }

// check reports whether the secret can go in an HTTP header. The error does not show it.
func (s *secret) check() error {
	if s == nil {
		return nil
	}
	for i := 0; i < len(s.v); i++ {
		if s.v[i] <= ' ' || s.v[i] >= 0x7f {
			return errors.New("client: the ACL token holds characters that cannot go in an HTTP header (white space, control or non-ASCII characters); it is not shown here")
		}
	}
	return nil
}

// redact replaces the secret in text, in case a server or proxy echoed it.
func (s *secret) redact(text string) string {
	if s == nil || len(s.v) < minSecretLen {
		return text
	}
	return strings.ReplaceAll(text, s.v, "[redacted]")
}

// redact replaces in s the client's token and the request's secrets, in case a server or
// a proxy echoes them in an answer that becomes an error text.
func (c *Client) redact(r *request, s string) string {
	s = c.token.redact(s)
	for _, v := range r.secrets {
		if len(v) >= minSecretLen {
			s = strings.ReplaceAll(s, v, redactID(v))
		}
	}
	return s
}

// redactID shortens a secret (a lease ID, a request ID) for logs and error messages: its
// first six characters, enough to tell leases apart, far too few to use one.
func redactID(id string) string {
	if len(id) <= 6 {
		return "…"
	}
	return id[:6] + "…"
}
