package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
)

// testSecret is the ACL token the fake servers expect.
const testSecret = "acl-5ecre7-0123456789abcdef"

// runApp runs the command line in this process, with the ACL and TLS environment cleared
// unless env sets it, and returns its output and exit status.
func runApp(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	for _, k := range []string{"RAFTLOCK_ACL_TOKEN", "RAFTLOCK_ACL_TOKEN_FILE", "RAFTLOCK_TLS_CA", "RAFTLOCK_TLS_CERT", "RAFTLOCK_TLS_KEY", "RAFTLOCK_ENDPOINTS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errb
	app.ExitErrHandler = func(*cli.Context, error) {} // report, do not exit the test binary
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := app.RunContext(ctx, append([]string{"raftlock"}, args...))
	if err != nil {
		code = exitCode(err)
		errb.WriteString(err.Error() + "\n")
	}
	t.Logf("raftlock %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

// fakeACL is a fake node answering the ACL and membership routes as the contract says,
// for requests bearing testSecret; others get 401.
type fakeACL struct {
	mu     sync.Mutex
	auth   []string // Authorization header of each request
	bodies map[string]json.RawMessage
	// answer, when set, replaces every answer with this error code.
	answer string
}

func (f *fakeACL) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	body := func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies[r.Method+" "+r.URL.Path] = b
		f.mu.Unlock()
	}
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /v1/acl/bootstrap", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, api.ACLToken{AccessorID: "acc-boot", SecretID: "boot-secret-0123456789", Policies: []string{api.PolicyGlobalManagement}})
	})
	mux.HandleFunc("POST /v1/acl/tokens", func(w http.ResponseWriter, r *http.Request) {
		body(r)
		reply(w, 200, api.ACLToken{AccessorID: "acc-new", SecretID: "new-secret-0123456789", Description: "d", Policies: []string{"a", "b"}})
	})
	mux.HandleFunc("GET /v1/acl/tokens", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, api.ACLTokenList{Tokens: []api.ACLToken{{AccessorID: "acc-boot", Policies: []string{api.PolicyGlobalManagement}}, {AccessorID: "acc-new", Description: "d", Policies: []string{"a", "b"}}}})
	})
	mux.HandleFunc("DELETE /v1/acl/tokens/{acc}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]string{"revoked": r.PathValue("acc")})
	})
	mux.HandleFunc("GET /v1/acl/token/self", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, api.ACLToken{AccessorID: "acc-boot", Policies: []string{api.PolicyGlobalManagement}})
	})
	mux.HandleFunc("PUT /v1/acl/policies/{name}", func(w http.ResponseWriter, r *http.Request) {
		body(r)
		var req api.ACLPolicyRequest
		json.Unmarshal(f.bodies[r.Method+" "+r.URL.Path], &req)
		reply(w, 200, api.ACLPolicy{Name: r.PathValue("name"), Description: req.Description, Rules: req.Rules})
	})
	mux.HandleFunc("GET /v1/acl/policies", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, api.ACLPolicyList{Policies: []api.ACLPolicy{{Name: "workers", Rules: []api.ACLRule{{Prefix: "jobs/", Access: "lock"}, {Prefix: "", Access: "read"}}}}})
	})
	mux.HandleFunc("DELETE /v1/acl/policies/{name}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]string{"deleted": r.PathValue("name")})
	})
	mux.HandleFunc("POST /v1/cluster/nodes", func(w http.ResponseWriter, r *http.Request) {
		body(r)
		var req api.AddNodeRequest
		json.Unmarshal(f.bodies[r.Method+" "+r.URL.Path], &req)
		reply(w, 200, api.Node{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
	})
	mux.HandleFunc("DELETE /v1/cluster/nodes/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]string{"removed": r.PathValue("id")})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		f.mu.Lock()
		f.auth = append(f.auth, h)
		answer := f.answer
		f.mu.Unlock()
		if answer == "" && h != "Bearer "+testSecret && r.URL.Path != "/v1/acl/bootstrap" {
			answer = api.CodeUnauthenticated
		}
		if answer != "" {
			reply(w, api.Status(answer), api.Errorf(answer, "fake %s", answer).Body())
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (f *fakeACL) lastAuth() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.auth) == 0 {
		return "(no request)"
	}
	return f.auth[len(f.auth)-1]
}

func (f *fakeACL) body(key string) json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[key]
}

func (f *fakeACL) setAnswer(code string) {
	f.mu.Lock()
	f.answer = code
	f.mu.Unlock()
}

func newFakeACL(t *testing.T) (*fakeACL, string) {
	f := &fakeACL{bodies: map[string]json.RawMessage{}}
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// makePKI runs `raftlock tls ca` and `tls cert` for a node and a client in a new
// directory, and returns it.
func makePKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"tls", "ca", "--dir", dir, "--days", "30"},
		{"tls", "cert", "--node", "n1", "--ip", "10.0.0.1", "--ip", "10.0.0.2", "--dns", "n1.example.internal", "--dir", dir},
		{"tls", "cert", "--client", "worker", "--dir", dir},
	} {
		if _, _, code := runApp(t, nil, args...); code != 0 {
			t.Fatalf("raftlock %q: exit %d", args, code)
		}
	}
	return dir
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCLI_TLSCommands(t *testing.T) {
	dir := t.TempDir()
	out, _, code := runApp(t, nil, "tls", "ca", "--dir", dir, "--name", "test CA", "--days", "30")
	if code != 0 || !strings.Contains(out, filepath.Join(dir, "ca.pem")) || !strings.Contains(out, filepath.Join(dir, "ca-key.pem")) {
		t.Fatalf("tls ca: exit %d, %q", code, out)
	}
	out, _, code = runApp(t, nil, "tls", "cert", "--node", "n1", "--ip", "10.0.0.1", "--ip", "10.0.0.2", "--dns", "n1.example.internal", "--dir", dir)
	for _, want := range []string{"raftlock serve", "--tls-cert " + filepath.Join(dir, "n1.pem"), "--tls-key " + filepath.Join(dir, "n1-key.pem"), "--tls-ca " + filepath.Join(dir, "ca.pem")} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("tls cert --node: exit %d; output lacks %q:\n%s", code, want, out)
		}
	}
	out, _, code = runApp(t, nil, "tls", "cert", "--client", "worker", "--dir", dir)
	if code != 0 || !strings.Contains(out, filepath.Join(dir, "worker.pem")) || !strings.Contains(out, "--tls-key "+filepath.Join(dir, "worker-key.pem")) {
		t.Fatalf("tls cert --client: exit %d, %q", code, out)
	}

	for _, base := range []string{"ca", "n1", "worker"} {
		fi, err := os.Stat(filepath.Join(dir, base+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s-key.pem has mode %04o; want 0600", base, fi.Mode().Perm())
		}
	}
	ca := readCert(t, filepath.Join(dir, "ca.pem"))
	if !ca.IsCA || ca.Subject.CommonName != "test CA" {
		t.Fatalf("ca.pem: IsCA %t, CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	if d := time.Until(ca.NotAfter); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Errorf("CA valid for %v; want 30 days", d)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	node := readCert(t, filepath.Join(dir, "n1.pem"))
	if _, err := node.Verify(x509.VerifyOptions{Roots: roots, DNSName: "n1.example.internal", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("node certificate: %v", err)
	}
	if err := node.VerifyHostname("10.0.0.2"); err != nil {
		t.Fatalf("node certificate: %v", err)
	}
	worker := readCert(t, filepath.Join(dir, "worker.pem"))
	if _, err := worker.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	if _, err := worker.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Fatal("a client certificate verifies as a server's")
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem")); err != nil {
		t.Fatal(err)
	}

	// A second run refuses to overwrite, says why, and leaves the files as they were.
	before, _ := os.ReadFile(filepath.Join(dir, "n1-key.pem"))
	for _, args := range [][]string{
		{"tls", "ca", "--dir", dir},
		{"tls", "cert", "--node", "n1", "--dir", dir},
		{"tls", "cert", "--client", "worker", "--dir", dir},
	} {
		_, errOut, code := runApp(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, "already exists") {
			t.Errorf("second %q: exit %d, %q; want 1 and already exists", args, code, errOut)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "n1-key.pem")); !bytes.Equal(before, after) {
		t.Fatal("n1-key.pem was overwritten")
	}

	// Usage errors.
	for _, args := range [][]string{
		{"tls", "cert", "--dir", dir},
		{"tls", "cert", "--node", "n2", "--client", "c", "--dir", dir},
		{"tls", "cert", "--client", "c", "--ip", "10.0.0.1", "--dir", dir},
		{"tls", "cert", "--node", "n2", "--ip", "not-an-ip", "--dir", dir},
		{"tls", "cert", "--node", "n2", "--dir", t.TempDir()}, // no CA there
		{"tls", "ca", "--days", "-1", "--dir", t.TempDir()},
	} {
		if _, _, code := runApp(t, nil, args...); code != exitUsage {
			t.Errorf("%q: exit %d; want %d", args, code, exitUsage)
		}
	}
}

func TestCLI_ACLCommands(t *testing.T) {
	f, url := newFakeACL(t)
	env := map[string]string{"RAFTLOCK_ACL_TOKEN": testSecret, "RAFTLOCK_ENDPOINTS": url}

	out, _, code := runApp(t, nil, "acl", "bootstrap", "--endpoints", url)
	if code != 0 || !strings.Contains(out, "acc-boot") || !strings.Contains(out, "boot-secret-0123456789") || !strings.Contains(out, "Store the secret now") {
		t.Fatalf("acl bootstrap: exit %d, %q", code, out)
	}
	out, errOut, code := runApp(t, nil, "acl", "bootstrap", "--endpoints", url, "--json")
	var tok api.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.SecretID != "boot-secret-0123456789" || !strings.Contains(errOut, "Store the secret now") {
		t.Fatalf("acl bootstrap --json: exit %d, %q, %q", code, out, errOut)
	}

	out, _, code = runApp(t, env, "acl", "token", "create", "--policy", "a", "--policy", "b", "--description", "d")
	if code != 0 || !strings.Contains(out, "new-secret-0123456789") || !strings.Contains(out, "Store the secret now") {
		t.Fatalf("acl token create: exit %d, %q", code, out)
	}
	var treq api.ACLTokenRequest
	if err := json.Unmarshal(f.body("POST /v1/acl/tokens"), &treq); err != nil || !reflect.DeepEqual(treq, api.ACLTokenRequest{Description: "d", Policies: []string{"a", "b"}}) {
		t.Fatalf("token create sent %s", f.body("POST /v1/acl/tokens"))
	}
	if f.lastAuth() != "Bearer "+testSecret {
		t.Fatalf("Authorization %q", f.lastAuth())
	}
	if _, _, code := runApp(t, env, "acl", "token", "create"); code != exitUsage {
		t.Fatalf("token create without --policy: exit %d", code)
	}

	out, _, code = runApp(t, env, "acl", "token", "list")
	if code != 0 || !strings.Contains(out, "acc-new") || !strings.Contains(out, "a,b") {
		t.Fatalf("acl token list: exit %d, %q", code, out)
	}
	out, _, code = runApp(t, env, "acl", "token", "list", "--json")
	var tl api.ACLTokenList
	if code != 0 || json.Unmarshal([]byte(out), &tl) != nil || len(tl.Tokens) != 2 {
		t.Fatalf("acl token list --json: exit %d, %q", code, out)
	}
	out, _, code = runApp(t, env, "acl", "token", "revoke", "acc-new")
	if code != 0 || !strings.Contains(out, "revoked token acc-new") {
		t.Fatalf("acl token revoke: exit %d, %q", code, out)
	}
	out, _, code = runApp(t, env, "acl", "token", "self")
	if code != 0 || !strings.Contains(out, "acc-boot") || !strings.Contains(out, api.PolicyGlobalManagement) || strings.Contains(out, testSecret) {
		t.Fatalf("acl token self: exit %d, %q", code, out)
	}

	out, _, code = runApp(t, env, "acl", "policy", "create", "workers", "--rule", "jobs/=lock", "--rule", "=admin", "--rule", "a,b=c=read", "--description", "the workers")
	if code != 0 || !strings.Contains(out, "workers") {
		t.Fatalf("acl policy create: exit %d, %q", code, out)
	}
	var preq api.ACLPolicyRequest
	want := api.ACLPolicyRequest{Description: "the workers", Rules: []api.ACLRule{{Prefix: "jobs/", Access: "lock"}, {Prefix: "", Access: "admin"}, {Prefix: "a,b=c", Access: "read"}}}
	if err := json.Unmarshal(f.body("PUT /v1/acl/policies/workers"), &preq); err != nil || !reflect.DeepEqual(preq, want) {
		t.Fatalf("policy create sent %s", f.body("PUT /v1/acl/policies/workers"))
	}
	for _, args := range [][]string{
		{"acl", "policy", "create", "workers"},                          // no rule
		{"acl", "policy", "create", "workers", "--rule", "jobs/"},       // no access
		{"acl", "policy", "create", "workers", "--rule", "jobs/=write"}, // unknown access
		{"acl", "policy", "create", "--rule", "=read"},                  // no name
		{"acl", "policy", "create", "a/b", "--rule", "=read"},           // bad name
	} {
		if _, _, code := runApp(t, env, args...); code != exitUsage {
			t.Errorf("%q: exit %d; want %d", args, code, exitUsage)
		}
	}
	out, _, code = runApp(t, env, "acl", "policy", "list")
	if code != 0 || !strings.Contains(out, `"jobs/=lock" "=read"`) {
		t.Fatalf("acl policy list: exit %d, %q", code, out)
	}
	out, _, code = runApp(t, env, "acl", "policy", "list", "--json")
	var pl api.ACLPolicyList
	if code != 0 || json.Unmarshal([]byte(out), &pl) != nil || len(pl.Policies) != 1 {
		t.Fatalf("acl policy list --json: exit %d, %q", code, out)
	}
	out, _, code = runApp(t, env, "acl", "policy", "delete", "workers")
	if code != 0 || !strings.Contains(out, "deleted policy workers") {
		t.Fatalf("acl policy delete: exit %d, %q", code, out)
	}

	// Refusals: exit 1, a hint, never the secret.
	for code, hint := range map[string]string{
		api.CodeUnauthenticated:  "RAFTLOCK_ACL_TOKEN",
		api.CodePermissionDenied: "acl token self",
		api.CodeConflict:         "conflict",
	} {
		f.setAnswer(code)
		_, errOut, exit := runApp(t, env, "acl", "token", "list")
		if exit != 1 || !strings.Contains(errOut, hint) || strings.Contains(errOut, testSecret) {
			t.Errorf("%s: exit %d, %q; want 1 and %q", code, exit, errOut, hint)
		}
	}
}

// The token comes from $RAFTLOCK_ACL_TOKEN, --acl-token-file, $RAFTLOCK_ACL_TOKEN_FILE or
// --acl-token (with a warning); $RAFTLOCK_TOKEN, the fencing token, is not an ACL token.
func TestCLI_ACLTokenSources(t *testing.T) {
	f, url := newFakeACL(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, []byte(testSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		warn     string // in stderr
		wantAuth string
	}{
		{"env", map[string]string{"RAFTLOCK_ACL_TOKEN": testSecret}, nil, "", "Bearer " + testSecret},
		{"file flag", nil, []string{"--acl-token-file", file}, "", "Bearer " + testSecret},
		{"file env", map[string]string{"RAFTLOCK_ACL_TOKEN_FILE": file}, nil, "", "Bearer " + testSecret},
		{"flag beats env", map[string]string{"RAFTLOCK_ACL_TOKEN": "wrong-token-0123"}, []string{"--acl-token-file", file}, "", "Bearer " + testSecret},
		{"loose file", nil, []string{"--acl-token-file", loose}, "other users", "Bearer " + testSecret},
		{"argv", nil, []string{"--acl-token", testSecret}, "process list", "Bearer " + testSecret},
		{"fencing token is not an ACL token", map[string]string{"RAFTLOCK_TOKEN": "4711"}, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"acl", "token", "self", "--endpoints", url, "--timeout", "2s"}, tc.args...)
			_, errOut, code := runApp(t, tc.env, args...)
			if got := f.lastAuth(); got != tc.wantAuth {
				t.Fatalf("Authorization %q; want %q", got, tc.wantAuth)
			}
			if tc.wantAuth != "" && code != 0 {
				t.Fatalf("exit %d", code)
			}
			if tc.warn != "" && !strings.Contains(errOut, tc.warn) {
				t.Fatalf("stderr %q lacks the warning %q", errOut, tc.warn)
			}
			if tc.warn == "" && strings.Contains(errOut, "warning") {
				t.Fatalf("unexpected warning: %q", errOut)
			}
			if strings.Contains(errOut, testSecret) {
				t.Fatalf("stderr shows the token: %q", errOut)
			}
		})
	}
	for name, args := range map[string][]string{
		"both flags":   {"--acl-token", testSecret, "--acl-token-file", file},
		"missing file": {"--acl-token-file", filepath.Join(dir, "nope")},
		"empty file":   {"--acl-token-file", os.DevNull},
	} {
		_, errOut, code := runApp(t, nil, append([]string{"acl", "token", "self", "--endpoints", url}, args...)...)
		if code != exitUsage || strings.Contains(errOut, testSecret) {
			t.Errorf("%s: exit %d, %q; want %d", name, code, errOut, exitUsage)
		}
	}
}

// Client commands speak HTTPS with --tls-ca, --tls-cert and --tls-key (or their
// environment variables), with certificates made by `raftlock tls`.
func TestCLI_ClientTLS(t *testing.T) {
	dir := makePKI(t)
	f := &fakeACL{bodies: map[string]json.RawMessage{}}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, filepath.Join(dir, "ca.pem")))
	srv := httptest.NewUnstartedServer(f.handler(t))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()

	ca, crt, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "worker.pem"), filepath.Join(dir, "worker-key.pem")
	env := map[string]string{"RAFTLOCK_ACL_TOKEN": testSecret}
	out, _, code := runApp(t, env, "acl", "token", "self", "--endpoints", srv.URL, "--tls-ca", ca, "--tls-cert", crt, "--tls-key", key)
	if code != 0 || !strings.Contains(out, "acc-boot") || f.lastAuth() != "Bearer "+testSecret {
		t.Fatalf("over TLS with flags: exit %d, %q, auth %q", code, out, f.lastAuth())
	}
	env2 := map[string]string{"RAFTLOCK_ACL_TOKEN": testSecret, "RAFTLOCK_TLS_CA": ca, "RAFTLOCK_TLS_CERT": crt, "RAFTLOCK_TLS_KEY": key}
	// A bare host:port is https when TLS is on.
	if _, _, code := runApp(t, env2, "acl", "token", "self", "--endpoints", strings.TrimPrefix(srv.URL, "https://")); code != 0 {
		t.Fatalf("over TLS with the environment: exit %d", code)
	}
	// Without the client certificate the server refuses: exit 1 at once, with a hint.
	start := time.Now()
	_, errOut, code := runApp(t, env, "acl", "token", "self", "--endpoints", srv.URL, "--tls-ca", ca, "--timeout", "20s")
	if code != 1 || !strings.Contains(errOut, "--tls-cert") || time.Since(start) > 10*time.Second {
		t.Fatalf("without a client certificate: exit %d after %v, %q", code, time.Since(start), errOut)
	}
	// http:// with TLS on is refused; a half-given certificate is a usage error.
	if _, _, code := runApp(t, env2, "acl", "token", "self", "--endpoints", "http://127.0.0.1:1"); code != exitUsage {
		t.Fatalf("http:// endpoint with TLS: exit %d", code)
	}
	if _, _, code := runApp(t, env, "acl", "token", "self", "--endpoints", srv.URL, "--tls-ca", ca, "--tls-cert", crt); code != exitUsage {
		t.Fatalf("--tls-cert without --tls-key: exit %d", code)
	}
}

func TestCLI_ClusterAddRemove(t *testing.T) {
	f, url := newFakeACL(t)
	env := map[string]string{"RAFTLOCK_ACL_TOKEN": testSecret, "RAFTLOCK_ENDPOINTS": url}
	out, _, code := runApp(t, env, "cluster", "add", "n4", "--raft-addr", "10.0.0.4:8001", "--http-addr", "10.0.0.4:7001", "--replace")
	if code != 0 || !strings.Contains(out, "added n4") {
		t.Fatalf("cluster add: exit %d, %q", code, out)
	}
	var req api.AddNodeRequest
	if err := json.Unmarshal(f.body("POST /v1/cluster/nodes"), &req); err != nil || req != (api.AddNodeRequest{ID: "n4", RaftAddr: "10.0.0.4:8001", HTTPAddr: "10.0.0.4:7001", Replace: true}) {
		t.Fatalf("cluster add sent %s", f.body("POST /v1/cluster/nodes"))
	}
	out, _, code = runApp(t, env, "cluster", "remove", "n4", "--json")
	if code != 0 || !strings.Contains(out, `"removed": "n4"`) {
		t.Fatalf("cluster remove: exit %d, %q", code, out)
	}
	if _, _, code := runApp(t, env, "cluster", "add", "n4"); code != exitUsage {
		t.Fatalf("cluster add without --raft-addr: exit %d", code)
	}
	f.setAnswer(api.CodeConflict)
	_, errOut, code := runApp(t, env, "cluster", "add", "n4", "--raft-addr", "10.0.0.9:8001")
	if code != 1 || !strings.Contains(errOut, "--replace") {
		t.Fatalf("cluster add conflict: exit %d, %q", code, errOut)
	}
}
