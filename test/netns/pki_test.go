package netns_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/raftlock/raftlock/tlsconf"
)

// pki is the cluster's certificates, written where the nodes read them, and the ones an
// attacker brings: a client certificate of the cluster's own CA (stolen from a worker, or
// issued to one), and a node and a client certificate of another CA.
type pki struct {
	dir    string
	caPath string
	pool   *x509.CertPool // the cluster CA, which anyone may know

	worker      tls.Certificate // a client certificate of the cluster CA
	foreignNode tls.Certificate // a node certificate ("n1") of another CA
	foreignCli  tls.Certificate // a client certificate of another CA
}

// newPKI issues a node certificate per namespace of nw, carrying the namespace's IP (the
// address the test's HTTPS client checks the server against).
func newPKI(t *testing.T, nw *network) *pki {
	t.Helper()
	k := &pki{dir: t.TempDir()}
	caCert, caKey, err := tlsconf.GenerateCA(tlsconf.CAOptions{Name: "netns test CA"})
	if err != nil {
		t.Fatal(err)
	}
	if k.caPath, _, err = tlsconf.WriteFiles(k.dir, "ca", caCert, caKey); err != nil {
		t.Fatal(err)
	}
	k.pool = x509.NewCertPool()
	k.pool.AppendCertsFromPEM(caCert)
	for i := range nw.ns {
		id := fmt.Sprintf("n%d", i+1)
		crt, key, err := tlsconf.IssueNode(caCert, caKey, tlsconf.NodeCertOptions{ID: id, IPs: []net.IP{net.ParseIP(nw.IP(i))}, NoLocalhost: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tlsconf.WriteFiles(k.dir, id, crt, key); err != nil {
			t.Fatal(err)
		}
	}
	k.worker = keyPair(t, caCert, caKey, "worker", false)

	otherCA, otherKey, err := tlsconf.GenerateCA(tlsconf.CAOptions{Name: "attacker CA"})
	if err != nil {
		t.Fatal(err)
	}
	k.foreignNode = keyPair(t, otherCA, otherKey, "n1", true)
	k.foreignCli = keyPair(t, otherCA, otherKey, "worker", false)
	return k
}

// keyPair issues a node (node true) or client certificate named name with the CA.
func keyPair(t *testing.T, caCert, caKey []byte, name string, node bool) tls.Certificate {
	t.Helper()
	var crt, key []byte
	var err error
	if node {
		crt, key, err = tlsconf.IssueNode(caCert, caKey, tlsconf.NodeCertOptions{ID: name})
	} else {
		crt, key, err = tlsconf.IssueClient(caCert, caKey, name, tlsconf.ClientCertOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	kp, err := tls.X509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// nodeArgs are node i's TLS flags: its certificate, the CA, client certificates required.
func (k *pki) nodeArgs(i int) []string {
	id := fmt.Sprintf("n%d", i+1)
	return []string{"--tls-cert", filepath.Join(k.dir, id+".pem"), "--tls-key", filepath.Join(k.dir, id+"-key.pem"),
		"--tls-ca", k.caPath, "--tls-client-auth", tlsconf.ClientAuthRequire}
}

// clientConfig is an HTTPS client's config that checks the server against the cluster CA
// (host name included) and presents cert, if any.
func (k *pki) clientConfig(cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: k.pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return cfg
}
