package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/test/verify/checker"
)

// Client sends raftlock and ledger requests from one worker and records them.
type Client struct {
	// Endpoints are the nodes' base URLs; each request goes to a random one.
	Endpoints []string
	// LedgerURL is the ledger's base URL.
	LedgerURL string
	// Timeout bounds a request (a wait adds its wait_ms); zero means 3 s.
	Timeout time.Duration
	// Rec receives every operation.
	Rec *Recorder
	// Workload and Worker label the operations.
	Workload string
	Worker   int

	rng  *rand.Rand
	http *http.Client
}

// NewClient returns a client with its own connection pool and random source.
func NewClient(endpoints []string, ledgerURL string, rec *Recorder, workload string, worker int, seed int64) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{Endpoints: endpoints, LedgerURL: ledgerURL, Rec: rec, Workload: workload, Worker: worker,
		rng: rand.New(rand.NewSource(seed)), http: &http.Client{Transport: tr}}
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Rand returns the client's random source (not safe for concurrent use).
func (c *Client) Rand() *rand.Rand { return c.rng }

// result is a classified HTTP answer.
type result struct {
	outcome string
	status  int
	code    string
	body    []byte
	err     string
	msg     string // the API error's message
}

// send sends one request to base and classifies the answer. extra is added to the timeout.
func (c *Client) send(ctx context.Context, base, method, path string, body any, token uint64, extra time.Duration) result {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+extra)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return result{outcome: checker.OutFailed, err: err.Error()}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return result{outcome: checker.OutFailed, err: err.Error()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != 0 {
		fencing.SetTokenHeader(req.Header, fencing.Token(token))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return result{outcome: checker.OutUnavailable, err: err.Error()}
		}
		return result{outcome: checker.OutAmbiguous, err: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{outcome: checker.OutAmbiguous, status: resp.StatusCode, err: err.Error()}
	}
	r := result{status: resp.StatusCode, body: b}
	if resp.StatusCode/100 == 2 {
		r.outcome = checker.OutOK
		return r
	}
	var eb api.ErrorBody
	_ = json.Unmarshal(b, &eb)
	r.code, r.msg, r.err = eb.Error.Code, eb.Error.Message, fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	switch {
	case resp.StatusCode >= 500:
		r.outcome = checker.OutAmbiguous
	case eb.Error.Code == api.CodeLockHeld:
		r.outcome = checker.OutHeld
	case eb.Error.Code == api.CodeWaitTimeout:
		r.outcome = checker.OutWaitTimeout
	case eb.Error.Code == api.CodeNotHolder:
		r.outcome = checker.OutNotHolder
	case eb.Error.Code == api.CodeLeaseNotFound:
		r.outcome = checker.OutLeaseNotFound
	case eb.Error.Code == "stale_token":
		r.outcome = checker.OutStale
	case eb.Error.Code == api.CodeModeConflict, eb.Error.Code == api.CodeSemaphoreFull, eb.Error.Code == api.CodeDeadlock,
		eb.Error.Code == api.CodeLimitConflict, eb.Error.Code == api.CodeElectionHeld:
		r.outcome = eb.Error.Code
	default:
		r.outcome = checker.OutFailed
	}
	return r
}

func (c *Client) node() int { return c.rng.Intn(len(c.Endpoints)) }

func (c *Client) record(op Op, r result) Op {
	op.Workload, op.Worker = c.Workload, c.Worker
	op.Return = c.Rec.Clock.Now()
	op.Outcome = r.outcome
	op.Err = r.err
	op.ID = c.Rec.Add(op)
	return op
}

// CreateLease creates a lease with ttl; the returned op carries its ID when OK.
func (c *Client) CreateLease(ctx context.Context, ttlMs int64, owner string) Op {
	n := c.node()
	op := Op{Kind: checker.KindCreateLease, Node: n, TTLMs: ttlMs, Owner: owner, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPost, "/v1/leases", api.CreateLeaseRequest{TTLMs: ttlMs}, 0, 0)
	if r.outcome == checker.OutOK {
		var l api.Lease
		if err := json.Unmarshal(r.body, &l); err != nil || l.LeaseID == "" {
			r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("bad lease answer %q", r.body)
		}
		op.Lease, op.Fingerprint = l.LeaseID, fingerprint(l.LeaseID)
	}
	return c.record(op, r)
}

// KeepAlive renews lease.
func (c *Client) KeepAlive(ctx context.Context, lease, owner string, ttlMs int64) Op {
	n := c.node()
	op := Op{Kind: checker.KindKeepAlive, Node: n, Lease: lease, Owner: owner, TTLMs: ttlMs, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPost, "/v1/leases/"+lease+"/keepalive", nil, 0, 0)
	return c.record(op, r)
}

// ReadLease reads lease (linearizable).
func (c *Client) ReadLease(ctx context.Context, lease, owner string, ttlMs int64) Op {
	n := c.node()
	op := Op{Kind: checker.KindReadLease, Node: n, Lease: lease, Owner: owner, TTLMs: ttlMs, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodGet, "/v1/leases/"+lease, nil, 0, 0)
	if r.outcome == checker.OutOK {
		var l api.Lease
		if err := json.Unmarshal(r.body, &l); err != nil {
			r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("bad lease answer %q", r.body)
		}
		op.Locks = l.Locks
	}
	return c.record(op, r)
}

// RevokeLease revokes lease.
func (c *Client) RevokeLease(ctx context.Context, lease, owner string) Op {
	n := c.node()
	op := Op{Kind: checker.KindRevoke, Node: n, Lease: lease, Owner: owner, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodDelete, "/v1/leases/"+lease, nil, 0, 0)
	return c.record(op, r)
}

// RevokeUntilGone revokes lease until a definite answer (ok or lease_not_found), trying
// every `every` for at most within: from that answer on, no ambiguous operation of the
// lease can take effect, so the checkers close such operations there. It runs on its own
// deadline, not the caller's context, so that a worker whose round ended still leaves
// nothing held.
func (c *Client) RevokeUntilGone(lease, owner string, within, every time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for ctx.Err() == nil {
		if op := c.RevokeLease(ctx, lease, owner); op.Outcome == checker.OutOK || op.Outcome == checker.OutLeaseNotFound {
			return
		}
		sleepCtx(ctx, every)
	}
}

// AcquireLock takes lock with lease, waiting up to waitMs.
func (c *Client) AcquireLock(ctx context.Context, lock, lease, owner string, ttlMs, waitMs int64) Op {
	return c.AcquireLockMode(ctx, lock, lease, owner, "", ttlMs, waitMs)
}

// AcquireLockMode takes lock with lease in mode (api.ModeShared, or "" for exclusive),
// waiting up to waitMs.
func (c *Client) AcquireLockMode(ctx context.Context, lock, lease, owner, mode string, ttlMs, waitMs int64) Op {
	n := c.node()
	op := Op{Kind: checker.KindAcquire, Node: n, Lock: lock, Lease: lease, Owner: owner, Mode: mode, TTLMs: ttlMs, WaitMs: waitMs, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPut, "/v1/locks/"+lock, api.AcquireRequest{LeaseID: lease, WaitMs: waitMs, Owner: owner, Mode: mode}, 0, time.Duration(waitMs)*time.Millisecond)
	if r.outcome == checker.OutOK {
		var g api.Grant
		if err := json.Unmarshal(r.body, &g); err != nil || g.Token == 0 {
			r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("bad grant answer %q", r.body)
		}
		op.Token = g.Token
	}
	return c.record(op, r)
}

// ReleaseLock releases lock held by lease with token.
func (c *Client) ReleaseLock(ctx context.Context, lock, lease, owner string, token uint64) Op {
	n := c.node()
	op := Op{Kind: checker.KindRelease, Node: n, Lock: lock, Lease: lease, Owner: owner, Token: token, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodDelete, "/v1/locks/"+lock, api.ReleaseRequest{LeaseID: lease, Token: token}, 0, 0)
	return c.record(op, r)
}

// LockStatus reads lock's status (linearizable).
func (c *Client) LockStatus(ctx context.Context, lock string) Op {
	n := c.node()
	op := Op{Kind: checker.KindStatus, Node: n, Lock: lock, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodGet, "/v1/locks/"+lock, nil, 0, 0)
	if r.outcome == checker.OutOK {
		var s api.LockStatus
		if err := json.Unmarshal(r.body, &s); err != nil {
			r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("bad status answer %q", r.body)
		}
		op.Held, op.Token, op.StatusOwner, op.Mode, op.Holders = s.Held, s.Token, s.Owner, s.Mode, holders(s.Holders)
	}
	return c.record(op, r)
}

// chargeRequest and chargeAnswer mirror the ledger's JSON.
type chargeRequest struct {
	ChargeID    string `json:"charge_id"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
}

type chargeAnswer struct {
	BalanceCents int64 `json:"balance_cents"`
	Replayed     bool  `json:"replayed"`
}

// ChargeAccount posts a fenced charge to the ledger.
func (c *Client) ChargeAccount(ctx context.Context, lock, owner, account, chargeID string, amount int64, token uint64) Op {
	op := Op{Kind: checker.KindCharge, Node: -1, Lock: lock, Owner: owner, Account: account, ChargeID: chargeID, Amount: amount, Token: token, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.LedgerURL, http.MethodPost, "/v1/charges", chargeRequest{ChargeID: chargeID, Account: account, AmountCents: amount}, token, 0)
	if r.outcome == checker.OutOK {
		var a chargeAnswer
		_ = json.Unmarshal(r.body, &a)
		op.Balance = a.BalanceCents
	}
	return c.record(op, r)
}

// AccountCharge is one charge in an account's history.
type AccountCharge struct {
	ChargeID     string `json:"charge_id"`
	AmountCents  int64  `json:"amount_cents"`
	Token        uint64 `json:"token"`
	BalanceCents int64  `json:"balance_cents"`
}

// Account is the ledger's account answer.
type Account struct {
	ID           string          `json:"id"`
	BalanceCents int64           `json:"balance_cents"`
	FenceToken   uint64          `json:"fence_token"`
	Charges      []AccountCharge `json:"charges"`
}

// ReadAccount reads an account; the op's Balance is its balance.
func (c *Client) ReadAccount(ctx context.Context, account string) (Op, Account) {
	op := Op{Kind: checker.KindReadAccount, Node: -1, Account: account, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.LedgerURL, http.MethodGet, "/v1/accounts/"+url.PathEscape(account), nil, 0, 0)
	var a Account
	if r.outcome == checker.OutOK {
		if err := json.Unmarshal(r.body, &a); err != nil {
			r.outcome, r.err = checker.OutFailed, err.Error()
		}
		op.Balance = a.BalanceCents
	}
	return c.record(op, r), a
}

// SetupAccount creates or resets an account's balance (not recorded; setup only).
func (c *Client) SetupAccount(ctx context.Context, account string, balance int64) error {
	r := c.send(ctx, c.LedgerURL, http.MethodPut, "/v1/accounts/"+url.PathEscape(account), map[string]int64{"balance_cents": balance}, 0, 0)
	if r.outcome != checker.OutOK {
		return fmt.Errorf("workload: set up account %s: %s %s", account, r.outcome, r.err)
	}
	return nil
}
