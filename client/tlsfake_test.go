package client_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftlock/raftlock/tlsconf"
)

// pki is a CA with a node certificate for 127.0.0.1 and a client certificate, written to
// a test's temporary directory.
type pki struct {
	dir                     string
	caPath, caKeyPath       string
	nodePath, nodeKeyPath   string
	clientPath, clientKey   string
	caPEM, nodePEM, nodeKey []byte
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	caPEM, caKey, err := tlsconf.GenerateCA(tlsconf.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.caPath, p.caKeyPath, err = tlsconf.WriteFiles(p.dir, "ca", caPEM, caKey); err != nil {
		t.Fatal(err)
	}
	nodePEM, nodeKey, err := tlsconf.IssueNode(caPEM, caKey, tlsconf.NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.nodePath, p.nodeKeyPath, err = tlsconf.WriteFiles(p.dir, "n1", nodePEM, nodeKey); err != nil {
		t.Fatal(err)
	}
	cPEM, cKey, err := tlsconf.IssueClient(caPEM, caKey, "worker", tlsconf.ClientCertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.clientPath, p.clientKey, err = tlsconf.WriteFiles(p.dir, "worker", cPEM, cKey); err != nil {
		t.Fatal(err)
	}
	p.caPEM, p.nodePEM, p.nodeKey = caPEM, nodePEM, nodeKey
	return p
}

// fakeTLSNode serves h over HTTPS with the node certificate; requireClient makes the
// server insist on a client certificate of the CA.
func fakeTLSNode(t *testing.T, p *pki, requireClient bool, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	cert, err := tls.X509KeyPair(p.nodePEM, p.nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(p.caPEM)
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		srv.TLS.ClientCAs = pool
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// otherCA writes a second, unrelated CA and returns its certificate's path.
func otherCA(t *testing.T) string {
	t.Helper()
	caPEM, _, err := tlsconf.GenerateCA(tlsconf.CAOptions{Name: "someone else"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(path, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
