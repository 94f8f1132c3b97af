package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// bundle is one consistent reading of the files: a certificate, its key and
// the CA pool it was checked against. It is replaced whole, never edited, so
// a handshake sees either the old set or the new one, never a mix.
type bundle struct {
	cert tls.Certificate // Leaf is set
	pool *x509.CertPool
}

// Reloader holds a node's current certificate, key and CA, and hands out
// tls.Configs that read them on every handshake. Reload replaces them, so
// rotating certificates needs no restart. It is safe for concurrent use.
type Reloader struct {
	files      Files
	clientAuth tls.ClientAuthType
	logger     hclog.Logger

	reloadMu sync.Mutex // serializes Reload; readers never take it
	cur      atomic.Pointer[bundle]
}

// NewReloader validates files and loads them once. It fails with ErrNoTLS if
// no file is named (the caller should not build TLS at all then), with
// ErrInvalidFiles if the set is half configured, and with a clear error if a
// file is unreadable, the key does not match the certificate, the certificate
// is not signed by the CA, is expired or not yet valid, or is not a node
// certificate. A nil logger discards logs.
func NewReloader(files Files, logger hclog.Logger) (*Reloader, error) {
	if !files.Enabled() {
		return nil, ErrNoTLS
	}
	if err := files.Validate(); err != nil {
		return nil, err
	}
	auth, err := clientAuthType(files.ClientAuth)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	b, err := load(files, true)
	if err != nil {
		return nil, err
	}
	r := &Reloader{files: files, clientAuth: auth, logger: logger.Named("tls")}
	r.cur.Store(b)
	r.logLoaded("loaded TLS certificate", b)
	return r, nil
}

// Reload re-reads the certificate, key and CA files and, only if all three
// pass the same checks as NewReloader and the certificate names the same node
// ID as the one loaded at start (the node's --id, which the cluster checked),
// makes them current for new connections. On failure the previous files stay
// in use, and the error is returned and logged at Error with what to do, so a
// botched rotation does not take the node off the network or hand it another
// node's identity. Callers call it on SIGHUP.
func (r *Reloader) Reload() error {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	old := r.cur.Load().cert.Leaf
	b, err := load(r.files, true)
	if err == nil {
		err = sameNode(r.files.Cert, old, b.cert.Leaf)
	}
	if err != nil {
		r.logger.Error("TLS reload failed; keeping the previous certificate: fix the files named in the error and send SIGHUP again",
			"error", err, "serial", old.SerialNumber.Text(16), "not_after", old.NotAfter.UTC())
		return err
	}
	r.cur.Store(b)
	r.logLoaded("reloaded TLS certificate", b)
	return nil
}

// sameNode refuses a reloaded certificate whose node ID is not the one in use: peers
// and the API's node routes take a node certificate's ID as who is speaking, so a node
// that picked up another node's certificate would speak as that node.
func sameNode(file string, old, next *x509.Certificate) error {
	was, _ := NodeIDFromCert(old)
	now, _ := NodeIDFromCert(next)
	if now != was {
		return fmt.Errorf("%w: --tls-cert %s is node %q's certificate, but this node is %q: a reload cannot change a node's ID; issue one with `raftlock tls cert --node %s`, put it there and reload again",
			ErrNodeIDChanged, file, now, was, was)
	}
	return nil
}

// Certificate returns the node certificate in use now. Callers must not
// modify it.
func (r *Reloader) Certificate() *x509.Certificate {
	return r.cur.Load().cert.Leaf
}

// NodeID returns the node ID in the certificate in use now, so the caller
// can refuse to start when it differs from the node's --id.
func (r *Reloader) NodeID() string {
	id, _ := NodeIDFromCert(r.Certificate())
	return id
}

// ServerConfig returns the config of the HTTPS API. Each handshake reads the
// current certificate and CA (through GetConfigForClient), so a Reload
// applies to new connections without restarting the listener. Client
// certificates are asked for and verified against the CA as Files.ClientAuth
// says. TLS 1.3 is the minimum, as on the node-to-node port, so an operator has
// one rule for every port (every client raftlock ships, Go's crypto/tls and
// current browsers speak it). HTTP/2 and HTTP/1.1 are offered; a caller that
// wants other ALPN protocols sets NextProtos on the returned config before
// serving.
func (r *Reloader) ServerConfig() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"h2", "http/1.1"}}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		b := r.cur.Load()
		return &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{b.cert},
			// With none, a certificate offered is still verified (VerifyClientCertIfGiven):
			// nodes present theirs on the API port to prove which node they are.
			ClientAuth: r.clientAuth,
			ClientCAs:  b.pool,
			NextProtos: base.NextProtos,
		}, nil
	}
	return base
}

// PeerServerConfig returns the config for accepting node-to-node connections
// (Raft, forwarding). It always requires a client certificate signed by the
// cluster CA and, beyond that, a node certificate: a client certificate from
// the same CA opens the HTTPS API but must never take part in consensus.
// Peers are all raftlock nodes, so TLS 1.3 is the minimum.
func (r *Reloader) PeerServerConfig() *tls.Config {
	base := &tls.Config{MinVersion: tls.VersionTLS13}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		b := r.cur.Load()
		return &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{b.cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    b.pool,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
					return errors.New("tlsconf: peer certificate was not verified")
				}
				return requireNode(cs.PeerCertificates[0])
			},
		}, nil
	}
	return base
}

// PeerClientConfig returns the config for dialing other nodes. It presents
// the current node certificate and accepts the server only if its
// certificate chains to the current cluster CA and is a node certificate.
//
// It skips the host name check (InsecureSkipVerify) and verifies the chain
// itself in VerifyConnection, because Raft dials peers by IP:port from its
// configuration, and a node's certificate need not list every address it is
// reachable at. This is still safe: the CA is the cluster's own and signs
// nothing but this cluster's nodes and clients, the node-certificate check
// shuts out clients, and the handshake still proves the server holds the
// certificate's key. What it does not prove is which node answered, which
// Raft does not rely on (it checks server IDs in its own messages).
func (r *Reloader) PeerClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // replaced by VerifyConnection below; see above
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &r.cur.Load().cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tlsconf: peer sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			leaf := cs.PeerCertificates[0]
			if _, err := leaf.Verify(x509.VerifyOptions{
				Roots:         r.cur.Load().pool,
				Intermediates: inter,
				KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			}); err != nil {
				return fmt.Errorf("%w: peer %q: %w", ErrNotSignedByCA, leaf.Subject.CommonName, err)
			}
			return requireNode(leaf)
		},
	}
}

// ClientConfig returns a config for calling a node's HTTPS API from this
// process: servers are verified against the CA (host names included), and
// the node certificate is offered when a server asks for one. The root pool
// is the CA current at the call; call again after a Reload to pick up a new
// CA. The CLI and the Go client, which have no Reloader, use LoadClientConfig.
func (r *Reloader) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		RootCAs:    r.cur.Load().pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &r.cur.Load().cert, nil
		},
	}
}

// LoadClientConfig returns the config of a client (the CLI, the Go client)
// from the files of --tls-ca and, optionally, --tls-cert and --tls-key: the
// CA is required to verify servers, and a certificate and key are given
// both or neither. Files.ClientAuth is ignored. The files are read once.
func LoadClientConfig(f Files) (*tls.Config, error) {
	if err := f.validateClient(); err != nil {
		return nil, err
	}
	b, err := load(f, false)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: b.pool}
	if f.Cert != "" {
		cfg.Certificates = []tls.Certificate{b.cert}
	}
	return cfg, nil
}

func (r *Reloader) logLoaded(msg string, b *bundle) {
	leaf := b.cert.Leaf
	r.logger.Info(msg, "cert", r.files.Cert, "subject", leaf.Subject.CommonName,
		"serial", leaf.SerialNumber.Text(16), "not_after", leaf.NotAfter.UTC())
}

// requireNode accepts only node certificates; see PeerServerConfig.
func requireNode(leaf *x509.Certificate) error {
	if _, ok := NodeIDFromCert(leaf); !ok {
		return fmt.Errorf("%w: peer %q (serial %s) has no %s://node/<id> URI SAN",
			ErrNotNodeCert, leaf.Subject.CommonName, leaf.SerialNumber.Text(16), URIScheme)
	}
	return nil
}

// load reads f and checks it. If f.Cert is empty only the CA is loaded
// (clients without a certificate). node asks that the certificate be a node
// certificate, as the node-to-node port would refuse anything else.
func load(f Files, node bool) (*bundle, error) {
	caPEM, err := readFile("--tls-ca", f.CA)
	if err != nil {
		return nil, err
	}
	cas, err := parseCerts(caPEM, "--tls-ca file "+f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	b := &bundle{pool: pool}
	if f.Cert == "" {
		return b, nil
	}

	certPEM, err := readFile("--tls-cert", f.Cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile("--tls-key", f.Key)
	if err != nil {
		return nil, err
	}
	certs, err := parseCerts(certPEM, "--tls-cert file "+f.Cert)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(keyPEM, "--tls-key file "+f.Key)
	if err != nil {
		return nil, err
	}
	leaf := certs[0]
	if !publicKeysEqual(leaf.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%w: --tls-key %s does not belong to --tls-cert %s", ErrKeyMismatch, f.Key, f.Cert)
	}
	now := time.Now()
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("%w: --tls-cert %s (%q) expired at %s; issue a new one",
			ErrExpired, f.Cert, leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("%w: --tls-cert %s (%q) is valid from %s; check this machine's clock",
			ErrNotYetValid, f.Cert, leaf.Subject.CommonName, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         pool,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		CurrentTime:   now,
	}); err != nil {
		return nil, fmt.Errorf("%w: --tls-cert %s (%q) does not verify against --tls-ca %s: %w",
			ErrNotSignedByCA, f.Cert, leaf.Subject.CommonName, f.CA, err)
	}
	if node {
		if _, ok := NodeIDFromCert(leaf); !ok {
			return nil, fmt.Errorf("%w: --tls-cert %s (%q) has no %s://node/<id> URI SAN, so peers would refuse it; issue it as a node certificate",
				ErrNotNodeCert, f.Cert, leaf.Subject.CommonName, URIScheme)
		}
	}
	raw := make([][]byte, len(certs))
	for i, c := range certs {
		raw[i] = c.Raw
	}
	b.cert = tls.Certificate{Certificate: raw, PrivateKey: key, Leaf: leaf}
	return b, nil
}

// readFile reads path, naming the flag it came from in errors.
func readFile(flag, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%w: %s %s: %w", ErrReadFile, flag, path, err)
	}
	return data, nil
}
