package ledger_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/fencing/fencingtest"
	"github.com/raftlock/raftlock/ledger"
)

// testLedger is a ledger behind an httptest server.
type testLedger struct {
	t   *testing.T
	l   *ledger.Ledger
	db  *sql.DB
	srv *httptest.Server
}

// forEachBackend runs body as a subtest per SQL backend.
func forEachBackend(t *testing.T, body func(t *testing.T, b fencingtest.Backend)) {
	t.Helper()
	for _, b := range fencingtest.Backends() {
		t.Run(b.Name, func(t *testing.T) { body(t, b) })
	}
}

// testLogger writes to t.Log.
func testLogger(t *testing.T, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "ledger", Level: level, Output: tWriter{t}})
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// mustNewLedger starts a ledger on a fresh database of backend b.
func mustNewLedger(t *testing.T, b fencingtest.Backend, fenced bool) *testLedger {
	t.Helper()
	cfg := ledger.DefaultConfig()
	cfg.DB = b.Open(t)
	cfg.Dialect = b.Dialect
	cfg.Fenced = fenced
	cfg.Logger = testLogger(t, hclog.Warn)
	l, err := ledger.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(l.Handler())
	t.Cleanup(srv.Close) // before the database closes: cleanups run last-in first-out
	return &testLedger{t: t, l: l, db: cfg.DB, srv: srv}
}

// response is an answer: status and body.
type response struct {
	status int
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r response) errorDetail(t *testing.T) fencing.ErrorDetail {
	t.Helper()
	var body fencing.ErrorBody
	r.decode(t, &body)
	return body.Error
}

// do sends a request; token 0 means no Fencing-Token header.
func (tl *testLedger) do(method, path string, body any, token fencing.Token) response {
	tl.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			tl.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, tl.srv.URL+path, rd)
	if err != nil {
		tl.t.Fatal(err)
	}
	if token != 0 {
		fencing.SetTokenHeader(req.Header, token)
	}
	resp, err := tl.srv.Client().Do(req)
	if err != nil {
		tl.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tl.t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: raw}
}

// charge posts a charge.
func (tl *testLedger) charge(id, account string, amount int64, token fencing.Token) response {
	tl.t.Helper()
	return tl.do(http.MethodPost, "/v1/charges", ledger.ChargeRequest{ChargeID: id, Account: account, AmountCents: amount}, token)
}

// account reads an account, which must exist.
func (tl *testLedger) account(id string) ledger.Account {
	tl.t.Helper()
	r := tl.do(http.MethodGet, "/v1/accounts/"+id, nil, 0)
	if r.status != http.StatusOK {
		tl.t.Fatalf("GET account %s: %d %s", id, r.status, r.body)
	}
	var a ledger.Account
	r.decode(tl.t, &a)
	return a
}

// wantStatus fails unless r has the status.
func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
}
