package blackbox_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/tlsconf"
	"github.com/raftlock/raftlock/tlsconf/tlstest"
)

// pki is a development CA with a certificate per node, as `raftlock tls ca` and
// `raftlock tls cert` write them, and one client certificate ("worker").
type pki struct {
	*tlstest.CA
	worker tls.Certificate
}

func newPKI(t *testing.T, nodes int) *pki {
	t.Helper()
	ca := tlstest.NewCA(t, "")
	ca.WriteNodes(t, nodes, nil)
	return &pki{CA: ca, worker: ca.ClientKeyPair(t, "worker")}
}

// client returns an HTTPS client that trusts the CA and, with cert, presents the client
// certificate.
func (p *pki) client(t *testing.T, cert bool) *http.Client {
	t.Helper()
	var kp *tls.Certificate
	if cert {
		kp = &p.worker
	}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: p.ClientConfig(kp)}}
}

// The happy path over TLS: three nodes with mutual TLS between them and client
// certificates required on the API; a lock taken through a follower (forwarded over mutual
// TLS), a waiter handed the lock on release, and a failover after kill -9 of the leader.
func TestBlackbox_TLSHappyPath(t *testing.T) {
	const n = 3
	k := newPKI(t, n)
	p := testcluster.NewProcesses(t, n)
	p.NodeArgs = k.ServeFlags
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
	if g.Status != 200 {
		t.Fatalf("acquire through a follower over TLS: %v", g)
	}
	waiter := make(chan rawhttp.Answer, 1)
	go func() {
		waiter <- do("PUT", p.URL(follower)+"/v1/locks/tls/a", `{"owner":"two","ttl_ms":60000,"wait_ms":20000}`)
	}()
	testkit.WaitFor(t, 10*time.Second, "the waiter to queue", func() bool {
		st := do("GET", p.URL(leader)+"/v1/locks/tls/a", "")
		return st.Status == 200 && st.Body["waiters"] == float64(1)
	})
	if r := do("DELETE", p.URL(follower)+"/v1/locks/tls/a", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, g.Body["lease_id"], g.Body["token"])); r.Status != 200 {
		t.Fatalf("release: %v", r)
	}
	w := <-waiter
	if w.Status != 200 || w.Body["token"].(float64) <= g.Body["token"].(float64) {
		t.Fatalf("waiter: %v", w)
	}

	// Without a client certificate the API refuses the handshake.
	if _, err := k.client(t, false).Get(p.URL(leader) + "/v1/cluster"); err == nil {
		t.Fatal("an HTTPS request without a client certificate was served")
	}

	// With ACLs off, a version claim for n1 is n1's alone: a client certificate or
	// another node's certificate is refused (before, both were answered 200).
	for name, kp := range map[string]tls.Certificate{"a client certificate": k.worker, "n2's node certificate": k.NodeKeyPair(t, "n2")} {
		c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: k.ClientConfig(&kp)}}
		a := rawhttp.Client{HTTP: c}.Do("PUT", p.URL(leader)+"/v1/cluster/nodes/n1/version", `{"max_version":1}`)
		if a.Status != http.StatusForbidden || a.Code() != "permission_denied" {
			t.Fatalf("version claim for n1 with %s: %v, want 403 permission_denied", name, a)
		}
	}

	p.Kill(leader)
	testkit.WaitFor(t, 20*time.Second, "a new leader over mutual TLS", func() bool {
		l := p.LeaderIndex()
		return l >= 0 && l != leader
	})
	l := p.LeaderIndex()
	st := do("GET", p.URL(l)+"/v1/locks/tls/a", "")
	if st.Status != 200 || st.Body["owner"] != "two" || st.Body["token"] != w.Body["token"] {
		t.Fatalf("after failover: %v, want held by two with token %v", st, w.Body["token"])
	}
}

// SIGHUP makes a running node serve a rotated certificate, without a restart.
func TestBlackbox_TLSReloadOnSIGHUP(t *testing.T) {
	k := newPKI(t, 1)
	p := testcluster.NewProcesses(t, 1)
	p.NodeArgs = k.ServeFlags
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
	crt, key := k.IssueNode(t, tlsconf.NodeCertOptions{ID: "n1"})
	if err := os.WriteFile(filepath.Join(k.Dir, "n1.pem"), crt, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(k.Dir, "n1-key.pem"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	p.Signal(0, syscall.SIGHUP)
	testkit.WaitFor(t, 10*time.Second, "the rotated certificate to be served", func() bool { return serial() != before })
	if !strings.Contains(p.Log(0), "TLS certificate, key and CA reloaded") {
		t.Fatal("no reload line in the node's log")
	}
}
