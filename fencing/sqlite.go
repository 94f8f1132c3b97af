package fencing

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// SQLiteOptions are the DSN query parameters OpenSQLite sets, in modernc.org/sqlite's syntax:
//
//   - _txlock=immediate (required): every read-write transaction starts with BEGIN
//     IMMEDIATE, taking the write lock before its first statement. A deferred transaction
//     that reads first and writes later can fail with SQLITE_BUSY when it tries to upgrade
//     its lock, and the busy timeout does not help it. Read-only transactions
//     (sql.TxOptions{ReadOnly: true}) still begin deferred.
//   - busy_timeout(10000) (required): a writer waits up to 10 s for another connection's
//     write lock instead of failing at once with SQLITE_BUSY.
//   - journal_mode(WAL) (recommended): readers do not block the writer, nor it them.
//   - synchronous(NORMAL) (recommended with WAL): a commit survives a crash of the process;
//     a power loss may lose the last commits but never corrupts the file. Use FULL if a
//     committed write must survive power loss.
const SQLiteOptions = "_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"

// SQLiteDSN returns the DSN OpenSQLite opens: a file: URI for path with SQLiteOptions.
func SQLiteDSN(path string) string {
	u := url.URL{Path: path}
	return "file:" + u.EscapedPath() + "?" + SQLiteOptions
}

// OpenSQLite opens (creating it if needed) the SQLite database file at path with the options
// a fenced writer needs (see SQLiteOptions), and checks that it can be used.
func OpenSQLite(path string) (*sql.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("fencing: OpenSQLite: empty path")
	}
	db, err := sql.Open(SQLite.DriverName(), SQLiteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("fencing: open sqlite %s: %w", path, err)
	}
	if err := db.PingContext(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("fencing: open sqlite %s: %w", path, err)
	}
	return db, nil
}
