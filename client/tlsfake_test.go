package client_test

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/raftlock/raftlock/tlsconf"
	"github.com/raftlock/raftlock/tlsconf/tlstest"
)

// pki is a CA with a node certificate for 127.0.0.1 ("n1") and a client certificate
// ("worker"), written to a test's temporary directory.
type pki struct {
	*tlstest.CA
	node, worker tlsconf.Files
	nodeKey      []byte // n1's PEM key, which no error message may quote
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	ca := tlstest.NewCA(t, "")
	p := &pki{CA: ca, node: ca.WriteNode(t, tlsconf.NodeCertOptions{ID: "n1"}), worker: ca.WriteClient(t, "worker")}
	var err error
	if p.nodeKey, err = os.ReadFile(p.node.Key); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeTLSNode serves h over HTTPS with the node certificate; requireClient makes the
// server insist on a client certificate of the CA.
func fakeTLSNode(t *testing.T, p *pki, requireClient bool, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.node.Cert, p.node.Key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		srv.TLS.ClientCAs = p.Pool()
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// otherCA writes a second, unrelated CA and returns its certificate's path.
func otherCA(t *testing.T) string {
	t.Helper()
	return tlstest.NewCA(t, "someone else").CertFile
}
