package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/fencing"
)

// ChargeRequest is the body of POST /v1/charges.
type ChargeRequest struct {
	// ChargeID is the idempotency key: a charge_id seen before is answered from its record
	// and never applied twice. 1 to MaxIDBytes bytes of UTF-8, no control characters.
	ChargeID string `json:"charge_id"`
	// Account is the account to debit, created with the opening balance on its first
	// charge. Same rules as ChargeID.
	Account string `json:"account"`
	// AmountCents is the amount to debit, 1 to MaxAmountCents.
	AmountCents int64 `json:"amount_cents"`
}

// Validate checks the request's fields.
func (r ChargeRequest) Validate() error {
	if err := validateID("charge_id", r.ChargeID); err != nil {
		return err
	}
	if err := validateID("account", r.Account); err != nil {
		return err
	}
	if r.AmountCents <= 0 || r.AmountCents > MaxAmountCents {
		return fmt.Errorf("%w: amount_cents must be between 1 and %d, got %d", ErrInvalidArgument, int64(MaxAmountCents), r.AmountCents)
	}
	return nil
}

// Charge is the answer to a charge, and a charge in an account's history.
type Charge struct {
	ChargeID    string `json:"charge_id"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
	// Token is the fencing token the charge was applied with.
	Token fencing.Token `json:"token"`
	// BalanceCents is the account's balance right after this charge.
	BalanceCents int64 `json:"balance_cents"`
	// Replayed is true when the answer comes from the record of an earlier request with
	// the same charge_id; nothing was debited this time.
	Replayed bool `json:"replayed,omitempty"`
	// CreatedAt is when the charge was applied (in account histories only).
	CreatedAt *time.Time `json:"created_at,omitempty"`
}

// Account is the answer to GET /v1/accounts/{id}.
type Account struct {
	ID           string `json:"id"`
	BalanceCents int64  `json:"balance_cents"`
	// FenceToken is the highest token the account has accepted (0: never fenced).
	FenceToken fencing.Token `json:"fence_token"`
	// Charges lists the account's charges in the order they were applied.
	Charges []Charge `json:"charges"`
}

// Ledger is the payment ledger. Its methods are safe for concurrent use.
type Ledger struct {
	cfg   Config
	db    *sql.DB
	guard *fencing.SQLGuard
	q     queries
	log   hclog.Logger
}

// New checks cfg, creates the ledger's tables if needed, and returns the ledger.
func New(ctx context.Context, cfg Config) (*Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	guard, err := fencing.NewSQLGuard(cfg.DB, cfg.Dialect)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, cfg.DB, cfg.Dialect); err != nil {
		return nil, err
	}
	l := &Ledger{cfg: cfg, db: cfg.DB, guard: guard, q: newQueries(cfg.Dialect), log: cfg.Logger}
	if !cfg.Fenced {
		l.log.Warn("fencing is OFF: stale lock holders can write (demo mode)")
	}
	return l, nil
}

// Fenced reports whether the ledger checks fencing tokens.
func (l *Ledger) Fenced() bool { return l.cfg.Fenced }

// maxChargeAttempts bounds the retries of a charge that raced with another request for the
// same charge_id (the retry then answers it as a replay).
const maxChargeAttempts = 3

// Charge debits an account, in one transaction that (when fenced) first raises the fence of
// "accounts/<account>" to token. A known charge_id is answered from its record with Replayed
// set, or ErrChargeConflict if it was for another account or amount. A stale token returns a
// *fencing.StaleTokenError and writes nothing.
func (l *Ledger) Charge(ctx context.Context, req ChargeRequest, token fencing.Token) (Charge, error) {
	if err := req.Validate(); err != nil {
		return Charge{}, err
	}
	if err := token.Validate(); err != nil {
		return Charge{}, err
	}
	resource := "accounts/" + req.Account
	for range maxChargeAttempts {
		var out Charge
		err := l.write(ctx, resource, token, func(tx *sql.Tx) (err error) {
			out, err = l.chargeTx(ctx, tx, req, token)
			return err
		})
		if errors.Is(err, errChargeRace) {
			continue
		}
		return out, err
	}
	return Charge{}, fmt.Errorf("ledger: charge %q kept racing with concurrent requests", req.ChargeID)
}

// write runs fn in a transaction: under the fence of resource when the ledger is fenced, in
// a plain transaction otherwise.
func (l *Ledger) write(ctx context.Context, resource string, token fencing.Token, fn func(*sql.Tx) error) error {
	if l.cfg.Fenced {
		return l.guard.Do(ctx, resource, token, fn)
	}
	var opts *sql.TxOptions
	if l.cfg.Dialect == fencing.Postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	tx, err := l.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("ledger: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: commit: %w", err)
	}
	return nil
}

// SetBalance creates the account or sets its balance (0 to MaxBalanceCents). It is a setup
// operation and is not fenced: do not use it while workers charge the account.
func (l *Ledger) SetBalance(ctx context.Context, id string, balanceCents int64) (Account, error) {
	if err := validateID("account id", id); err != nil {
		return Account{}, err
	}
	if balanceCents < 0 || balanceCents > MaxBalanceCents {
		return Account{}, fmt.Errorf("%w: balance_cents must be between 0 and %d, got %d", ErrInvalidArgument, int64(MaxBalanceCents), balanceCents)
	}
	if _, err := l.db.ExecContext(ctx, l.q.setBalance, id, balanceCents); err != nil {
		return Account{}, fmt.Errorf("ledger: set balance: %w", err)
	}
	return l.Account(ctx, id)
}

// Account returns an account's balance, fence and charges, read from one snapshot.
func (l *Ledger) Account(ctx context.Context, id string) (Account, error) {
	if err := validateID("account id", id); err != nil {
		return Account{}, err
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if l.cfg.Dialect == fencing.Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := l.db.BeginTx(ctx, opts)
	if err != nil {
		return Account{}, fmt.Errorf("ledger: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	a := Account{ID: id, Charges: []Charge{}}
	err = tx.QueryRowContext(ctx, l.q.selectAccount, id).Scan(&a.BalanceCents)
	if errors.Is(err, sql.ErrNoRows) {
		return Account{}, fmt.Errorf("%w: %q", ErrAccountNotFound, id)
	}
	if err != nil {
		return Account{}, fmt.Errorf("ledger: read account: %w", err)
	}
	var fence int64
	err = tx.QueryRowContext(ctx, l.q.selectFence, "accounts/"+id).Scan(&fence)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Account{}, fmt.Errorf("ledger: read fence: %w", err)
	}
	a.FenceToken = fencing.Token(fence)

	rows, err := tx.QueryContext(ctx, l.q.listCharges, id)
	if err != nil {
		return Account{}, fmt.Errorf("ledger: list charges: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c := Charge{Account: id}
		var token, createdMs int64
		if err := rows.Scan(&c.ChargeID, &c.AmountCents, &token, &c.BalanceCents, &createdMs); err != nil {
			return Account{}, fmt.Errorf("ledger: list charges: %w", err)
		}
		c.Token = fencing.Token(token)
		created := time.UnixMilli(createdMs).UTC()
		c.CreatedAt = &created
		a.Charges = append(a.Charges, c)
	}
	if err := rows.Err(); err != nil {
		return Account{}, fmt.Errorf("ledger: list charges: %w", err)
	}
	return a, nil
}

// Ping checks that the database answers.
func (l *Ledger) Ping(ctx context.Context) error { return l.db.PingContext(ctx) }

// validateID checks an account id or charge_id.
func validateID(field, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is required", ErrInvalidArgument, field)
	}
	if len(s) > MaxIDBytes {
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalidArgument, field, MaxIDBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidArgument, field)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: %s contains a control character", ErrInvalidArgument, field)
		}
	}
	return nil
}
