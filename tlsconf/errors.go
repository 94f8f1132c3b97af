package tlsconf

import "errors"

// Errors returned by this package. Each is wrapped with the file or flag it is
// about, so match them with errors.Is.
var (
	// ErrInvalidFiles means the set of TLS flags is half configured (for
	// example a certificate without its key) or a flag has an unknown value.
	ErrInvalidFiles = errors.New("tlsconf: invalid TLS settings")

	// ErrNoTLS means a TLS component was asked for while no certificate files
	// were given; the caller should run without TLS instead of building one.
	ErrNoTLS = errors.New("tlsconf: TLS is not configured")

	// ErrReadFile means a certificate, key or CA file could not be read.
	ErrReadFile = errors.New("tlsconf: cannot read file")

	// ErrBadPEM means a file holds no certificate or no private key in a form
	// this package reads (PEM; PKCS#8, SEC 1 EC or PKCS#1 keys).
	ErrBadPEM = errors.New("tlsconf: no usable PEM data")

	// ErrKeyMismatch means the private key does not belong to the certificate.
	ErrKeyMismatch = errors.New("tlsconf: private key does not match certificate")

	// ErrNotSignedByCA means the certificate does not chain to the given CA.
	ErrNotSignedByCA = errors.New("tlsconf: certificate is not signed by the CA")

	// ErrExpired means a certificate is past its NotAfter time.
	ErrExpired = errors.New("tlsconf: certificate has expired")

	// ErrNotYetValid means a certificate's NotBefore time is in the future,
	// usually a clock that is behind the issuer's.
	ErrNotYetValid = errors.New("tlsconf: certificate is not valid yet")

	// ErrNotCA means the certificate given as the issuer of new certificates
	// is not a CA certificate.
	ErrNotCA = errors.New("tlsconf: certificate is not a CA")

	// ErrNotNodeCert means a certificate of the cluster CA is not a node
	// certificate (it lacks the URI SAN raftlock://node/<id>): a peer on the
	// node-to-node port, or a node's own --tls-cert.
	ErrNotNodeCert = errors.New("tlsconf: not a node certificate")

	// ErrInvalidName means a node ID or client name cannot be put in a
	// certificate (empty, too long, or holding '/' or control characters).
	ErrInvalidName = errors.New("tlsconf: invalid name")

	// ErrNotMember means a peer on the node-to-node port presented a valid node
	// certificate whose node ID is not a member of the cluster (a removed node):
	// a certificate proves who a node is, not that it still belongs.
	ErrNotMember = errors.New("tlsconf: the peer's node is not a member of the cluster")

	// ErrNodeIDChanged means a Reload found a certificate for another node ID
	// than the one the node started with (its --id): a reload rotates a node's
	// certificate, it never changes which node it is.
	ErrNodeIDChanged = errors.New("tlsconf: the certificate names another node")

	// ErrFileExists means WriteFiles would overwrite an existing file.
	ErrFileExists = errors.New("tlsconf: file exists")
)
