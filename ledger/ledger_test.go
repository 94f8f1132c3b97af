package ledger_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/fencing/fencingtest"
	"github.com/raftlock/raftlock/ledger"
)

const opening = ledger.DefaultOpeningBalanceCents

func TestLedger_Charge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		r := tl.charge("c1", "alice", 2500, 7)
		wantStatus(t, r, http.StatusCreated)
		var got map[string]any
		r.decode(t, &got)
		want := map[string]any{"charge_id": "c1", "account": "alice", "amount_cents": 2500.0, "token": 7.0,
			"balance_cents": float64(opening - 2500)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answer = %v, want exactly %v", got, want)
		}

		wantStatus(t, tl.charge("c2", "alice", 500, 7), http.StatusCreated)
		a := tl.account("alice")
		if a.BalanceCents != opening-3000 || a.FenceToken != 7 || len(a.Charges) != 2 {
			t.Fatalf("account = %+v", a)
		}
		if c := a.Charges[1]; c.ChargeID != "c2" || c.AmountCents != 500 || c.Token != 7 ||
			c.BalanceCents != opening-3000 || c.CreatedAt == nil {
			t.Fatalf("second charge = %+v", c)
		}
	})
}

// TestLedger_Replay: a known charge_id is answered from its record with "replayed": true and
// the first answer's balance, and nothing is debited again.
func TestLedger_Replay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		var first, again ledger.Charge
		r := tl.charge("pay-1", "bob", 1000, 3)
		wantStatus(t, r, http.StatusCreated)
		r.decode(t, &first)
		wantStatus(t, tl.charge("pay-2", "bob", 1, 4), http.StatusCreated)

		r = tl.charge("pay-1", "bob", 1000, 4) // a retry by the next holder
		wantStatus(t, r, http.StatusOK)
		r.decode(t, &again)
		first.Replayed = true
		if again != first {
			t.Fatalf("replay = %+v, want %+v", again, first)
		}
		if a := tl.account("bob"); a.BalanceCents != opening-1001 || len(a.Charges) != 2 {
			t.Fatalf("account after replay = %+v", a)
		}

		r = tl.charge("pay-1", "bob", 999, 4)
		wantStatus(t, r, http.StatusConflict)
		if e := r.errorDetail(t); e.Code != ledger.CodeChargeConflict {
			t.Fatalf("error = %+v", e)
		}
		wantStatus(t, tl.charge("pay-1", "carol", 1000, 4), http.StatusConflict)
		if a := tl.account("bob"); a.BalanceCents != opening-1001 || len(a.Charges) != 2 {
			t.Fatalf("account after conflicts = %+v", a)
		}
	})
}

// TestLedger_StaleRefused: a write with a token below the account's fence is refused with
// 409 stale_token naming both tokens, and the balance, the charges and the fence are unchanged.
func TestLedger_StaleRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		wantStatus(t, tl.charge("new-holder", "acct", 3000, 34), http.StatusCreated)
		before := tl.account("acct")

		r := tl.charge("old-holder", "acct", 3000, 33)
		wantStatus(t, r, http.StatusConflict)
		e := r.errorDetail(t)
		if e.Code != fencing.CodeStaleToken || !strings.Contains(e.Message, "33") || !strings.Contains(e.Message, "34") {
			t.Fatalf("error = %+v", e)
		}
		after := tl.account("acct")
		if after.BalanceCents != before.BalanceCents || after.FenceToken != 34 || len(after.Charges) != 1 {
			t.Fatalf("account changed by a refused write: before %+v after %+v", before, after)
		}
		// Straight from the tables: the refused charge_id was not recorded, and the
		// account row holds the same balance.
		var n int
		var balance int64
		if err := tl.db.QueryRow(b.Dialect.Rebind(`SELECT COUNT(*) FROM charges WHERE charge_id = ?`), "old-holder").Scan(&n); err != nil || n != 0 {
			t.Fatalf("refused charge rows = %d, %v", n, err)
		}
		if err := tl.db.QueryRow(`SELECT COUNT(*) FROM charges`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("charge rows = %d, %v", n, err)
		}
		if err := tl.db.QueryRow(b.Dialect.Rebind(`SELECT balance_cents FROM accounts WHERE id = ?`), "acct").Scan(&balance); err != nil || balance != before.BalanceCents {
			t.Fatalf("balance row = %d, %v", balance, err)
		}
		// Another account has its own fence.
		wantStatus(t, tl.charge("other", "acct2", 1, 2), http.StatusCreated)
		// A replay with a stale token is refused too: the fence is checked first.
		wantStatus(t, tl.charge("new-holder", "acct", 3000, 33), http.StatusConflict)
	})
}

// TestLedger_UnfencedDoubleCharge: with fencing off, the paused holder's late write goes
// through: the double charge that the fenced ledger refuses.
func TestLedger_UnfencedDoubleCharge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, false)
		wantStatus(t, tl.charge("attempt-by-B", "acct", 3000, 34), http.StatusCreated)
		wantStatus(t, tl.charge("attempt-by-A", "acct", 3000, 33), http.StatusCreated)
		a := tl.account("acct")
		if a.BalanceCents != opening-6000 || len(a.Charges) != 2 || a.FenceToken != 0 {
			t.Fatalf("account = %+v", a)
		}
		if a.Charges[1].Token != 33 {
			t.Fatalf("the unfenced ledger must still record the token: %+v", a.Charges[1])
		}
		// Idempotency still applies without fencing.
		wantStatus(t, tl.charge("attempt-by-A", "acct", 3000, 33), http.StatusOK)
		if got := tl.account("acct").BalanceCents; got != opening-6000 {
			t.Fatalf("balance = %d after a replay", got)
		}
	})
}

func TestLedger_SetBalance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		r := tl.do(http.MethodPut, "/v1/accounts/dave", `{"balance_cents": 500}`, 0)
		wantStatus(t, r, http.StatusOK)
		var a ledger.Account
		r.decode(t, &a)
		if a.ID != "dave" || a.BalanceCents != 500 || a.Charges == nil {
			t.Fatalf("account = %+v (charges must be [], not null)", a)
		}
		wantStatus(t, tl.charge("d1", "dave", 200, 1), http.StatusCreated)
		if got := tl.account("dave").BalanceCents; got != 300 {
			t.Fatalf("balance = %d, want 300", got)
		}
		wantStatus(t, tl.do(http.MethodPut, "/v1/accounts/dave", `{"balance_cents": 0}`, 0), http.StatusOK)
		if got := tl.account("dave").BalanceCents; got != 0 {
			t.Fatalf("balance = %d, want 0", got)
		}
	})
}

// TestLedger_BadInput: every malformed request gets its status and code, and writes nothing.
func TestLedger_BadInput(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		good := `{"charge_id":"x","account":"acct","amount_cents":5}`
		for _, tc := range []struct {
			name         string
			method, path string
			body         string
			token        fencing.Token
			rawToken     string
			status       int
			code         string
		}{
			{"unknown field", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":5,"memo":"hi"}`, 1, "", 400, ledger.CodeInvalidJSON},
			{"trailing data", "POST", "/v1/charges", good + `{}`, 1, "", 400, ledger.CodeInvalidJSON},
			{"trailing garbage", "POST", "/v1/charges", good + ` x`, 1, "", 400, ledger.CodeInvalidJSON},
			{"amount as string", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":"5"}`, 1, "", 400, ledger.CodeInvalidJSON},
			{"fractional amount", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":5.5}`, 1, "", 400, ledger.CodeInvalidJSON},
			{"amount overflow", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":1e30}`, 1, "", 400, ledger.CodeInvalidJSON},
			{"not an object", "POST", "/v1/charges", `[1,2]`, 1, "", 400, ledger.CodeInvalidJSON},
			{"empty body", "POST", "/v1/charges", ``, 1, "", 400, ledger.CodeInvalidJSON},
			{"zero amount", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":0}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"negative amount", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":-5}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"missing amount", "POST", "/v1/charges", `{"charge_id":"x","account":"acct"}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"huge amount", "POST", "/v1/charges", `{"charge_id":"x","account":"acct","amount_cents":1000000000001}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"empty charge_id", "POST", "/v1/charges", `{"charge_id":"","account":"acct","amount_cents":5}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"empty account", "POST", "/v1/charges", `{"charge_id":"x","account":"","amount_cents":5}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"control char", "POST", "/v1/charges", `{"charge_id":"x\u0001","account":"acct","amount_cents":5}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"long id", "POST", "/v1/charges", `{"charge_id":"` + strings.Repeat("x", 129) + `","account":"acct","amount_cents":5}`, 1, "", 400, ledger.CodeInvalidArgument},
			{"body too large", "POST", "/v1/charges", `{"charge_id":"` + strings.Repeat("x", 70<<10) + `"}`, 1, "", 413, ledger.CodeBodyTooLarge},
			{"missing token", "POST", "/v1/charges", good, 0, "", 400, fencing.CodeMissingToken},
			{"malformed token", "POST", "/v1/charges", good, 0, "abc", 400, fencing.CodeInvalidToken},
			{"zero token", "POST", "/v1/charges", good, 0, "0", 400, fencing.CodeInvalidToken},
			{"token above MaxInt64", "POST", "/v1/charges", good, 0, "9223372036854775808", 400, fencing.CodeInvalidToken},
			{"unknown account", "GET", "/v1/accounts/nobody", ``, 0, "", 404, ledger.CodeAccountNotFound},
			{"negative balance", "PUT", "/v1/accounts/acct", `{"balance_cents":-1}`, 0, "", 400, ledger.CodeInvalidArgument},
			{"balance unknown field", "PUT", "/v1/accounts/acct", `{"balance":1}`, 0, "", 400, ledger.CodeInvalidJSON},
			{"wrong method", "DELETE", "/v1/charges", ``, 0, "", 405, ledger.CodeMethodNotAllowed},
			{"wrong method on account", "POST", "/v1/accounts/acct", `{}`, 0, "", 405, ledger.CodeMethodNotAllowed},
			{"unknown path", "GET", "/v2/nothing", ``, 0, "", 404, ledger.CodeNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest(tc.method, tl.srv.URL+tc.path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				if tc.token != 0 {
					fencing.SetTokenHeader(req.Header, tc.token)
				}
				if tc.rawToken != "" {
					req.Header.Set(fencing.HeaderName, tc.rawToken)
				}
				resp, err := tl.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body fencing.ErrorBody
				if err := decodeStrict(resp, &body); err != nil {
					t.Fatalf("status %d, body not an error: %v", resp.StatusCode, err)
				}
				if resp.StatusCode != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
					t.Fatalf("got %d %+v, want %d %s", resp.StatusCode, body.Error, tc.status, tc.code)
				}
			})
		}
		// Nothing was written by any of them.
		r := tl.do(http.MethodGet, "/v1/accounts/acct", nil, 0)
		wantStatus(t, r, http.StatusNotFound)
	})
}

// TestLedger_ConcurrentCharges: workers charge two accounts concurrently with interleaved
// tokens, and some retry charge_ids that other workers also send. Afterwards each account's
// balance is the opening balance minus the sum of its unique accepted charges, each charge_id
// was created at most once, and accepted tokens never decrease in the order charges applied.
func TestLedger_ConcurrentCharges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		const workers, perWorker = 8, 40
		accounts := []string{"acct-x", "acct-y"}
		// A charge_id determines its account and amount, so retries by other workers are
		// true replays.
		chargeFor := func(id int) (string, string, int64) {
			return fmt.Sprintf("ch-%d", id), accounts[id%2], int64(1 + id%97)
		}

		var mu sync.Mutex
		created := map[string]int{} // charge_id -> number of 201 answers
		createdAmount := map[string]int64{}
		var sent []int // charge numbers sent so far, for retries
		var stale, replayed int
		var clock atomic.Uint64 // drives the tokens, so that workers' tokens interleave
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(7, uint64(w)))
				for i := range perWorker {
					id := w*perWorker + i
					mu.Lock()
					if len(sent) > 0 && rng.IntN(3) == 0 { // retry a charge someone sent
						id = sent[rng.IntN(len(sent))]
					}
					sent = append(sent, id)
					mu.Unlock()
					cid, acct, amount := chargeFor(id)
					tok := fencing.Token(1 + clock.Add(1)/4 + uint64(rng.IntN(4)))
					r := tl.charge(cid, acct, amount, tok)
					mu.Lock()
					switch r.status {
					case http.StatusCreated:
						created[cid]++
						createdAmount[cid] = amount
					case http.StatusOK:
						replayed++
					case http.StatusConflict:
						if code := r.errorDetail(t).Code; code != fencing.CodeStaleToken {
							t.Errorf("charge %s token %d: conflict %s", cid, tok, code)
						}
						stale++
					default:
						t.Errorf("charge %s token %d: %d %s", cid, tok, r.status, r.body)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()

		totalCharges := 0
		for _, acct := range accounts {
			a := tl.account(acct)
			want := int64(opening)
			n := 0
			for cid, times := range created {
				if _, acc, _ := chargeFor(atoiSuffix(cid)); acc != acct {
					continue
				}
				if times != 1 {
					t.Errorf("charge %s created %d times", cid, times)
				}
				want -= createdAmount[cid]
				n++
			}
			if a.BalanceCents != want {
				t.Errorf("%s: balance = %d, want opening - sum(unique accepted) = %d", acct, a.BalanceCents, want)
			}
			if len(a.Charges) != n {
				t.Errorf("%s: %d charges recorded, %d answered 201", acct, len(a.Charges), n)
			}
			tokens := make([]fencing.Token, len(a.Charges))
			for i, c := range a.Charges {
				tokens[i] = c.Token
			}
			if !slices.IsSorted(tokens) {
				t.Errorf("%s: tokens decrease in apply order: %v", acct, tokens)
			}
			if len(tokens) > 0 && a.FenceToken < tokens[len(tokens)-1] {
				t.Errorf("%s: fence %d below the last accepted token %d", acct, a.FenceToken, tokens[len(tokens)-1])
			}
			totalCharges += n
		}
		t.Logf("%d requests: %d created, %d replayed, %d stale", workers*perWorker, totalCharges, replayed, stale)
		if totalCharges == 0 || stale+replayed == 0 {
			t.Errorf("the workload must create, and replay or refuse: %d created, %d replayed, %d stale", totalCharges, replayed, stale)
		}
	})
}

func atoiSuffix(cid string) int {
	var n int
	fmt.Sscanf(strings.TrimPrefix(cid, "ch-"), "%d", &n)
	return n
}

func TestLedger_Healthz(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, true)
		r := tl.do(http.MethodGet, "/healthz", nil, 0)
		wantStatus(t, r, http.StatusOK)
		if !strings.Contains(string(r.body), `"status":"ok"`) {
			t.Fatalf("body %s", r.body)
		}
	})
}

// TestOpenDB: SQLite in a data directory, PostgreSQL from a URL, and nothing else.
func TestOpenDB(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		db, d, err := ledger.OpenDB(ctx, dir, "")
		if err != nil || d != fencing.SQLite {
			t.Fatalf("OpenDB = %v, %v", d, err)
		}
		defer db.Close()
		if _, err := ledger.New(ctx, configFor(db, d)); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, ledger.SQLiteFileName)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := fencingtest.PostgresDSN(t)
		db, d, err := ledger.OpenDB(ctx, "", dsn)
		if err != nil || d != fencing.Postgres {
			t.Fatalf("OpenDB = %v, %v", d, err)
		}
		defer db.Close()
		for range 2 { // migrations are idempotent
			if _, err := ledger.New(ctx, configFor(db, d)); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("bad", func(t *testing.T) {
		if _, _, err := ledger.OpenDB(ctx, t.TempDir(), "mysql://x"); err == nil {
			t.Fatal("mysql DSN accepted")
		}
		if _, _, err := ledger.OpenDB(ctx, "", ""); err == nil {
			t.Fatal("no data dir accepted")
		}
	})
}

func TestConfig_Validate(t *testing.T) {
	db := fencingtest.SQLiteDB(t)
	for _, cfg := range []ledger.Config{
		{Dialect: fencing.SQLite},
		{DB: db},
		{DB: db, Dialect: fencing.SQLite, OpeningBalanceCents: -1},
	} {
		if _, err := ledger.New(context.Background(), cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestLedger_Serve: Serve answers on a real listener and returns nil after a graceful
// shutdown when its context ends.
func TestLedger_Serve(t *testing.T) {
	db := fencingtest.SQLiteDB(t)
	cfg := configFor(db, fencing.SQLite)
	cfg.Logger = testLogger(t, 0)
	l, err := ledger.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v after shutdown", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

// TestLedger_ChargeAPI: the Go API refuses what the HTTP layer would.
func TestLedger_ChargeAPI(t *testing.T) {
	db := fencingtest.SQLiteDB(t)
	l, err := ledger.New(context.Background(), configFor(db, fencing.SQLite))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.Charge(ctx, ledger.ChargeRequest{ChargeID: "a", Account: "b", AmountCents: 1}, fencing.MaxToken+1); !errors.Is(err, fencing.ErrTokenTooLarge) {
		t.Fatalf("token above MaxInt64: %v", err)
	}
	if _, err := l.Charge(ctx, ledger.ChargeRequest{ChargeID: "a", Account: "b"}, 1); !errors.Is(err, ledger.ErrInvalidArgument) {
		t.Fatalf("zero amount: %v", err)
	}
	if _, err := l.Account(ctx, "nobody"); !errors.Is(err, ledger.ErrAccountNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
	if !l.Fenced() {
		t.Fatal("DefaultConfig must be fenced")
	}
}

func configFor(db *sql.DB, d fencing.Dialect) ledger.Config {
	cfg := ledger.DefaultConfig()
	cfg.DB = db
	cfg.Dialect = d
	return cfg
}

// decodeStrict decodes an answer's JSON body with no unknown fields.
func decodeStrict(resp *http.Response, v any) error {
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("Content-Type %q", ct)
	}
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// TestLedger_SameChargeIDRace: with fencing off nothing serializes two requests for the same
// charge_id, yet exactly one is applied and the others are answered as replays.
func TestLedger_SameChargeIDRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b fencingtest.Backend) {
		tl := mustNewLedger(t, b, false)
		for round := range 5 {
			cid := fmt.Sprintf("dup-%d", round)
			const n = 8
			statuses := make([]int, n)
			fencingtest.Together(n, func(i int) { statuses[i] = tl.charge(cid, "acct", 100, fencing.Token(i+1)).status })
			slices.Sort(statuses)
			want := append([]int{}, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusOK,
				http.StatusOK, http.StatusOK, http.StatusOK, http.StatusCreated)
			if !slices.Equal(statuses, want) {
				t.Fatalf("round %d: statuses %v, want one 201 and seven 200", round, statuses)
			}
			if got := tl.account("acct").BalanceCents; got != opening-100*int64(round+1) {
				t.Fatalf("round %d: balance %d", round, got)
			}
		}
	})
}
