package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/raftlock/raftlock/fencing"
)

// SQLiteFileName is the ledger's database file inside the data directory.
const SQLiteFileName = "ledger.db"

// OpenDB opens the ledger's database: PostgreSQL when dsn is a postgres:// or postgresql://
// URL, otherwise SQLite in dataDir/ledger.db (dataDir is created if needed). The caller
// closes the database.
func OpenDB(ctx context.Context, dataDir, dsn string) (*sql.DB, fencing.Dialect, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		db, err := sql.Open(fencing.Postgres.DriverName(), dsn)
		if err != nil {
			return nil, 0, fmt.Errorf("ledger: open postgres: %w", err)
		}
		db.SetMaxOpenConns(32)
		db.SetConnMaxIdleTime(5 * time.Minute)
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := db.PingContext(pctx); err != nil {
			db.Close()
			return nil, 0, fmt.Errorf("ledger: connect to postgres: %w", err)
		}
		return db, fencing.Postgres, nil
	case dsn != "":
		return nil, 0, errors.New("ledger: the database DSN must be a postgres:// or postgresql:// URL (leave it empty for SQLite in the data directory)")
	}
	if dataDir == "" {
		return nil, 0, errors.New("ledger: a data directory is required for SQLite")
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return nil, 0, fmt.Errorf("ledger: data directory: %w", err)
	}
	db, err := fencing.OpenSQLite(filepath.Join(dataDir, SQLiteFileName))
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: %w", err)
	}
	return db, fencing.SQLite, nil
}
