package client_test

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// The ACL and membership calls use the contract's methods, paths and bodies, and decode
// its answers.
func TestClient_ACLAndMembershipCalls(t *testing.T) {
	mux := http.NewServeMux()
	policy := api.ACLPolicy{Name: "workers", Description: "d", Rules: []api.ACLRule{{Prefix: "jobs/", Access: api.AccessLock}, {Prefix: "", Access: api.AccessRead}}}
	token := api.ACLToken{AccessorID: "acc-2", SecretID: "sec-2", Description: "w", Policies: []string{"workers"}}
	mux.HandleFunc("POST /v1/acl/bootstrap", func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > 0 {
			t.Errorf("bootstrap sent a body")
		}
		writeJSON(w, http.StatusOK, api.ACLToken{AccessorID: "acc-1", SecretID: "sec-1", Policies: []string{api.PolicyGlobalManagement}})
	})
	mux.HandleFunc("PUT /v1/acl/policies/{name}", func(w http.ResponseWriter, r *http.Request) {
		var req api.ACLPolicyRequest
		decodeJSON(t, r, &req)
		if r.PathValue("name") != "workers" || !reflect.DeepEqual(req.Rules, policy.Rules) || req.Description != "d" {
			t.Errorf("policy set: %s %+v", r.PathValue("name"), req)
		}
		writeJSON(w, http.StatusOK, api.ACLPolicy{Name: r.PathValue("name"), Description: req.Description, Rules: req.Rules})
	})
	mux.HandleFunc("GET /v1/acl/policies", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.ACLPolicyList{Policies: []api.ACLPolicy{policy}})
	})
	mux.HandleFunc("DELETE /v1/acl/policies/{name}", deletes("name", "workers", "deleted"))
	mux.HandleFunc("POST /v1/acl/tokens", func(w http.ResponseWriter, r *http.Request) {
		var req api.ACLTokenRequest
		decodeJSON(t, r, &req)
		if !reflect.DeepEqual(req.Policies, []string{"workers"}) || req.Description != "w" {
			t.Errorf("token create: %+v", req)
		}
		writeJSON(w, http.StatusOK, token)
	})
	mux.HandleFunc("GET /v1/acl/tokens", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.ACLTokenList{Tokens: []api.ACLToken{{AccessorID: "acc-2", Policies: []string{"workers"}}}})
	})
	mux.HandleFunc("DELETE /v1/acl/tokens/{acc}", deletes("acc", "acc-2", "revoked"))
	mux.HandleFunc("GET /v1/acl/token/self", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.ACLToken{AccessorID: "acc-1", Policies: []string{api.PolicyGlobalManagement}})
	})
	mux.HandleFunc("POST /v1/cluster/nodes", func(w http.ResponseWriter, r *http.Request) {
		var req api.AddNodeRequest
		decodeJSON(t, r, &req)
		if req.ID != "n4" || !req.Replace {
			t.Errorf("add node: %+v", req)
		}
		writeJSON(w, http.StatusOK, api.Node{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
	})
	mux.HandleFunc("DELETE /v1/cluster/nodes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "n4" {
			writeAPIError(w, api.CodeNotFound)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"removed": "n4"})
	})
	url, _ := fakeNode(t, mux.ServeHTTP)
	c := newClient(t, []string{url}, client.WithToken(fakeSecret))
	ctx := ctxFor(t, 10*time.Second)

	if tok, err := c.ACLBootstrap(ctx); err != nil || tok.SecretID != "sec-1" {
		t.Fatalf("ACLBootstrap = %+v, %v", tok, err)
	}
	if p, err := c.ACLPolicySet(ctx, "workers", api.ACLPolicyRequest{Description: "d", Rules: policy.Rules}); err != nil || !reflect.DeepEqual(p, policy) {
		t.Fatalf("ACLPolicySet = %+v, %v", p, err)
	}
	if ps, err := c.ACLPolicyList(ctx); err != nil || len(ps) != 1 || ps[0].Name != "workers" {
		t.Fatalf("ACLPolicyList = %+v, %v", ps, err)
	}
	if err := c.ACLPolicyDelete(ctx, "workers"); err != nil {
		t.Fatal(err)
	}
	if err := c.ACLPolicyDelete(ctx, "other"); !errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
		t.Fatalf("deleting a missing policy: %v; want not_found", err)
	}
	if tok, err := c.ACLTokenCreate(ctx, api.ACLTokenRequest{Description: "w", Policies: []string{"workers"}}); err != nil || !reflect.DeepEqual(tok, token) {
		t.Fatalf("ACLTokenCreate = %+v, %v", tok, err)
	}
	if ts, err := c.ACLTokenList(ctx); err != nil || len(ts) != 1 || ts[0].SecretID != "" {
		t.Fatalf("ACLTokenList = %+v, %v", ts, err)
	}
	if err := c.ACLTokenRevoke(ctx, "acc-2"); err != nil {
		t.Fatal(err)
	}
	if tok, err := c.ACLTokenSelf(ctx); err != nil || tok.AccessorID != "acc-1" {
		t.Fatalf("ACLTokenSelf = %+v, %v", tok, err)
	}
	if n, err := c.AddNode(ctx, api.AddNodeRequest{ID: "n4", RaftAddr: "10.0.0.4:8001", HTTPAddr: "10.0.0.4:7001", Replace: true}); err != nil || !n.Voter {
		t.Fatalf("AddNode = %+v, %v", n, err)
	}
	if err := c.RemoveNode(ctx, "n4"); err != nil {
		t.Fatal(err)
	}

	// Checked before any request.
	for name, err := range map[string]error{
		"bad policy name": func() error { _, err := c.ACLPolicySet(ctx, "a/b", api.ACLPolicyRequest{}); return err }(),
		"bad access": func() error {
			_, err := c.ACLPolicySet(ctx, "p", api.ACLPolicyRequest{Rules: []api.ACLRule{{Prefix: "x", Access: "write"}}})
			return err
		}(),
		"no policies": func() error { _, err := c.ACLTokenCreate(ctx, api.ACLTokenRequest{}); return err }(),
		"no accessor": c.ACLTokenRevoke(ctx, ""),
		"no node ID":  c.RemoveNode(ctx, ""),
	} {
		if !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%s: err = %v; want ErrInvalid", name, err)
		}
	}
}

// TLS: the client verifies the server against the CA file, offers its client
// certificate, and sends the token inside the TLS connection.
func TestClient_TLS(t *testing.T) {
	p := newPKI(t)
	var hr headerRecorder
	var peer string
	srv := fakeTLSNode(t, p, true, hr.wrap(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			peer = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		clusterOK(w, r)
	}))
	cfg, err := client.TLSFromFiles(p.CertFile, p.worker.Cert, p.worker.Key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 10*time.Second)
	hostPort := strings.TrimPrefix(srv.URL, "https://")
	// A bare host:port means https once TLS is configured.
	c := newClient(t, []string{hostPort}, client.WithTLS(cfg), client.WithToken(fakeSecret))
	if c.Endpoints()[0] != srv.URL {
		t.Fatalf("endpoint %q; want %q", c.Endpoints()[0], srv.URL)
	}
	if _, err := c.Cluster(ctx); err != nil {
		t.Fatal(err)
	}
	if peer != "worker" {
		t.Fatalf("the server saw client certificate %q; want worker", peer)
	}
	if s := hr.all(); len(s) != 1 || !strings.HasSuffix(s[0], ": Bearer "+fakeSecret) {
		t.Fatalf("requests %q", s)
	}

	// Plain http:// endpoints are refused when TLS is configured.
	if _, err := client.New([]string{"http://" + hostPort}, client.WithTLS(cfg)); err == nil {
		t.Fatal("New accepted an http:// endpoint with TLS configured")
	}
	if _, err := client.New([]string{srv.URL}, client.WithTLS(cfg), client.WithHTTPClient(&http.Client{})); err == nil {
		t.Fatal("New accepted WithTLS with WithHTTPClient")
	}

	// Handshake failures are not waited out: the client gives up after one round.
	for name, files := range map[string][3]string{
		"no client certificate": {p.CertFile, "", ""},
		"another CA":            {otherCA(t), p.worker.Cert, p.worker.Key},
	} {
		cfg, err := client.TLSFromFiles(files[0], files[1], files[2])
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, []string{srv.URL}, client.WithTLS(cfg), client.WithToken(fakeSecret))
		start := time.Now()
		_, err = c.Cluster(ctxFor(t, 20*time.Second))
		if !errors.Is(err, client.ErrTLS) || strings.Contains(err.Error(), fakeSecret) {
			t.Fatalf("%s: err = %v; want ErrTLS", name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: gave up after %v", name, d)
		}
	}
}

func TestTLSFromFiles_Errors(t *testing.T) {
	p := newPKI(t)
	for name, files := range map[string][3]string{
		"missing CA":       {p.Dir + "/nope.pem", "", ""},
		"CA not PEM":       {p.Dir + "/n1-key.pem", "", ""},
		"cert without key": {p.CertFile, p.worker.Cert, ""},
		"key without cert": {p.CertFile, "", p.worker.Key},
		"mismatched key":   {p.CertFile, p.worker.Cert, p.node.Key},
	} {
		_, err := client.TLSFromFiles(files[0], files[1], files[2])
		if !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%s: err = %v; want ErrInvalid", name, err)
			continue
		}
		if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), string(p.nodeKey[40:80])) {
			t.Errorf("%s: the error shows key material: %v", name, err)
		}
	}
	// CA "" means the system's roots.
	cfg, err := client.TLSFromFiles("", "", "")
	if err != nil || cfg.RootCAs != nil {
		t.Fatalf("TLSFromFiles without files = %+v, %v", cfg, err)
	}
}

// deletes is a fake DELETE handler that knows one object, the path value key equal to
// want: it answers {field: want} for that one and not_found for any other.
func deletes(key, want, field string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue(key) != want {
			writeAPIError(w, api.CodeNotFound)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{field: want})
	}
}
