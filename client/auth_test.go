package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// fakeSecret is an ACL token's secret ID as the tests send it.
const fakeSecret = "5ecre7-70ken-d0-n07-l0g-0123456789ab"

// headerRecorder answers every request with h after noting its Authorization header.
type headerRecorder struct {
	mu   sync.Mutex
	seen []string // "METHOD PATH: header"
}

func (hr *headerRecorder) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vals := r.Header.Values("Authorization")
		hr.mu.Lock()
		hr.seen = append(hr.seen, r.Method+" "+r.URL.Path+": "+strings.Join(vals, " | "))
		hr.mu.Unlock()
		h(w, r)
	}
}

func (hr *headerRecorder) all() []string {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	return append([]string(nil), hr.seen...)
}

// anyRoute answers each API call a test makes with a plausible body.
func anyRoute(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v1/cluster":
		clusterOK(w, r)
	case strings.HasPrefix(r.URL.Path, "/v1/locks/") && r.Method == http.MethodPut:
		writeJSON(w, http.StatusOK, api.Grant{Name: "x", Token: 9, LeaseID: fakeLeaseID, TTLMs: 10000})
	case strings.HasPrefix(r.URL.Path, "/v1/locks/") && r.Method == http.MethodDelete:
		writeJSON(w, http.StatusOK, api.ReleaseResult{Name: "x", Released: true})
	case r.URL.Path == "/v1/leases/revoke":
		writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: fakeLeaseID, Released: []string{}})
	case strings.HasPrefix(r.URL.Path, "/v1/leases"):
		writeJSON(w, http.StatusOK, api.Lease{LeaseID: fakeLeaseID, TTLMs: 10000})
	case r.URL.Path == "/v1/acl/token/self":
		writeJSON(w, http.StatusOK, api.ACLToken{AccessorID: "acc-1", Policies: []string{"p"}})
	default:
		writeAPIError(w, api.CodeNotFound)
	}
}

// Every request, whatever its route, carries the token exactly as "Bearer <secret>".
func TestClient_TokenSentAsBearer(t *testing.T) {
	var hr headerRecorder
	url, _ := fakeNode(t, hr.wrap(anyRoute))
	c := newClient(t, []string{url}, client.WithToken(" "+fakeSecret+"\n"))
	ctx := ctxFor(t, 10*time.Second)
	calls := []func() error{
		func() error { _, err := c.Cluster(ctx); return err },
		func() error { _, err := c.Acquire(ctx, "x", client.AcquireOptions{}); return err },
		func() error { return c.Release(ctx, "x", fakeLeaseID, 9) },
		func() error { _, err := c.CreateLease(ctx, 0); return err },
		func() error { _, err := c.KeepAlive(ctx, fakeLeaseID); return err },
		func() error { _, err := c.GetLease(ctx, fakeLeaseID); return err },
		func() error { _, err := c.Revoke(ctx, fakeLeaseID); return err },
		func() error { _, err := c.ACLTokenSelf(ctx); return err },
	}
	for i, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	seen := hr.all()
	if len(seen) != len(calls) {
		t.Fatalf("%d requests; want %d: %q", len(seen), len(calls), seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, ": Bearer "+fakeSecret) {
			t.Errorf("request %q; want exactly one Authorization: Bearer <secret>", s)
		}
	}

	// Without WithToken, no Authorization header at all.
	var hr2 headerRecorder
	url2, _ := fakeNode(t, hr2.wrap(anyRoute))
	c2 := newClient(t, []string{url2})
	if _, err := c2.Cluster(ctx); err != nil {
		t.Fatal(err)
	}
	if s := hr2.all(); len(s) != 1 || !strings.HasSuffix(s[0], ": ") {
		t.Fatalf("requests without a token: %q", s)
	}
}

func TestClient_TokenWithControlCharactersRefused(t *testing.T) {
	_, err := client.New([]string{"127.0.0.1:1"}, client.WithToken("abc\r\nX-Evil: 1"+fakeSecret))
	if err == nil || strings.Contains(err.Error(), fakeSecret) {
		t.Fatalf("New = %v; want an error that does not show the token", err)
	}
}

// 401, 403 and 409 are definite answers: returned at once, as their named errors, never
// tried on another endpoint.
func TestClient_AuthErrorsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		code string
		want error
	}{
		{api.CodeUnauthenticated, client.ErrUnauthenticated},
		{api.CodePermissionDenied, client.ErrPermissionDenied},
		{api.CodeConflict, client.ErrConflict},
	} {
		t.Run(tc.code, func(t *testing.T) {
			a, hitsA := fakeNode(t, func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, tc.code) })
			b, hitsB := fakeNode(t, anyRoute)
			c := newClient(t, []string{a, b}, client.WithToken(fakeSecret))
			ctx := ctxFor(t, 10*time.Second)
			for name, call := range map[string]func() error{
				"cluster":   func() error { _, err := c.Cluster(ctx); return err },
				"keepalive": func() error { _, err := c.KeepAlive(ctx, fakeLeaseID); return err },
				"bootstrap": func() error { _, err := c.ACLBootstrap(ctx); return err },
				"add node": func() error {
					_, err := c.AddNode(ctx, api.AddNodeRequest{ID: "n4", RaftAddr: "10.0.0.4:8001", HTTPAddr: "10.0.0.4:7001"})
					return err
				},
			} {
				before := hitsA.Load()
				err := call()
				if !errors.Is(err, tc.want) || !errors.Is(err, &api.Error{Code: tc.code}) {
					t.Fatalf("%s: err = %v; want %v", name, err, tc.want)
				}
				if n := hitsA.Load() - before; n != 1 {
					t.Fatalf("%s: %d attempts on the answering endpoint; want 1", name, n)
				}
			}
			if hitsB.Load() != 0 {
				t.Fatalf("a %s answer was retried on another endpoint", tc.code)
			}
		})
	}
	// A proxy's bare 401 or 403, without the API's JSON, maps the same way.
	a, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "go away", http.StatusForbidden) })
	if _, err := newClient(t, []string{a}).Cluster(ctxFor(t, 5*time.Second)); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("bare 403: err = %v; want ErrPermissionDenied", err)
	}
}

// The ACL token and a lease ID appear in no error text and no log line, even when the
// server echoes the request back in its answers, and not when the client is printed.
func TestClient_SecretsNotInErrorsOrLogs(t *testing.T) {
	echo := func(status int, jsonBody bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			msg := fmt.Sprintf("you sent %s %s with %q and %s", r.Method, r.URL, r.Header.Get("Authorization"), body)
			if jsonBody {
				writeJSON(w, status, api.ErrorBody{Error: api.ErrorDetail{Code: codeFor(status), Message: msg}})
				return
			}
			http.Error(w, msg, status)
		}
	}
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})
	var texts []string
	for _, h := range []http.HandlerFunc{
		echo(http.StatusUnauthorized, true),
		echo(http.StatusForbidden, true),
		echo(http.StatusInternalServerError, false),
		echo(http.StatusTeapot, false),
		echo(http.StatusNotFound, true), // falls back to the old route: the ID in the URL, echoed
		echo(http.StatusServiceUnavailable, true),
	} {
		url, _ := fakeNode(t, h)
		c := newClient(t, []string{url}, client.WithToken(fakeSecret), client.WithLogger(logger),
			client.WithRetryBackoff(5*time.Millisecond, 10*time.Millisecond))
		texts = append(texts, fmt.Sprintf("%v %+v %#v", c, c, c))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		for _, call := range []func() error{
			func() error { _, err := c.KeepAlive(ctx, fakeLeaseID); return err },
			func() error { _, err := c.GetLease(ctx, fakeLeaseID); return err },
			func() error { _, err := c.Revoke(ctx, fakeLeaseID); return err },
			func() error { return c.Release(ctx, "x", fakeLeaseID, 3) },
			func() error {
				_, err := c.Acquire(ctx, "x", client.AcquireOptions{LeaseID: fakeLeaseID})
				return err
			},
			func() error { _, err := c.ACLTokenSelf(ctx); return err },
		} {
			err := call()
			if err == nil {
				t.Fatal("a call to a failing server succeeded")
			}
			texts = append(texts, err.Error(), fmt.Sprintf("%+v", err))
			var ae *api.Error
			if errors.As(err, &ae) {
				texts = append(texts, ae.Message)
			}
		}
		cancel()
	}
	// A closed server: the connection error of the old route's URL.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	c := newClient(t, []string{dead.URL}, client.WithToken(fakeSecret), client.WithLogger(logger))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.GetLease(ctx, fakeLeaseID); err != nil {
		texts = append(texts, err.Error())
	}
	texts = append(texts, logs.String())
	for _, s := range texts {
		if strings.Contains(s, fakeSecret) || strings.Contains(s, fakeLeaseID) {
			t.Fatalf("a secret shows in %q", s)
		}
	}
	if !strings.Contains(logs.String(), "old route") {
		t.Log("note: no fallback was logged")
	}
}

func codeFor(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return api.CodeUnauthenticated
	case http.StatusForbidden:
		return api.CodePermissionDenied
	case http.StatusNotFound:
		return api.CodeNotFound
	case http.StatusServiceUnavailable:
		return api.CodeNoLeader
	}
	return api.CodeInternal
}

// A token sent over plain HTTP is worth a warning; the warning does not show it.
func TestClient_TokenOverPlainHTTPWarns(t *testing.T) {
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	if _, err := client.New([]string{"http://127.0.0.1:1"}, client.WithToken(fakeSecret), client.WithLogger(logger)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "plain HTTP") || strings.Contains(logs.String(), fakeSecret) {
		t.Fatalf("log = %q", logs.String())
	}
}

// ACLBootstrap and ACLTokenCreate are not repeated once an attempt may have been applied
// (a second success would mint a secret nobody sees), but are when nothing was applied.
func TestClient_MintingCallsNotRetriedAfterUnknownOutcome(t *testing.T) {
	url, calls := mintingNode(t, api.CodeUnknownOutcome)
	c := newClient(t, []string{url}, client.WithRetryBackoff(time.Millisecond, 5*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	if _, err := c.ACLBootstrap(ctx); !errors.Is(err, client.ErrUnknownOutcome) || calls.Load() != 1 {
		t.Fatalf("bootstrap after unknown_outcome: %v after %d attempts; want ErrUnknownOutcome after 1", err, calls.Load())
	}
	calls.Store(0)
	if _, err := c.ACLTokenCreate(ctx, api.ACLTokenRequest{Policies: []string{"p"}}); !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("token create after unknown_outcome: %v; want ErrUnknownOutcome", err)
	}

	// no_leader: certainly not applied, so retried.
	url2, _ := mintingNode(t, api.CodeNoLeader)
	c2 := newClient(t, []string{url2}, client.WithRetryBackoff(time.Millisecond, 5*time.Millisecond))
	tok, err := c2.ACLBootstrap(ctx)
	if err != nil || tok.SecretID != fakeSecret {
		t.Fatalf("bootstrap after no_leader = %+v, %v", tok, err)
	}
	// A connection that was never made is retried too.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	c3 := newClient(t, []string{dead.URL, url2})
	if _, err := c3.ACLBootstrap(ctx); err != nil {
		t.Fatalf("bootstrap with a dead first endpoint: %v", err)
	}
}

// mintingNode is a node that answers its first call, and the first after calls is set to
// zero, with the API error code, and every other call with a minted token; calls counts them.
func mintingNode(t *testing.T, code string) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	url, _ = fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			writeAPIError(w, code)
			return
		}
		writeJSON(w, http.StatusOK, api.ACLToken{AccessorID: "acc", SecretID: fakeSecret, Policies: []string{api.PolicyGlobalManagement}})
	})
	return url, calls
}

// decodeJSON reads r's body into v or fails the request.
func decodeJSON(t *testing.T, r *http.Request, v any) {
	t.Helper()
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s %s: body: %v", r.Method, r.URL.Path, err)
	}
}
