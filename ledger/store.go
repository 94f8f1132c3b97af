package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/fencing"
)

// Schema. Both dialects get the same columns; only the charge order column differs: SQLite
// orders charges by the table's implicit rowid, PostgreSQL by an identity column.
var (
	accountsDDL = `CREATE TABLE IF NOT EXISTS accounts (
	id            TEXT NOT NULL PRIMARY KEY,
	balance_cents BIGINT NOT NULL
)`
	chargesDDL = map[fencing.Dialect]string{
		fencing.SQLite: `CREATE TABLE IF NOT EXISTS charges (
	charge_id           TEXT NOT NULL PRIMARY KEY,
	account             TEXT NOT NULL,
	amount_cents        BIGINT NOT NULL,
	token               BIGINT NOT NULL,
	balance_after_cents BIGINT NOT NULL,
	created_unix_ms     BIGINT NOT NULL
)`,
		fencing.Postgres: `CREATE TABLE IF NOT EXISTS charges (
	charge_id           TEXT NOT NULL PRIMARY KEY,
	account             TEXT NOT NULL,
	amount_cents        BIGINT NOT NULL,
	token               BIGINT NOT NULL,
	balance_after_cents BIGINT NOT NULL,
	created_unix_ms     BIGINT NOT NULL,
	seq                 BIGINT GENERATED ALWAYS AS IDENTITY
)`,
	}
	chargeOrder = map[fencing.Dialect]string{fencing.SQLite: "rowid", fencing.Postgres: "seq"}

	chargesIndexDDL = `CREATE INDEX IF NOT EXISTS charges_by_account ON charges (account)`

	// migrateLockKey serializes concurrent migrations on PostgreSQL ("rlledger").
	migrateLockKey int64 = 0x726c6c6564676572
)

// migrate creates the fence table and the ledger's tables if they do not exist.
func migrate(ctx context.Context, db *sql.DB, d fencing.Dialect) error {
	if err := fencing.CreateTable(ctx, db, d); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if d == fencing.Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
			return fmt.Errorf("ledger: migrate: lock: %w", err)
		}
	}
	for _, ddl := range []string{accountsDDL, chargesDDL[d], chargesIndexDDL} {
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("ledger: migrate: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: migrate: %w", err)
	}
	return nil
}

// queries holds a dialect's statements, placeholders rebound.
type queries struct {
	selectCharge, openAccount, debit, insertCharge      string
	setBalance, selectAccount, selectFence, listCharges string
}

func newQueries(d fencing.Dialect) queries {
	return queries{
		selectCharge: d.Rebind(`SELECT account, amount_cents, token, balance_after_cents
			FROM charges WHERE charge_id = ?`),
		openAccount: d.Rebind(`INSERT INTO accounts (id, balance_cents) VALUES (?, ?)
			ON CONFLICT (id) DO NOTHING`),
		// An atomic decrement, not a read-modify-write, so that even unfenced concurrent
		// charges are each applied exactly once: the demo's double charge is then plainly
		// two charges, not a lost update.
		debit: d.Rebind(`UPDATE accounts SET balance_cents = balance_cents - ? WHERE id = ?
			RETURNING balance_cents`),
		insertCharge: d.Rebind(`INSERT INTO charges
			(charge_id, account, amount_cents, token, balance_after_cents, created_unix_ms)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (charge_id) DO NOTHING`),
		setBalance: d.Rebind(`INSERT INTO accounts (id, balance_cents) VALUES (?, ?)
			ON CONFLICT (id) DO UPDATE SET balance_cents = excluded.balance_cents`),
		selectAccount: d.Rebind(`SELECT balance_cents FROM accounts WHERE id = ?`),
		selectFence:   d.Rebind(`SELECT token FROM fences WHERE resource = ?`),
		listCharges: d.Rebind(`SELECT charge_id, amount_cents, token, balance_after_cents, created_unix_ms
			FROM charges WHERE account = ? ORDER BY ` + chargeOrder[d]),
	}
}

// chargeTx applies one charge inside a transaction (fenced or not). The first statement of a
// fenced transaction, raising the fence, has already run.
func (l *Ledger) chargeTx(ctx context.Context, tx *sql.Tx, req ChargeRequest, token fencing.Token) (Charge, error) {
	q := &l.q
	// Idempotency: a known charge_id is answered from its record.
	var prev Charge
	var prevToken int64
	err := tx.QueryRowContext(ctx, q.selectCharge, req.ChargeID).
		Scan(&prev.Account, &prev.AmountCents, &prevToken, &prev.BalanceCents)
	switch {
	case err == nil:
		if prev.Account != req.Account || prev.AmountCents != req.AmountCents {
			return Charge{}, fmt.Errorf("%w: %q was a charge of %d cents to account %q",
				ErrChargeConflict, req.ChargeID, prev.AmountCents, prev.Account)
		}
		prev.ChargeID, prev.Token, prev.Replayed = req.ChargeID, fencing.Token(prevToken), true
		return prev, nil
	case !errors.Is(err, sql.ErrNoRows):
		return Charge{}, fmt.Errorf("ledger: read charge: %w", err)
	}

	if _, err := tx.ExecContext(ctx, q.openAccount, req.Account, l.cfg.OpeningBalanceCents); err != nil {
		return Charge{}, fmt.Errorf("ledger: open account: %w", err)
	}
	var balance int64
	if err := tx.QueryRowContext(ctx, q.debit, req.AmountCents, req.Account).Scan(&balance); err != nil {
		return Charge{}, fmt.Errorf("ledger: debit: %w", err)
	}
	res, err := tx.ExecContext(ctx, q.insertCharge, req.ChargeID, req.Account, req.AmountCents,
		int64(token), balance, time.Now().UnixMilli())
	if err != nil {
		return Charge{}, fmt.Errorf("ledger: record charge: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Charge{}, fmt.Errorf("ledger: record charge: %w", err)
	} else if n == 0 {
		return Charge{}, errChargeRace // roll back the debit and retry as a replay
	}
	return Charge{
		ChargeID:     req.ChargeID,
		Account:      req.Account,
		AmountCents:  req.AmountCents,
		Token:        token,
		BalanceCents: balance,
	}, nil
}
