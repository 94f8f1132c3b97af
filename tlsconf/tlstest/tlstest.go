// Package tlstest is the tests' PKI: a certificate authority made with tlsconf, as
// `raftlock tls ca` makes one, whose certificates are written into a test's temporary
// directory under the names `raftlock tls cert` gives them (<name>.pem, <name>-key.pem) or
// kept in memory.
package tlstest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/raftlock/raftlock/tlsconf"
)

// CA is a certificate authority with its files in Dir.
type CA struct {
	// Dir is where the CA's files and every certificate it writes are.
	Dir string
	// Cert and Key are the CA's PEM certificate and key.
	Cert, Key []byte
	// CertFile and KeyFile are their paths (ca.pem, ca-key.pem).
	CertFile, KeyFile string
}

// NewCA makes a CA named name ("" is tlsconf's default) and writes it into a new temporary
// directory.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca := &CA{Dir: t.TempDir()}
	var err error
	if ca.Cert, ca.Key, err = tlsconf.GenerateCA(tlsconf.CAOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	if ca.CertFile, ca.KeyFile, err = tlsconf.WriteFiles(ca.Dir, "ca", ca.Cert, ca.Key); err != nil {
		t.Fatal(err)
	}
	return ca
}

// Pool returns a pool holding the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.Cert)
	return pool
}

// IssueNode issues a node certificate and returns its PEM certificate and key.
func (ca *CA) IssueNode(t testing.TB, opts tlsconf.NodeCertOptions) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := tlsconf.IssueNode(ca.Cert, ca.Key, opts)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// IssueClient issues a client certificate named name and returns its PEM certificate
// and key.
func (ca *CA) IssueClient(t testing.TB, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := tlsconf.IssueClient(ca.Cert, ca.Key, name, tlsconf.ClientCertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// WriteNode issues a node certificate, writes it into Dir as <opts.ID>.pem and
// <opts.ID>-key.pem, and returns the files a node is given.
func (ca *CA) WriteNode(t testing.TB, opts tlsconf.NodeCertOptions) tlsconf.Files {
	t.Helper()
	certPEM, keyPEM := ca.IssueNode(t, opts)
	return ca.write(t, opts.ID, certPEM, keyPEM)
}

// WriteClient issues a client certificate, writes it into Dir as <name>.pem and
// <name>-key.pem, and returns its files (without ClientAuth).
func (ca *CA) WriteClient(t testing.TB, name string) tlsconf.Files {
	t.Helper()
	certPEM, keyPEM := ca.IssueClient(t, name)
	return ca.write(t, name, certPEM, keyPEM)
}

func (ca *CA) write(t testing.TB, name string, certPEM, keyPEM []byte) tlsconf.Files {
	t.Helper()
	certFile, keyFile, err := tlsconf.WriteFiles(ca.Dir, name, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return tlsconf.Files{Cert: certFile, Key: keyFile, CA: ca.CertFile}
}

// WriteNodes writes a node certificate for each of n1...nN, with the options opts returns
// for node i (nil: the defaults for the ID).
func (ca *CA) WriteNodes(t testing.TB, n int, opts func(i int) tlsconf.NodeCertOptions) {
	t.Helper()
	for i := 0; i < n; i++ {
		o := tlsconf.NodeCertOptions{}
		if opts != nil {
			o = opts(i)
		}
		o.ID = NodeID(i)
		ca.WriteNode(t, o)
	}
}

// NodeID is node i's ID in a test cluster: n1, n2, ...
func NodeID(i int) string { return fmt.Sprintf("n%d", i+1) }

// ServeFlags are the serve flags of node i whose certificate WriteNodes wrote: its
// certificate and key, the CA, and client certificates required on the API.
func (ca *CA) ServeFlags(i int) []string {
	id := NodeID(i)
	return []string{"--tls-cert", filepath.Join(ca.Dir, id+".pem"), "--tls-key", filepath.Join(ca.Dir, id+"-key.pem"),
		"--tls-ca", ca.CertFile, "--tls-client-auth", tlsconf.ClientAuthRequire}
}

// NodeKeyPair issues a node certificate for id, kept in memory.
func (ca *CA) NodeKeyPair(t testing.TB, id string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := ca.IssueNode(t, tlsconf.NodeCertOptions{ID: id})
	return keyPair(t, certPEM, keyPEM)
}

// ClientKeyPair issues a client certificate named name, kept in memory.
func (ca *CA) ClientKeyPair(t testing.TB, name string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := ca.IssueClient(t, name)
	return keyPair(t, certPEM, keyPEM)
}

func keyPair(t testing.TB, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	kp, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// ClientConfig is an HTTPS client's TLS config that checks the server against the CA
// (host name included) and presents cert, if any.
func (ca *CA) ClientConfig(cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return cfg
}
