// Package fencingtest provides real databases for tests of fenced storage: a SQLite file in
// the test's temporary directory, and a fresh schema in the PostgreSQL server named by the
// environment variable RAFTLOCK_TEST_POSTGRES_DSN. Together starts the racing writers those
// tests run against them.
//
// When that variable is unset, PostgreSQL tests are skipped with a loud message, except when
// CI=true: then they fail, because CI must provide the server. scripts/ci-postgres.sh starts a
// throwaway one:
//
//	export RAFTLOCK_TEST_POSTGRES_DSN="$(scripts/ci-postgres.sh start /tmp/raftlock-pg 55432)"
package fencingtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/raftlock/raftlock/fencing"
)

// PostgresDSNEnv is the environment variable naming the PostgreSQL server for tests.
const PostgresDSNEnv = "RAFTLOCK_TEST_POSTGRES_DSN"

// Backend is one database the tests run against.
type Backend struct {
	// Name is a subtest name: "sqlite" or "postgres".
	Name string
	// Dialect is the backend's SQL dialect.
	Dialect fencing.Dialect
	// Open returns a new, empty database for t (see SQLiteDB and PostgresDB).
	Open func(t testing.TB) *sql.DB
	// DSN returns a DSN of a new, empty database for t, for code that opens its own
	// connections (see SQLiteDSN and PostgresDSN).
	DSN func(t testing.TB) string
}

// Backends returns the SQL backends, SQLite first: run a shared test body against each.
func Backends() []Backend {
	return []Backend{
		{Name: "sqlite", Dialect: fencing.SQLite, Open: SQLiteDB, DSN: SQLiteDSN},
		{Name: "postgres", Dialect: fencing.Postgres, Open: PostgresDB, DSN: PostgresDSN},
	}
}

// SQLitePath returns the path of a new SQLite database file in t's temporary directory.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.db")
}

// SQLiteDSN returns fencing.SQLiteDSN of a new file in t's temporary directory.
func SQLiteDSN(t testing.TB) string {
	t.Helper()
	return fencing.SQLiteDSN(SQLitePath(t))
}

// SQLiteDB opens a new SQLite database in t's temporary directory with fencing.OpenSQLite,
// and closes it when t ends.
func SQLiteDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := fencing.OpenSQLite(SQLitePath(t))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// RequirePostgres returns the DSN in RAFTLOCK_TEST_POSTGRES_DSN. When it is unset it skips t,
// or fails it when CI=true.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresDSNEnv)
	if dsn != "" {
		return dsn
	}
	const msg = "PostgreSQL tests need " + PostgresDSNEnv + "; start a throwaway server with\n" +
		"\texport " + PostgresDSNEnv + "=\"$(scripts/ci-postgres.sh start /tmp/raftlock-pg 55432)\""
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but " + PostgresDSNEnv + " is not set. " + msg)
	}
	t.Skip("!!! SKIPPING PostgreSQL test: " + PostgresDSNEnv + " is not set. " + msg)
	return ""
}

// PostgresDSN creates a new schema in the server named by RAFTLOCK_TEST_POSTGRES_DSN and
// returns a DSN whose search_path is that schema, so that tests (and test packages running
// in parallel) never see each other's tables. The schema is dropped when t ends; close every
// connection to it before then (cleanups run last-registered first, so register the close
// after calling PostgresDSN).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := RequirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open %s: %v", PostgresDSNEnv, err)
	}
	t.Cleanup(func() { admin.Close() })
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "rltest_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("postgres at %s: create schema: %v", PostgresDSNEnv, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(base, schema)
}

// withSearchPath adds search_path=schema to a URL or keyword/value DSN; pgx sends unknown
// parameters to the server as run-time settings.
func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}

// PostgresDB opens a connection pool on a new schema (see PostgresDSN), closed when t ends.
func PostgresDB(t testing.TB) *sql.DB {
	t.Helper()
	dsn := PostgresDSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	db.SetMaxOpenConns(16)
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("postgres at %s: %v", PostgresDSNEnv, err)
	}
	return db
}

// Together runs f(0) to f(n-1) in goroutines released at the same moment, so that they
// race, and waits for them all.
func Together(n int, f func(w int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(w)
		}()
	}
	close(start)
	wg.Wait()
}
