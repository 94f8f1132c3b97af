package fencing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/raftlock/raftlock/internal/mutant"
)

// The SQL the guard runs, written with '?' placeholders (Dialect.Rebind turns them into $n
// for PostgreSQL). docs/FENCING.md shows the same statements.
const (
	// CreateTableSQL creates the fence table: one row per resource, holding the highest
	// token accepted for it. Rows must never be deleted or lowered: that would reopen the
	// resource to stale holders.
	CreateTableSQL = `CREATE TABLE IF NOT EXISTS fences (
	resource TEXT NOT NULL PRIMARY KEY,
	token    BIGINT NOT NULL
)`

	// raiseSQL raises the fence, or leaves it alone and affects no row when the fence is
	// already above the offered token. Arguments: token, resource, token.
	raiseSQL = `UPDATE fences SET token = ? WHERE resource = ? AND token <= ?`

	// insertSQL creates the fence of a resource that has never been fenced. When another
	// transaction creates it at the same time, PostgreSQL waits for that transaction and
	// then does nothing (no unique violation), and the guard retries raiseSQL.
	// Arguments: resource, token.
	insertSQL = `INSERT INTO fences (resource, token) VALUES (?, ?) ON CONFLICT (resource) DO NOTHING`

	// currentSQL reads a fence. Argument: resource.
	currentSQL = `SELECT token FROM fences WHERE resource = ?`

	// createLockKey is the PostgreSQL advisory lock key CreateTable holds, so that processes
	// starting together do not race on CREATE TABLE IF NOT EXISTS (which can fail with a
	// unique violation in the catalog). The bytes spell "raftfenc".
	createLockKey int64 = 0x7261667466656e63
)

// maxRaiseAttempts bounds the retries of RaiseFence when a fence row disappears between its
// statements, which only happens if someone deletes rows of the fences table.
const maxRaiseAttempts = 3

// CreateTable creates the fences table if it does not exist. It is idempotent and safe to
// run from several processes at once; call it at start-up or from a migration.
func CreateTable(ctx context.Context, db *sql.DB, d Dialect) error {
	if err := d.validate(); err != nil {
		return err
	}
	if d == SQLite {
		if _, err := db.ExecContext(ctx, CreateTableSQL); err != nil {
			return fmt.Errorf("fencing: create fences table: %w", err)
		}
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fencing: create fences table: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, createLockKey); err != nil {
		return fmt.Errorf("fencing: create fences table: lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, CreateTableSQL); err != nil {
		return fmt.Errorf("fencing: create fences table: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fencing: create fences table: commit: %w", err)
	}
	return nil
}

// SQLGuard runs writes to a SQL database under a fence: each call to Do is one transaction
// that first raises the resource's fence to the caller's token and only then runs the
// caller's statements. A guard is safe for concurrent use.
//
// Every writer of the data that a resource protects must go through the fence of that
// resource (Do, or RaiseFence in its own transaction); a writer that bypasses it is not
// fenced.
type SQLGuard struct {
	db      *sql.DB
	dialect Dialect

	// raise, insert and current are the dialect's statements.
	raise, insert, current string

	// writeSem (capacity 1) serializes this guard's SQLite transactions inside the process.
	// SQLite allows one writer per database file; waiting here hands the write lock from
	// one transaction to the next at once, where waiting in SQLite's busy handler (which
	// polls with sleeps of up to 100 ms) leaves it idle. Other processes and other handles
	// still wait in the busy handler. Nil for PostgreSQL, where the fence row's lock
	// serializes the writers of each resource.
	writeSem chan struct{}
}

// NewSQLGuard returns a guard over db, whose database is of dialect d. It runs no statement:
// create the table first with CreateTable (or the guard's CreateTable method).
//
// For SQLite, open db with OpenSQLite or with the DSN options it documents.
func NewSQLGuard(db *sql.DB, d Dialect) (*SQLGuard, error) {
	if db == nil {
		return nil, errors.New("fencing: NewSQLGuard: nil *sql.DB")
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	g := &SQLGuard{
		db:      db,
		dialect: d,
		raise:   d.Rebind(raiseSQL),
		insert:  d.Rebind(insertSQL),
		current: d.Rebind(currentSQL),
	}
	if d == SQLite {
		g.writeSem = make(chan struct{}, 1)
	}
	return g, nil
}

// Dialect returns the guard's dialect.
func (g *SQLGuard) Dialect() Dialect { return g.dialect }

// CreateTable creates the fences table if it does not exist (see the CreateTable function).
func (g *SQLGuard) CreateTable(ctx context.Context) error {
	return CreateTable(ctx, g.db, g.dialect)
}

// Do runs fn in one transaction under the fence of resource, with token:
//
//  1. It raises the fence: UPDATE fences SET token = t WHERE resource = r AND token <= t,
//     creating the row if the resource was never fenced.
//  2. If the fence is above token, it rolls back and returns a *StaleTokenError (matching
//     ErrStaleToken) that carries the fence's token. fn is not called.
//  3. Otherwise it calls fn with the transaction. If fn returns an error (or panics),
//     everything is rolled back, the fence included, and fn's error is returned as is.
//  4. Otherwise it commits.
//
// The fence is raised before fn reads anything, and holding it (the fence row's lock on
// PostgreSQL, the write lock on SQLite) excludes every other fenced writer of resource until
// the commit: fn's read-modify-write cannot interleave with another holder's, and a newer
// holder's update cannot be undone by an older holder's late write.
//
// fn must use tx for every statement (not the *sql.DB, whose other connections are outside
// the transaction, and which on SQLite would wait for the write lock this transaction holds),
// and must not commit or roll back tx. A nil fn only raises the fence.
//
// token must be between 1 and MaxToken (ErrInvalidToken, ErrTokenTooLarge otherwise), and
// resource non-empty (ErrEmptyResource). Other errors come from the database; an error from
// Commit may, as with any database, leave it unknown whether the transaction committed.
func (g *SQLGuard) Do(ctx context.Context, resource string, token Token, fn func(tx *sql.Tx) error) error {
	if err := checkArgs(resource, token); err != nil {
		return err
	}
	if g.writeSem != nil {
		select {
		case g.writeSem <- struct{}{}:
			defer func() { <-g.writeSem }()
		case <-ctx.Done():
			return fmt.Errorf("fencing: begin: %w", ctx.Err())
		}
	}
	tx, err := g.db.BeginTx(ctx, g.dialect.txOptions())
	if err != nil {
		return fmt.Errorf("fencing: begin: %w", err)
	}
	finished := false
	defer func() {
		if !finished {
			_ = tx.Rollback()
		}
	}()
	if err := g.raiseFence(ctx, tx, resource, token); err != nil {
		return err
	}
	if fn != nil {
		if err := fn(tx); err != nil {
			return err
		}
	}
	finished = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fencing: commit: %w", err)
	}
	return nil
}

// Current returns the highest token resource has accepted, or 0 if it was never fenced.
func (g *SQLGuard) Current(ctx context.Context, resource string) (Token, error) {
	var cur int64
	err := g.db.QueryRowContext(ctx, g.current, resource).Scan(&cur)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("fencing: read fence of %q: %w", resource, err)
	}
	return Token(cur), nil
}

// RaiseFence raises the fence of resource to token inside a transaction the caller manages,
// for callers that cannot use SQLGuard.Do. It returns a *StaleTokenError when the fence is
// above token; the caller must then roll back.
//
// It must be the first statement of the transaction, so that every read after it is made
// under the fence. On PostgreSQL run the transaction at READ COMMITTED (at REPEATABLE READ
// or SERIALIZABLE a concurrent raise makes it fail with a serialization error instead of
// waiting). On SQLite the transaction must take the write lock at BEGIN (BEGIN IMMEDIATE,
// which OpenSQLite's DSN makes the default).
func RaiseFence(ctx context.Context, tx *sql.Tx, d Dialect, resource string, token Token) error {
	if err := d.validate(); err != nil {
		return err
	}
	if err := checkArgs(resource, token); err != nil {
		return err
	}
	g := SQLGuard{dialect: d, raise: d.Rebind(raiseSQL), insert: d.Rebind(insertSQL), current: d.Rebind(currentSQL)}
	return g.raiseFence(ctx, tx, resource, token)
}

// raiseFence implements RaiseFence; the arguments are already checked.
func (g *SQLGuard) raiseFence(ctx context.Context, tx *sql.Tx, resource string, token Token) error {
	t := int64(token) // checked: at most MaxToken
	if mutant.Is("fence-lt") {
		g = g.mutantStrictRaise()
	}
	for range maxRaiseAttempts {
		// The common case: the fence exists and is at or below t.
		if ok, err := execOne(ctx, tx, g.raise, t, resource, t); err != nil || ok {
			return wrapRaise(resource, err)
		}
		// The fence is above t, or does not exist (or, on PostgreSQL, exists only in a
		// transaction that has not committed yet: the INSERT waits for it).
		if mutant.Is("fence-skip-first-row") && !g.mutantFenceExists(ctx, tx, resource) {
			return nil
		}
		if ok, err := execOne(ctx, tx, g.insert, resource, t); err != nil || ok {
			return wrapRaise(resource, err)
		}
		// Someone else created the fence meanwhile; try again against the committed row.
		if ok, err := execOne(ctx, tx, g.raise, t, resource, t); err != nil || ok {
			return wrapRaise(resource, err)
		}
		var cur int64
		err := tx.QueryRowContext(ctx, g.current, resource).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			continue // deleted under us; start over
		}
		if err != nil {
			return fmt.Errorf("fencing: read fence of %q: %w", resource, err)
		}
		return &StaleTokenError{Resource: resource, Offered: token, Current: Token(cur)}
	}
	return fmt.Errorf("fencing: the fence row of %q keeps disappearing: rows of the fences table must never be deleted", resource)
}

// execOne runs a statement and reports whether it affected a row.
func execOne(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

func wrapRaise(resource string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fencing: raise fence of %q: %w", resource, err)
}

// checkArgs validates the resource and token of a fenced write.
func checkArgs(resource string, token Token) error {
	if resource == "" {
		return ErrEmptyResource
	}
	return token.Validate()
}
