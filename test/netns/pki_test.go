package netns_test

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/raftlock/raftlock/tlsconf"
	"github.com/raftlock/raftlock/tlsconf/tlstest"
)

// pki is the cluster's certificates, written where the nodes read them, and the ones an
// attacker brings: a client certificate of the cluster's own CA (stolen from a worker, or
// issued to one), and a node and a client certificate of another CA.
type pki struct {
	*tlstest.CA // the cluster CA, which anyone may know

	worker      tls.Certificate // a client certificate of the cluster CA
	foreignNode tls.Certificate // a node certificate ("n1") of another CA
	foreignCli  tls.Certificate // a client certificate of another CA
}

// newPKI issues a node certificate per namespace of nw, carrying the namespace's IP (the
// address the test's HTTPS client checks the server against).
func newPKI(t *testing.T, nw *network) *pki {
	t.Helper()
	k := &pki{CA: tlstest.NewCA(t, "netns test CA")}
	k.WriteNodes(t, len(nw.ns), func(i int) tlsconf.NodeCertOptions {
		return tlsconf.NodeCertOptions{IPs: []net.IP{net.ParseIP(nw.IP(i))}, NoLocalhost: true}
	})
	k.worker = k.ClientKeyPair(t, "worker")
	other := tlstest.NewCA(t, "attacker CA")
	k.foreignNode = other.NodeKeyPair(t, "n1")
	k.foreignCli = other.ClientKeyPair(t, "worker")
	return k
}
