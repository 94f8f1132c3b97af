package harness

import (
	"context"
	"database/sql"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/ledger"
)

// Ledger is an in-process ledger service over SQLite in a temporary directory.
type Ledger struct {
	// URL is the ledger's base URL.
	URL string
	// Ledger is the service itself, for direct reads.
	Ledger *ledger.Ledger
	srv    *http.Server
}

// StartLedger starts a ledger over SQLite; fenced false switches its fence check off (the
// negative control). It stops when the test ends.
func StartLedger(t testing.TB, fenced bool) (*Ledger, error) {
	return StartLedgerDB(t, fenced, "")
}

// StartLedgerDB starts a ledger over PostgreSQL when dsn is a postgres:// URL, over SQLite in
// a temporary directory when dsn is empty. A PostgreSQL database is shared with whatever else
// uses it: callers use account ids of their own. It stops when the test ends.
func StartLedgerDB(t testing.TB, fenced bool, dsn string) (*Ledger, error) {
	t.Helper()
	var db *sql.DB
	dialect := fencing.SQLite
	var err error
	if dsn == "" {
		db, err = fencing.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	} else {
		db, dialect, err = ledger.OpenDB(context.Background(), "", dsn)
	}
	if err != nil {
		return nil, err
	}
	cfg := ledger.DefaultConfig()
	cfg.DB, cfg.Dialect, cfg.Fenced = db, dialect, fenced
	l, err := ledger.New(context.Background(), cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, err
	}
	srv := &http.Server{Handler: l.Handler()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); db.Close() })
	return &Ledger{URL: "http://" + ln.Addr().String(), Ledger: l, srv: srv}, nil
}
