package fencing

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Dialect names the SQL database behind an SQLGuard. It picks the placeholder style, the
// transaction options and the table DDL.
type Dialect uint8

// The supported dialects.
const (
	// SQLite is SQLite through modernc.org/sqlite (pure Go, driver name "sqlite"). Writers
	// of a database file serialize on SQLite's write lock; open the database with OpenSQLite
	// (or the DSN options it documents) so that they wait for it instead of failing with
	// SQLITE_BUSY.
	SQLite Dialect = iota + 1
	// Postgres is PostgreSQL through github.com/jackc/pgx/v5/stdlib (driver name "pgx").
	// Writers of a resource serialize on its fence row's lock, taken by the UPDATE that
	// raises the fence.
	Postgres
)

// String returns "sqlite" or "postgres".
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// DriverName returns the database/sql driver name the dialect is tested with: "sqlite"
// (modernc.org/sqlite) or "pgx" (github.com/jackc/pgx/v5/stdlib).
func (d Dialect) DriverName() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "pgx"
	}
	return ""
}

func (d Dialect) validate() error {
	if d != SQLite && d != Postgres {
		return fmt.Errorf("%w: %v", ErrUnknownDialect, d)
	}
	return nil
}

// txOptions returns the options of a fenced transaction.
//
// PostgreSQL: READ COMMITTED, whatever the server's default. The conditional UPDATE waits for
// a concurrent writer of the fence row and then re-evaluates "token <= $t" against the row as
// that writer committed it, and each later statement of the transaction sees everything
// committed before it started, so the caller's reads are fresh. A stricter level would be
// just as safe but would fail with serialization errors where READ COMMITTED waits.
//
// SQLite: the driver's default BEGIN, which the DSN makes BEGIN IMMEDIATE (see OpenSQLite).
// The isolation level is not settable and is always serializable.
func (d Dialect) txOptions() *sql.TxOptions {
	if d == Postgres {
		return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return nil
}

// Rebind rewrites the '?' placeholders of query into the dialect's style: unchanged for
// SQLite, $1, $2, ... for PostgreSQL. It does not parse SQL: query must not contain '?'
// anywhere else (in a string literal, a comment or an operator).
func (d Dialect) Rebind(query string) string {
	if d != Postgres {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}
