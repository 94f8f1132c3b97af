package tlsconf

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
)

// TestServerConfig_RefusesTLS12 holds the API to the node-to-node port's rule: TLS 1.3 at
// least. A client that offers at most TLS 1.2 is refused with a protocol-version alert,
// and raftlock's own clients refuse a server that offers at most TLS 1.2.
func TestServerConfig_RefusesTLS12(t *testing.T) {
	p := mustNewPKI(t, "")
	n1 := p.node(t, "n1")
	r := mustNewReloader(t, n1, nil)
	url := startHTTPS(t, r)

	old := mustClientConfig(t, Files{CA: p.caFile})
	old.MinVersion, old.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	if body, _, err := get(url, old, false); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("a TLS 1.2-only client: body %q, error %v; want a protocol version refusal", body, err)
	}
	if body, _, err := get(url, mustClientConfig(t, Files{CA: p.caFile}), false); err != nil || body != "anonymous" {
		t.Fatalf("a TLS 1.3 client: %q, %v", body, err)
	}

	// The other direction: a server stuck at TLS 1.2 is refused by LoadClientConfig's and
	// ClientConfig's configs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	srv := r.ServerConfig().Clone()
	srv.GetConfigForClient = nil
	srv.MinVersion, srv.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	srv.Certificates = []tls.Certificate{r.cur.Load().cert}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = tls.Server(c, srv).Handshake(); c.Close() }()
		}
	}()
	for name, cfg := range map[string]*tls.Config{"LoadClientConfig": mustClientConfig(t, Files{CA: p.caFile}), "ClientConfig": r.ClientConfig()} {
		cfg.ServerName = "localhost"
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected to a TLS 1.2-only server", name)
		} else if !strings.Contains(err.Error(), "protocol version") {
			t.Errorf("%s: %v; want a protocol version refusal", name, err)
		}
	}
}

// TestReloader_ReloadRefusesAnotherNodeOrCA rotates to certificates a reload must refuse:
// one of the same CA naming another node (it would make this node speak as that one), and
// one for this node's ID from another CA. Each keeps the certificate in use, returns the
// reason, and logs it at ERROR with what to do.
func TestReloader_ReloadRefusesAnotherNodeOrCA(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	n1, r, sink, addr, client := serveReloading(t, p)
	serial := r.Certificate().SerialNumber

	issueOther := func(ca *testPKI, id string) ([]byte, []byte) {
		c, k, err := IssueNode(ca.caCert, ca.caKey, NodeCertOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return c, k
	}
	for _, tc := range []struct {
		name    string
		cert    func() ([]byte, []byte)
		wantErr error
		wantLog string
	}{
		{"another node's certificate", func() ([]byte, []byte) { return issueOther(p, "n2") }, ErrNodeIDChanged, "raftlock tls cert --node n1"},
		{"another CA's certificate for n1", func() ([]byte, []byte) { return issueOther(other, "n1") }, ErrNotSignedByCA, "does not verify against --tls-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM := tc.cert()
			replaceFile(t, n1.Cert, certPEM)
			replaceFile(t, n1.Key, keyPEM)
			before := len(sink.String())
			err := r.Reload()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reload: %v, want %v", err, tc.wantErr)
			}
			if r.NodeID() != "n1" || r.Certificate().SerialNumber.Cmp(serial) != 0 {
				t.Fatalf("after the refused reload the reloader holds node %q serial %x, want n1 %x", r.NodeID(), r.Certificate().SerialNumber, serial)
			}
			if got := serialOf(t, addr, client); got.Cmp(serial) != 0 {
				t.Fatalf("after the refused reload the server presents %x, want the kept %x", got, serial)
			}
			logs := sink.String()[before:]
			if !strings.Contains(logs, "[ERROR]") || !strings.Contains(logs, "TLS reload failed; keeping the previous certificate") || !strings.Contains(logs, tc.wantLog) {
				t.Fatalf("the refusal is not logged at ERROR with %q:\n%s", tc.wantLog, logs)
			}
			assertNoKeyMaterial(t, logs, keyPEM)
		})
	}
}
