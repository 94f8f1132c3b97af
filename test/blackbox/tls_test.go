package blackbox_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/tlsconf"
)

// pki writes a development CA, a certificate per node and one client certificate into dir,
// as `raftlock tls ca` and `raftlock tls cert` do.
type pki struct {
	dir                string
	caCert, caKey      []byte
	ca                 string
	clientCrt, clientK string
}

func newPKI(t *testing.T, nodes int) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	var err error
	if p.caCert, p.caKey, err = tlsconf.GenerateCA(tlsconf.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	if p.ca, _, err = tlsconf.WriteFiles(p.dir, "ca", p.caCert, p.caKey); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("n%d", i+1)
		crt, key, err := tlsconf.IssueNode(p.caCert, p.caKey, tlsconf.NodeCertOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := tlsconf.WriteFiles(p.dir, id, crt, key); err != nil {
			t.Fatal(err)
		}
	}
	crt, key, err := tlsconf.IssueClient(p.caCert, p.caKey, "worker", tlsconf.ClientCertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.clientCrt, p.clientK, err = tlsconf.WriteFiles(p.dir, "worker", crt, key); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pki) nodeArgs(i int) []string {
	id := fmt.Sprintf("n%d", i+1)
	return []string{"--tls-cert", filepath.Join(p.dir, id+".pem"), "--tls-key", filepath.Join(p.dir, id+"-key.pem"), "--tls-ca", p.ca, "--tls-client-auth", "require"}
}

// client returns an HTTPS client that trusts the CA and, with cert, presents the client
// certificate.
func (p *pki) client(t *testing.T, cert bool) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	raw, err := os.ReadFile(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(raw)
	cfg := &tls.Config{RootCAs: pool}
	if cert {
		kp, err := tls.LoadX509KeyPair(p.clientCrt, p.clientK)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// The happy path over TLS: three nodes with mutual TLS between them and client
// certificates required on the API; a lock taken through a follower (forwarded over mutual
// TLS), a waiter handed the lock on release, and a failover after kill -9 of the leader.
func TestBlackbox_TLSHappyPath(t *testing.T) {
	const n = 3
	k := newPKI(t, n)
	p := testcluster.NewProcesses(t, n)
	p.NodeArgs = k.nodeArgs
	p.Scheme = "https://"
	p.Client = k.client(t, true)
	p.StartAll()
	leader := p.WaitLeader(30 * time.Second)
	old := plain
	plain = p.Client
	defer func() { plain = old }()
	waitAllReady(t, p, n)

	follower := (leader + 1) % n
	g := do("PUT", p.URL(follower)+"/v1/locks/tls/a", `{"owner":"one","ttl_ms":60000}`)
	if g.status != 200 {
		t.Fatalf("acquire through a follower over TLS: %v", g)
	}
	waiter := make(chan answer, 1)
	go func() {
		waiter <- do("PUT", p.URL(follower)+"/v1/locks/tls/a", `{"owner":"two","ttl_ms":60000,"wait_ms":20000}`)
	}()
	clustertest.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool {
		st := do("GET", p.URL(leader)+"/v1/locks/tls/a", "")
		return st.status == 200 && st.body["waiters"] == float64(1)
	})
	if r := do("DELETE", p.URL(follower)+"/v1/locks/tls/a", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, g.body["lease_id"], g.body["token"])); r.status != 200 {
		t.Fatalf("release: %v", r)
	}
	w := <-waiter
	if w.status != 200 || w.body["token"].(float64) <= g.body["token"].(float64) {
		t.Fatalf("waiter: %v", w)
	}

	// Without a client certificate the API refuses the handshake.
	if _, err := k.client(t, false).Get(p.URL(leader) + "/v1/cluster"); err == nil {
		t.Fatal("an HTTPS request without a client certificate was served")
	}

	p.Kill(leader)
	clustertest.WaitFor(t, 20*time.Second, "a new leader over mutual TLS", func() bool {
		l := p.LeaderIndex()
		return l >= 0 && l != leader
	})
	l := p.LeaderIndex()
	st := do("GET", p.URL(l)+"/v1/locks/tls/a", "")
	if st.status != 200 || st.body["owner"] != "two" || st.body["token"] != w.body["token"] {
		t.Fatalf("after failover: %v, want held by two with token %v", st, w.body["token"])
	}
}

// SIGHUP makes a running node serve a rotated certificate, without a restart.
func TestBlackbox_TLSReloadOnSIGHUP(t *testing.T) {
	k := newPKI(t, 1)
	p := testcluster.NewProcesses(t, 1)
	p.NodeArgs = k.nodeArgs
	p.Scheme = "https://"
	p.Client = k.client(t, true)
	p.StartAll()
	p.WaitLeader(30 * time.Second)
	serial := func() string {
		c := k.client(t, true)
		resp, err := c.Get(p.URL(0) + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	crt, key, err := tlsconf.IssueNode(k.caCert, k.caKey, tlsconf.NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(k.dir, "n1.pem"), crt, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(k.dir, "n1-key.pem"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	p.Signal(0, syscall.SIGHUP)
	clustertest.WaitFor(t, 10*time.Second, "the rotated certificate to be served", func() bool { return serial() != before })
	if !strings.Contains(p.Log(0), "TLS certificate, key and CA reloaded") {
		t.Fatal("no reload line in the node's log")
	}
}
