package tlsconf

import (
	"crypto/tls"
	"fmt"
)

// Client-certificate policies of the HTTPS API, the values of
// --tls-client-auth. There are two: a third, "request", was once accepted and
// did exactly what none does, so it is refused now with a flag error saying so
// (an operator who chose it expected something none does not do).
const (
	// ClientAuthNone needs no client certificate, but verifies one that is
	// offered against the CA and refuses the handshake if it does not verify:
	// nodes present theirs on the API port to prove which node they are, and a
	// step towards require can be taken one client at a time.
	ClientAuthNone = "none"
	// ClientAuthRequire refuses clients without a certificate of the CA.
	ClientAuthRequire = "require"

	// clientAuthRequest is the retired value; see above.
	clientAuthRequest = "request"
)

// Files names a node's TLS files, as given by the flags --tls-cert, --tls-key,
// --tls-ca and --tls-client-auth. The zero value means TLS is off.
type Files struct {
	// Cert is the PEM certificate file: the node's certificate first, then
	// any intermediates.
	Cert string
	// Key is the PEM private key file of Cert.
	Key string
	// CA is the PEM file of the CA (or CAs) peers and clients are verified
	// against. It is required whenever Cert is set, because node-to-node
	// traffic is always mutually verified.
	CA string
	// ClientAuth is the HTTPS API's client-certificate policy: ClientAuthNone
	// or ClientAuthRequire. Empty means ClientAuthNone.
	// The node-to-node port ignores it: it always requires a node certificate.
	ClientAuth string
}

// Enabled reports whether any TLS file is named. Callers run without TLS when
// it is false, and otherwise call Validate (or NewReloader, which does).
func (f Files) Enabled() bool {
	return f.Cert != "" || f.Key != "" || f.CA != ""
}

// Validate refuses a half-configured set of files and names the missing flag,
// because a node that silently fell back to plain text (or refused every
// peer) on a typo would be worse than one that does not start. The zero value
// (TLS off) is valid.
func (f Files) Validate() error {
	if _, err := clientAuthType(f.ClientAuth); err != nil {
		return err
	}
	switch {
	case f.Cert != "" && f.Key == "":
		return invalidf("--tls-cert is set but --tls-key is not: give both, or neither to run without TLS")
	case f.Key != "" && f.Cert == "":
		return invalidf("--tls-key is set but --tls-cert is not: give both, or neither to run without TLS")
	case f.Cert != "" && f.CA == "":
		return invalidf("--tls-cert and --tls-key are set but --tls-ca is not: peers are verified against the cluster CA, so give --tls-ca too")
	case f.CA != "" && f.Cert == "":
		return invalidf("--tls-ca is set but --tls-cert and --tls-key are not: a node needs its own certificate; give all three, or none to run without TLS")
	case f.ClientAuth != "" && f.ClientAuth != ClientAuthNone && f.CA == "":
		return invalidf("--tls-client-auth=%s needs --tls-ca to verify client certificates, and --tls-cert and --tls-key to serve TLS at all", f.ClientAuth)
	}
	return nil
}

// validateClient checks the files of a client (the CLI, the Go client): a CA
// to verify servers, and optionally a certificate and key, both or neither.
func (f Files) validateClient() error {
	switch {
	case f.CA == "":
		return invalidf("--tls-ca is not set: a client verifies the servers against the cluster CA, so give --tls-ca")
	case f.Cert != "" && f.Key == "":
		return invalidf("--tls-cert is set but --tls-key is not: give both, or neither to connect without a client certificate")
	case f.Key != "" && f.Cert == "":
		return invalidf("--tls-key is set but --tls-cert is not: give both, or neither to connect without a client certificate")
	}
	return nil
}

func clientAuthType(s string) (tls.ClientAuthType, error) {
	switch s {
	case "", ClientAuthNone:
		return tls.VerifyClientCertIfGiven, nil
	case ClientAuthRequire:
		return tls.RequireAndVerifyClientCert, nil
	case clientAuthRequest:
		return 0, invalidf("--tls-client-auth=request is no longer accepted: it did what none does (no certificate needed, one offered is verified); use none, or require to refuse clients without a certificate of the CA")
	}
	return 0, invalidf("--tls-client-auth must be none or require, not %q", s)
}

// filesError carries a flag-level message and matches ErrInvalidFiles, so the
// text a user reads stays short while callers can still use errors.Is.
type filesError struct{ msg string }

func (e *filesError) Error() string        { return "tlsconf: " + e.msg }
func (e *filesError) Is(target error) bool { return target == ErrInvalidFiles }

func invalidf(format string, args ...any) error {
	return &filesError{msg: fmt.Sprintf(format, args...)}
}
