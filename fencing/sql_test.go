package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/fencing/fencingtest"
)

// forEachSQLBackend runs body as a subtest per SQL backend.
func forEachSQLBackend(t *testing.T, body func(t *testing.T, b fencingtest.Backend)) {
	t.Helper()
	for _, b := range fencingtest.Backends() {
		t.Run(b.Name, func(t *testing.T) { body(t, b) })
	}
}

func TestCreateTable_IdempotentAndConcurrent(t *testing.T) {
	forEachSQLBackend(t, func(t *testing.T, b fencingtest.Backend) {
		db := b.Open(t)
		ctx := context.Background()
		errs := make([]error, 4)
		fencingtest.Together(len(errs), func(i int) { errs[i] = fencing.CreateTable(ctx, db, b.Dialect) })
		for i, err := range errs {
			if err != nil {
				t.Fatalf("CreateTable %d: %v", i, err)
			}
		}
		if err := fencing.CreateTable(ctx, db, b.Dialect); err != nil {
			t.Fatalf("CreateTable again: %v", err)
		}
	})
}

func TestSQLGuard_Current(t *testing.T) {
	forEachSQLBackend(t, func(t *testing.T, b fencingtest.Backend) {
		ctx := context.Background()
		g := mustGuard(t, b.Open(t), b.Dialect)
		if tok, err := g.Current(ctx, "r"); err != nil || tok != 0 {
			t.Fatalf("Current of an unfenced resource = %d, %v", tok, err)
		}
		if err := g.Do(ctx, "r", 12, nil); err != nil {
			t.Fatalf("Do with a nil function: %v", err)
		}
		if tok, err := g.Current(ctx, "r"); err != nil || tok != 12 {
			t.Fatalf("Current = %d, %v; want 12", tok, err)
		}
	})
}

// TestRaiseFence_CallerTransaction: a caller that manages its own transaction raises the fence
// first, and rolls back on refusal.
func TestRaiseFence_CallerTransaction(t *testing.T) {
	forEachSQLBackend(t, func(t *testing.T, b fencingtest.Backend) {
		ctx := context.Background()
		db := b.Open(t)
		g := mustGuard(t, db, b.Dialect)
		if _, err := db.ExecContext(ctx, `CREATE TABLE notes (body TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		write := func(tok fencing.Token, body string) error {
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelDefault})
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck
			if err := fencing.RaiseFence(ctx, tx, b.Dialect, "notes", tok); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, b.Dialect.Rebind(`INSERT INTO notes (body) VALUES (?)`), body); err != nil {
				return err
			}
			return tx.Commit()
		}
		if err := write(3, "first"); err != nil {
			t.Fatal(err)
		}
		wantStale(t, write(2, "stale"), "notes", 2, 3)
		if err := write(3, "second"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM notes`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("notes = %d, %v; want 2", n, err)
		}
		if tok, _ := g.Current(ctx, "notes"); tok != 3 {
			t.Fatalf("fence = %d", tok)
		}
		if err := fencing.RaiseFence(ctx, nil, fencing.Dialect(9), "x", 1); !errors.Is(err, fencing.ErrUnknownDialect) {
			t.Fatalf("unknown dialect: %v", err)
		}
	})
}

func TestSQLGuard_CanceledContext(t *testing.T) {
	forEachSQLBackend(t, func(t *testing.T, b fencingtest.Backend) {
		g := mustGuard(t, b.Open(t), b.Dialect)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := g.Do(ctx, "r", 1, func(*sql.Tx) error { t.Error("ran under a canceled context"); return nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if tok, _ := g.Current(context.Background(), "r"); tok != 0 {
			t.Fatalf("fence = %d", tok)
		}
	})
}

func TestNewSQLGuard_BadArguments(t *testing.T) {
	if _, err := fencing.NewSQLGuard(nil, fencing.SQLite); err == nil {
		t.Error("nil db accepted")
	}
	db := fencingtest.SQLiteDB(t)
	if _, err := fencing.NewSQLGuard(db, 0); !errors.Is(err, fencing.ErrUnknownDialect) {
		t.Errorf("dialect 0: %v", err)
	}
	if err := fencing.CreateTable(context.Background(), db, 7); !errors.Is(err, fencing.ErrUnknownDialect) {
		t.Errorf("CreateTable dialect 7: %v", err)
	}
}

func TestDialect_Rebind(t *testing.T) {
	q := `UPDATE fences SET token = ? WHERE resource = ? AND token <= ?`
	if got := fencing.SQLite.Rebind(q); got != q {
		t.Errorf("SQLite.Rebind = %q", got)
	}
	if got, want := fencing.Postgres.Rebind(q), `UPDATE fences SET token = $1 WHERE resource = $2 AND token <= $3`; got != want {
		t.Errorf("Postgres.Rebind = %q, want %q", got, want)
	}
	if fencing.SQLite.String() != "sqlite" || fencing.Postgres.String() != "postgres" ||
		fencing.SQLite.DriverName() != "sqlite" || fencing.Postgres.DriverName() != "pgx" {
		t.Error("dialect names")
	}
}

// TestOpenSQLite_Options: the file lands at the exact path (even with URI-special
// characters), in WAL mode with a busy timeout, and read-write transactions begin IMMEDIATE.
func TestOpenSQLite_Options(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd dir?#%", "fen ces?.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := fencing.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := fencing.CreateTable(ctx, db, fencing.SQLite); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not at %q: %v", path, err)
	}
	var mode string
	var timeout int
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout); err != nil || timeout != 10000 {
		t.Fatalf("busy_timeout = %d, %v", timeout, err)
	}

	// BEGIN IMMEDIATE: while one read-write transaction is open, a second one on another
	// connection cannot even begin. With the busy timeout off it fails at once; a deferred
	// BEGIN would have succeeded.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	if tx2, err := conn.BeginTx(ctx, nil); err == nil {
		tx2.Rollback()
		t.Fatal("a second write transaction began while the first holds the write lock")
	}
	ro, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("a read-only transaction could not begin beside a writer: %v", err)
	}
	ro.Rollback()
	if _, err := fencing.OpenSQLite(""); err == nil {
		t.Fatal("empty path accepted")
	}
}

// TestSQLGuard_SQLiteFencePersists: the fence outlives the process's handle.
func TestSQLGuard_SQLiteFencePersists(t *testing.T) {
	path := fencingtest.SQLitePath(t)
	ctx := context.Background()
	db, err := fencing.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGuard(t, db, fencing.SQLite)
	if err := g.Do(ctx, "r", 10, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = fencing.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g = mustGuard(t, db, fencing.SQLite)
	wantStale(t, g.Do(ctx, "r", 9, nil), "r", 9, 10)
}

// TestSQLGuard_SQLiteTwoHandles: two independent handles on one file, as two processes would
// have, contend for SQLite's write lock through busy_timeout and BEGIN IMMEDIATE rather than a
// shared guard. No write fails with SQLITE_BUSY, and the fence rule holds across both.
func TestSQLGuard_SQLiteTwoHandles(t *testing.T) {
	path := fencingtest.SQLitePath(t)
	var stores []*sqlStore
	for i := range 2 {
		db, err := fencing.OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		g := mustGuard(t, db, fencing.SQLite)
		if i == 0 {
			for _, ddl := range []string{
				`CREATE TABLE counters (resource TEXT NOT NULL PRIMARY KEY, value BIGINT NOT NULL)`,
				`CREATE TABLE accept_log (id INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, token BIGINT NOT NULL)`,
			} {
				if _, err := db.Exec(ddl); err != nil {
					t.Fatal(err)
				}
			}
		}
		stores = append(stores, &sqlStore{db: db, d: fencing.SQLite, guard: g})
	}
	const writers, writes = 4, 50
	ctx := context.Background()
	var mu sync.Mutex
	accepted := 0
	fencingtest.Together(writers, func(w int) {
		s := stores[w%2]
		for i := range writes {
			tok := fencing.Token(1 + 2*i + (w*7+i)%5)
			err := incr(ctx, s, "shared", tok, 1)
			switch {
			case err == nil:
				mu.Lock()
				accepted++
				mu.Unlock()
			case errors.Is(err, fencing.ErrStaleToken):
			default:
				t.Errorf("writer %d: %v", w, err)
				return
			}
		}
	})
	committed := logTokens(stores[0].log(t), "shared")
	if !slices.IsSorted(committed) || len(committed) != accepted {
		t.Fatalf("log %v, %d accepted", committed, accepted)
	}
	if got := stores[1].counter(t, "shared"); got != int64(accepted) {
		t.Fatalf("counter = %d, want %d", got, accepted)
	}
}

func mustGuard(t *testing.T, db *sql.DB, d fencing.Dialect) *fencing.SQLGuard {
	t.Helper()
	g, err := fencing.NewSQLGuard(db, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}
