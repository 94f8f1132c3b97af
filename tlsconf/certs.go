package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// Defaults for the certificates this package issues. They follow what
// `consul tls` does: a long-lived CA that stays offline, and leaf certificates
// short enough that rotating them is a routine job.
const (
	// DefaultCAName is the CA's common name, saying plainly that it is
	// meant for development or small clusters, not a public PKI.
	DefaultCAName = "raftlock development CA"
	// DefaultCAValidity is how long a CA certificate is valid: 5 years.
	DefaultCAValidity = 5 * 365 * 24 * time.Hour
	// DefaultNodeValidity is how long a node certificate is valid: 1 year.
	DefaultNodeValidity = 365 * 24 * time.Hour
	// DefaultClientValidity is how long a client certificate is valid: 1 year.
	DefaultClientValidity = 365 * 24 * time.Hour

	// URIScheme is the scheme of the URI SANs that tell node certificates
	// (raftlock://node/<id>) from client certificates (raftlock://client/<name>).
	URIScheme = "raftlock"

	// backdate is subtracted from NotBefore so that a node whose clock is a
	// little behind the issuer's accepts a certificate issued a moment ago.
	backdate = 5 * time.Minute
	// maxNameLen bounds node IDs and client names put into certificates.
	maxNameLen = 128
)

// CAOptions tunes GenerateCA. The zero value gives the defaults.
type CAOptions struct {
	// Name is the CA's common name; empty means DefaultCAName.
	Name string
	// Validity is how long the CA is valid; zero means DefaultCAValidity.
	Validity time.Duration
}

// NodeCertOptions describes a node certificate for IssueNode.
type NodeCertOptions struct {
	// ID is the node's Raft server ID ("n1"). It becomes the common name and
	// the URI SAN raftlock://node/<ID>. Required.
	ID string
	// IPs are the addresses peers and clients dial the node at (its Raft and
	// HTTP addresses). 127.0.0.1 is added unless NoLocalhost is set.
	IPs []net.IP
	// DNSNames are host names clients may use for the node. "localhost" is
	// added unless NoLocalhost is set.
	DNSNames []string
	// NoLocalhost leaves out 127.0.0.1 and "localhost", for certificates of
	// nodes that must not be reachable under those names.
	NoLocalhost bool
	// Validity is how long the certificate is valid; zero means
	// DefaultNodeValidity. It is capped at the CA's own expiry.
	Validity time.Duration
}

// ClientCertOptions tunes IssueClient. The zero value gives the defaults.
type ClientCertOptions struct {
	// Validity is how long the certificate is valid; zero means
	// DefaultClientValidity. It is capped at the CA's own expiry.
	Validity time.Duration
}

// GenerateCA creates a self-signed ECDSA P-256 CA for a cluster and returns its
// certificate and private key in PEM. The CA may sign only leaf certificates
// (MaxPathLenZero), so a leaked node key cannot mint further CAs.
func GenerateCA(opts CAOptions) (certPEM, keyPEM []byte, err error) {
	name := opts.Name
	if name == "" {
		name = DefaultCAName
	}
	validity := opts.Validity
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"raftlock"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	return sign(tmpl, tmpl, key, key, "create CA certificate")
}

// IssueNode signs a certificate for a cluster node with the CA. It is valid
// for both server and client authentication because nodes dial each other
// (Raft, forwarding) as well as serve, and it carries the URI SAN
// raftlock://node/<id> that the node-to-node port insists on.
func IssueNode(caCertPEM, caKeyPEM []byte, opts NodeCertOptions) (certPEM, keyPEM []byte, err error) {
	if err := checkName("node ID", opts.ID); err != nil {
		return nil, nil, err
	}
	ips := append([]net.IP(nil), opts.IPs...)
	dns := append([]string(nil), opts.DNSNames...)
	if !opts.NoLocalhost {
		ips = appendIP(ips, net.IPv4(127, 0, 0, 1))
		dns = appendString(dns, "localhost")
	}
	validity := opts.Validity
	if validity <= 0 {
		validity = DefaultNodeValidity
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: opts.ID, Organization: []string{"raftlock"}},
		IPAddresses: ips,
		DNSNames:    dns,
		URIs:        []*url.URL{nodeURI(opts.ID)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	return issue(caCertPEM, caKeyPEM, tmpl, validity)
}

// IssueClient signs a certificate for a client (a worker, the CLI, an
// operator) with the CA. It is valid for client authentication only and
// carries the URI SAN raftlock://client/<name>, so it opens the HTTPS API when
// client certificates are required but never the node-to-node port.
func IssueClient(caCertPEM, caKeyPEM []byte, name string, opts ClientCertOptions) (certPEM, keyPEM []byte, err error) {
	if err := checkName("client name", name); err != nil {
		return nil, nil, err
	}
	validity := opts.Validity
	if validity <= 0 {
		validity = DefaultClientValidity
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name, Organization: []string{"raftlock"}},
		URIs:        []*url.URL{{Scheme: URIScheme, Host: "client", Path: "/" + name}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issue(caCertPEM, caKeyPEM, tmpl, validity)
}

// NodeIDFromCert returns the node ID of a node certificate, read from its URI
// SAN raftlock://node/<id>. ok is false for any other certificate (a client
// certificate, a certificate of another issuer's making). A node uses it to
// accept, for example, an HTTP address registration only for the ID its peer
// proved with its certificate. It does not verify the certificate: callers
// use it on certificates the TLS handshake has already verified.
func NodeIDFromCert(cert *x509.Certificate) (id string, ok bool) {
	return idFromCert(cert, "node")
}

// ClientNameFromCert returns the name of a client certificate, read from its
// URI SAN raftlock://client/<name>; ok is false for any other certificate.
// Like NodeIDFromCert it trusts that the handshake verified the certificate.
func ClientNameFromCert(cert *x509.Certificate) (name string, ok bool) {
	return idFromCert(cert, "client")
}

func idFromCert(cert *x509.Certificate, kind string) (string, bool) {
	if cert == nil {
		return "", false
	}
	for _, u := range cert.URIs {
		if u.Scheme != URIScheme || u.Host != kind || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			continue
		}
		id, found := strings.CutPrefix(u.Path, "/")
		if !found || checkName(kind, id) != nil {
			continue
		}
		return id, true
	}
	return "", false
}

// WriteFiles writes a certificate and its key to dir as base.pem (mode 0644)
// and base-key.pem (mode 0600, readable by the owner only), making dir (mode
// 0700: it holds keys) when it does not exist. It never overwrites: if either
// file exists it writes nothing and says which one, so a rerun cannot silently
// replace a key that is in use.
func WriteFiles(dir, base string, certPEM, keyPEM []byte) (certPath, keyPath string, err error) {
	if base == "" || strings.ContainsRune(base, filepath.Separator) {
		return "", "", fmt.Errorf("%w: file base name %q must be non-empty and without a path separator", ErrInvalidName, base)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("tlsconf: make %s: %w", dir, err)
	}
	certPath = filepath.Join(dir, base+".pem")
	keyPath = filepath.Join(dir, base+"-key.pem")
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return "", "", fmt.Errorf("%w: %s already exists; remove it or pick another name", ErrFileExists, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("tlsconf: check %s: %w", p, err)
		}
	}
	// The key goes first: if it cannot be written, no orphan certificate is
	// left behind to be mistaken for a usable pair.
	if err := writeNew(keyPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(certPath, certPEM, 0o644); err != nil {
		_ = os.Remove(keyPath)
		return "", "", err
	}
	return certPath, keyPath, nil
}

// writeNew creates path exclusively (O_EXCL closes the race with another
// writer between the existence check and the write) and sets its mode
// exactly, whatever the umask.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s already exists; remove it or pick another name", ErrFileExists, path)
	}
	if err != nil {
		return fmt.Errorf("tlsconf: create %s: %w", path, err)
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("tlsconf: write %s: %w", path, err)
	}
	return nil
}

// issue fills in the parts every leaf shares (key, serial, validity capped at
// the CA's expiry) and signs tmpl with the CA.
func issue(caCertPEM, caKeyPEM []byte, tmpl *x509.Certificate, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	caCerts, err := parseCerts(caCertPEM, "CA certificate")
	if err != nil {
		return nil, nil, err
	}
	ca := caCerts[0]
	if !ca.IsCA || !ca.BasicConstraintsValid || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, nil, fmt.Errorf("%w: %q cannot sign certificates", ErrNotCA, ca.Subject.CommonName)
	}
	caKey, err := parseKey(caKeyPEM, "CA key")
	if err != nil {
		return nil, nil, err
	}
	if !publicKeysEqual(ca.PublicKey, caKey.Public()) {
		return nil, nil, fmt.Errorf("%w: the CA key does not belong to CA %q", ErrKeyMismatch, ca.Subject.CommonName)
	}
	now := time.Now()
	if now.After(ca.NotAfter) {
		return nil, nil, fmt.Errorf("%w: CA %q expired at %s", ErrExpired, ca.Subject.CommonName, ca.NotAfter.UTC().Format(time.RFC3339))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: generate key: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = now.Add(-backdate)
	if tmpl.NotBefore.Before(ca.NotBefore) {
		tmpl.NotBefore = ca.NotBefore
	}
	// A certificate that outlives its CA fails verification anyway; capping
	// makes the real expiry visible in the certificate itself.
	tmpl.NotAfter = now.Add(validity)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	return sign(tmpl, ca, key, caKey, "sign certificate")
}

// sign signs tmpl, the certificate of key, with parent's key signer, and returns the
// certificate and key as PEM; what names the step in the error.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer, what string) (certPEM, keyPEM []byte, err error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsconf: %s: %w", what, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

func nodeURI(id string) *url.URL {
	return &url.URL{Scheme: URIScheme, Host: "node", Path: "/" + id}
}

// checkName keeps names that survive the round trip through a URI path and
// read well in a common name and in logs.
func checkName(what, name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: %s must be 1 to %d bytes", ErrInvalidName, what, maxNameLen)
	}
	for _, r := range name {
		if r == '/' || r == unicode.ReplacementChar || unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: %s %q may not hold '/', spaces or control characters", ErrInvalidName, what, name)
		}
	}
	return nil
}

// newSerial returns a random positive 128-bit serial number, as RFC 5280
// asks serials to be unique per CA and unpredictable.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 127)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: generate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func appendIP(ips []net.IP, ip net.IP) []net.IP {
	for _, have := range ips {
		if have.Equal(ip) {
			return ips
		}
	}
	return append(ips, ip)
}

func appendString(list []string, s string) []string {
	for _, have := range list {
		if strings.EqualFold(have, s) {
			return list
		}
	}
	return append(list, s)
}
