package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewReloader_LoadErrors(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	n1, n2 := p.node(t, "n1"), p.node(t, "n2")
	foreign := other.node(t, "n1")
	client := p.client(t, "worker")

	expiredCert, expiredKey, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "old", Validity: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	expCert, expKey, err := WriteFiles(p.dir, "expired", expiredCert, expiredKey)
	if err != nil {
		t.Fatal(err)
	}
	garbageKey := filepath.Join(p.dir, "garbage-key.pem")
	if err := os.WriteFile(garbageKey, []byte("-----BEGIN PRIVATE KEY-----\nZ2FyYmFnZQ==\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(p.dir, "missing.pem")

	var keys [][]byte
	for _, f := range []Files{n1, n2, foreign, client} {
		keys = append(keys, mustRead(t, f.Key))
	}
	keys = append(keys, p.caKey, other.caKey, expiredKey)

	for _, tc := range []struct {
		name string
		f    Files
		want error
		says []string
	}{
		{"missing cert", Files{Cert: missing, Key: n1.Key, CA: p.caFile}, ErrReadFile, []string{"--tls-cert", missing}},
		{"missing key", Files{Cert: n1.Cert, Key: missing, CA: p.caFile}, ErrReadFile, []string{"--tls-key", missing}},
		{"missing CA", Files{Cert: n1.Cert, Key: n1.Key, CA: missing}, ErrReadFile, []string{"--tls-ca", missing}},
		{"CA file is not PEM", Files{Cert: n1.Cert, Key: n1.Key, CA: garbageKey}, ErrBadPEM, []string{"--tls-ca"}},
		{"garbage key", Files{Cert: n1.Cert, Key: garbageKey, CA: p.caFile}, ErrBadPEM, []string{"--tls-key", garbageKey}},
		{"key of another node", Files{Cert: n1.Cert, Key: n2.Key, CA: p.caFile}, ErrKeyMismatch, []string{n2.Key, n1.Cert}},
		{"cert of another CA", Files{Cert: foreign.Cert, Key: foreign.Key, CA: p.caFile}, ErrNotSignedByCA, []string{foreign.Cert, p.caFile}},
		{"expired cert", Files{Cert: expCert, Key: expKey, CA: p.caFile}, ErrExpired, []string{expCert, "expired at"}},
		{"client cert as node cert", Files{Cert: client.Cert, Key: client.Key, CA: p.caFile}, ErrNotNodeCert, []string{client.Cert, "raftlock://node/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReloader(tc.f, testLogger(t, nil))
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewReloader: %v, want %v", err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			assertNoKeyMaterial(t, err.Error(), keys...)
		})
	}
}

// startHTTPS serves r.ServerConfig on 127.0.0.1; the handler answers with the
// name in the verified client certificate, or "anonymous".
func startHTTPS(t *testing.T, r *Reloader) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			who := "anonymous"
			if len(req.TLS.VerifiedChains) > 0 {
				who, _ = ClientNameFromCert(req.TLS.VerifiedChains[0][0])
			}
			fmt.Fprint(w, who)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = srv.Serve(tls.NewListener(ln, r.ServerConfig())) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String() + "/"
}

// get calls url with cfg and returns the body, or the error.
func get(url string, cfg *tls.Config, h2 bool) (string, int, error) {
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: h2}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.ProtoMajor, err
}

func mustClientConfig(t *testing.T, f Files) *tls.Config {
	t.Helper()
	cfg, err := LoadClientConfig(f)
	if err != nil {
		t.Fatalf("LoadClientConfig: %v", err)
	}
	return cfg
}

// foreignClientConfig trusts the cluster CA but presents a certificate of
// another CA, as a client of some other cluster would.
func foreignClientConfig(t *testing.T, caFile string, foreign Files) *tls.Config {
	t.Helper()
	cfg := mustClientConfig(t, Files{CA: caFile})
	pair, err := tls.LoadX509KeyPair(foreign.Cert, foreign.Key)
	if err != nil {
		t.Fatal(err)
	}
	// Sent whatever CAs the server names: Go's client would otherwise
	// withhold a certificate the server's CA list does not match.
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	return cfg
}

func TestServerConfig_ClientAuth(t *testing.T) {
	p := mustNewPKI(t, "")
	other := mustNewPKI(t, "other CA")
	n1 := p.node(t, "n1")
	worker := p.client(t, "worker")
	stranger := other.client(t, "stranger")

	noCert := mustClientConfig(t, Files{CA: p.caFile})
	withCert := mustClientConfig(t, worker)
	foreign := foreignClientConfig(t, p.caFile, stranger)

	for _, tc := range []struct {
		mode                          string
		noCert, foreignCert, goodCert string // wanted body, or "refused"
	}{
		{ClientAuthRequire, "refused", "refused", "worker"},
		// none: no certificate needed, but one offered is verified (nodes identify
		// themselves with theirs on the API port); what request once did too.
		{ClientAuthNone, "anonymous", "refused", "worker"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := n1
			f.ClientAuth = tc.mode
			url := startHTTPS(t, mustNewReloader(t, f, nil))
			for _, c := range []struct {
				name string
				cfg  *tls.Config
				want string
			}{
				{"no certificate", noCert, tc.noCert},
				{"other CA's certificate", foreign, tc.foreignCert},
				{"client certificate", withCert, tc.goodCert},
			} {
				body, _, err := get(url, c.cfg.Clone(), false)
				switch {
				case c.want == "refused" && err == nil:
					t.Errorf("%s: accepted (%q), want refused", c.name, body)
				case c.want != "refused" && err != nil:
					t.Errorf("%s: %v, want %q", c.name, err, c.want)
				case c.want != "refused" && body != c.want:
					t.Errorf("%s: body %q, want %q", c.name, body, c.want)
				}
			}
		})
	}

	t.Run("server verified by host name and HTTP/2 offered", func(t *testing.T) {
		url := startHTTPS(t, mustNewReloader(t, n1, nil))
		_, proto, err := get(url, noCert.Clone(), true)
		if err != nil || proto != 2 {
			t.Errorf("HTTP/2 request: proto %d, %v; want HTTP/2", proto, err)
		}
		_, _, err = get(url, mustClientConfig(t, Files{CA: other.caFile}), false)
		if err == nil {
			t.Error("a client trusting another CA accepted the server")
		}
	})
}

// serialOf dials addr with cfg and returns the serial of the server's
// certificate.
func serialOf(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// serveReloading starts an HTTPS server on a reloader of p's node n1 whose log goes to a
// sink, for tests that rotate n1's files under it. It returns n1's files, the reloader,
// the sink, the server's address and a client config that trusts p's CA.
func serveReloading(t *testing.T, p *testPKI) (Files, *Reloader, *logSink, string, *tls.Config) {
	t.Helper()
	n1 := p.node(t, "n1")
	sink := &logSink{}
	r := mustNewReloader(t, n1, testLogger(t, sink))
	url := startHTTPS(t, r)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/")
	return n1, r, sink, addr, mustClientConfig(t, Files{CA: p.caFile})
}

func TestReloader_Reload(t *testing.T) {
	p := mustNewPKI(t, "")
	n1, r, sink, addr, client := serveReloading(t, p)

	before := serialOf(t, addr, client)
	if before.Cmp(r.Certificate().SerialNumber) != 0 {
		t.Fatalf("server presents serial %x, reloader holds %x", before, r.Certificate().SerialNumber)
	}
	if r.NodeID() != "n1" {
		t.Errorf("NodeID = %q, want n1", r.NodeID())
	}

	// Rotate: a new certificate and key for the same node, then Reload.
	certPEM, keyPEM, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	newSerial := mustParseCert(t, certPEM).SerialNumber
	replaceFile(t, n1.Cert, certPEM)
	replaceFile(t, n1.Key, keyPEM)
	if err := r.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := serialOf(t, addr, client); got.Cmp(newSerial) != 0 || got.Cmp(before) == 0 {
		t.Fatalf("after Reload the server presents serial %x, want the new %x", got, newSerial)
	}

	// A failed reload keeps the current certificate and says why.
	oldKey := keyPEM
	replaceFile(t, n1.Key, []byte("-----BEGIN PRIVATE KEY-----\nZ2FyYmFnZQ==\n-----END PRIVATE KEY-----\n"))
	if err := r.Reload(); !errors.Is(err, ErrBadPEM) {
		t.Fatalf("Reload with a garbage key: %v, want ErrBadPEM", err)
	}
	if got := serialOf(t, addr, client); got.Cmp(newSerial) != 0 {
		t.Fatalf("after a failed Reload the server presents %x, want the kept %x", got, newSerial)
	}

	// A certificate rotated without its key fails as a whole, too.
	certPEM2, keyPEM2, err := IssueNode(p.caCert, p.caKey, NodeCertOptions{ID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, n1.Key, oldKey)
	replaceFile(t, n1.Cert, certPEM2)
	if err := r.Reload(); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Reload with a mismatched key: %v, want ErrKeyMismatch", err)
	}
	if got := r.Certificate().SerialNumber; got.Cmp(newSerial) != 0 {
		t.Fatalf("after a failed Reload the reloader holds %x, want %x", got, newSerial)
	}

	logs := sink.String()
	if !strings.Contains(logs, "TLS reload failed") {
		t.Errorf("failed reload not logged:\n%s", logs)
	}
	assertNoKeyMaterial(t, logs, keyPEM, keyPEM2, oldKey, mustRead(t, p.caFile))
}

func TestReloader_ClientConfig(t *testing.T) {
	p := mustNewPKI(t, "")
	n1 := p.node(t, "n1")
	n1.ClientAuth = ClientAuthRequire
	url := startHTTPS(t, mustNewReloader(t, n1, nil))
	// n2 calls n1's API with its node certificate, as forwarding might.
	n2 := mustNewReloader(t, p.node(t, "n2"), nil)
	body, _, err := get(url, n2.ClientConfig(), false)
	if err != nil {
		t.Fatalf("node as API client: %v", err)
	}
	if body != "" { // a node certificate carries no client name
		t.Errorf("body %q, want the empty client name of a node certificate", body)
	}
}
