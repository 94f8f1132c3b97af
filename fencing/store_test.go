package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/fencing/fencingtest"
)

// The shared guard tests run one body against every guard through a tiny fenced store: a
// counter per resource, plus an append-only log of accepted (resource, token) pairs in
// commit order. Each guard gets a store that keeps both where the guard protects them: in
// the guarded database for SQLGuard, in memory for MemoryGuard.

// logEntry is one accepted write.
type logEntry struct {
	resource string
	token    fencing.Token
}

// rw is what a fenced write may do: read and write counters, and log its acceptance.
type rw interface {
	get(resource string) (int64, error)
	set(resource string, v int64) error
	logAccept(resource string, token fencing.Token) error
}

// store is a counter store behind a guard.
type store interface {
	// do runs fn under the fence of resource with token; fn's writes are applied only if
	// the guard accepts the token and fn returns nil.
	do(ctx context.Context, resource string, token fencing.Token, fn func(rw) error) error
	// counter reads a counter outside any fence.
	counter(t *testing.T, resource string) int64
	// log returns the accepted writes in commit order.
	log(t *testing.T) []logEntry
	// current returns the fence of resource (0 if never fenced).
	current(t *testing.T, resource string) fencing.Token
}

// backend makes a fresh store for a test.
type backend struct {
	name string
	open func(t *testing.T) store
}

// backends lists every guard: MemoryGuard, then SQLGuard on each SQL backend.
func backends() []backend {
	bs := []backend{{name: "memory", open: func(*testing.T) store { return newMemStore() }}}
	for _, b := range fencingtest.Backends() {
		bs = append(bs, backend{name: b.Name, open: func(t *testing.T) store { return newSQLStore(t, b) }})
	}
	return bs
}

// forEachBackend runs body as a subtest per backend.
func forEachBackend(t *testing.T, body func(t *testing.T, s store)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { body(t, b.open(t)) })
	}
}

// memStore is a store over a MemoryGuard. fn's writes are buffered and applied when fn
// succeeds, while the fence is held, so that they are all-or-nothing as in a transaction.
type memStore struct {
	guard fencing.MemoryGuard

	mu       sync.Mutex // guards counters and accepted
	counters map[string]int64
	accepted []logEntry
}

func newMemStore() *memStore { return &memStore{counters: make(map[string]int64)} }

type memRW struct {
	s        *memStore
	pending  map[string]int64
	accepted []logEntry
}

func (m *memRW) get(resource string) (int64, error) {
	if v, ok := m.pending[resource]; ok {
		return v, nil
	}
	m.s.mu.Lock()
	defer m.s.mu.Unlock()
	return m.s.counters[resource], nil
}

func (m *memRW) set(resource string, v int64) error { m.pending[resource] = v; return nil }

func (m *memRW) logAccept(resource string, token fencing.Token) error {
	m.accepted = append(m.accepted, logEntry{resource, token})
	return nil
}

func (s *memStore) do(_ context.Context, resource string, token fencing.Token, fn func(rw) error) error {
	return s.guard.Do(resource, token, func() error {
		m := &memRW{s: s, pending: make(map[string]int64)}
		if err := fn(m); err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for r, v := range m.pending {
			s.counters[r] = v
		}
		s.accepted = append(s.accepted, m.accepted...)
		return nil
	})
}

func (s *memStore) counter(_ *testing.T, resource string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[resource]
}

func (s *memStore) log(*testing.T) []logEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]logEntry(nil), s.accepted...)
}

func (s *memStore) current(_ *testing.T, resource string) fencing.Token {
	return s.guard.Current(resource)
}

// sqlStore is a store over an SQLGuard, with its tables in the guarded database.
type sqlStore struct {
	db    *sql.DB
	d     fencing.Dialect
	guard *fencing.SQLGuard
}

func newSQLStore(t *testing.T, b fencingtest.Backend) *sqlStore {
	t.Helper()
	db := b.Open(t)
	ctx := context.Background()
	g, err := fencing.NewSQLGuard(db, b.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	logID := "id INTEGER PRIMARY KEY AUTOINCREMENT"
	if b.Dialect == fencing.Postgres {
		logID = "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	for _, ddl := range []string{
		`CREATE TABLE counters (resource TEXT NOT NULL PRIMARY KEY, value BIGINT NOT NULL)`,
		`CREATE TABLE accept_log (` + logID + `, resource TEXT NOT NULL, token BIGINT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	return &sqlStore{db: db, d: b.Dialect, guard: g}
}

type sqlRW struct {
	ctx context.Context
	tx  *sql.Tx
	d   fencing.Dialect
}

func (x *sqlRW) get(resource string) (int64, error) {
	var v int64
	err := x.tx.QueryRowContext(x.ctx, x.d.Rebind(`SELECT value FROM counters WHERE resource = ?`), resource).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

func (x *sqlRW) set(resource string, v int64) error {
	_, err := x.tx.ExecContext(x.ctx, x.d.Rebind(`INSERT INTO counters (resource, value) VALUES (?, ?)
		ON CONFLICT (resource) DO UPDATE SET value = excluded.value`), resource, v)
	return err
}

func (x *sqlRW) logAccept(resource string, token fencing.Token) error {
	_, err := x.tx.ExecContext(x.ctx, x.d.Rebind(`INSERT INTO accept_log (resource, token) VALUES (?, ?)`), resource, int64(token))
	return err
}

func (s *sqlStore) do(ctx context.Context, resource string, token fencing.Token, fn func(rw) error) error {
	return s.guard.Do(ctx, resource, token, func(tx *sql.Tx) error {
		return fn(&sqlRW{ctx: ctx, tx: tx, d: s.d})
	})
}

func (s *sqlStore) counter(t *testing.T, resource string) int64 {
	t.Helper()
	var v int64
	err := s.db.QueryRow(s.d.Rebind(`SELECT value FROM counters WHERE resource = ?`), resource).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return v
}

func (s *sqlStore) log(t *testing.T) []logEntry {
	t.Helper()
	rows, err := s.db.Query(`SELECT resource, token FROM accept_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []logEntry
	for rows.Next() {
		var e logEntry
		var tok int64
		if err := rows.Scan(&e.resource, &tok); err != nil {
			t.Fatal(err)
		}
		e.token = fencing.Token(tok)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *sqlStore) current(t *testing.T, resource string) fencing.Token {
	t.Helper()
	tok, err := s.guard.Current(context.Background(), resource)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// incr is a fenced read-modify-write: counter += delta, and log the acceptance.
func incr(ctx context.Context, s store, resource string, token fencing.Token, delta int64) error {
	return s.do(ctx, resource, token, func(x rw) error {
		v, err := x.get(resource)
		if err != nil {
			return err
		}
		if err := x.set(resource, v+delta); err != nil {
			return err
		}
		return x.logAccept(resource, token)
	})
}

// logTokens returns the tokens logged for resource, in commit order.
func logTokens(entries []logEntry, resource string) []fencing.Token {
	var out []fencing.Token
	for _, e := range entries {
		if e.resource == resource {
			out = append(out, e.token)
		}
	}
	return out
}

// wantStale checks that err is a *StaleTokenError for the given tokens.
func wantStale(t *testing.T, err error, resource string, offered, current fencing.Token) {
	t.Helper()
	var se *fencing.StaleTokenError
	if !errors.As(err, &se) || !errors.Is(err, fencing.ErrStaleToken) {
		t.Fatalf("err = %v, want a *StaleTokenError", err)
	}
	want := fencing.StaleTokenError{Resource: resource, Offered: offered, Current: current}
	if *se != want {
		t.Fatalf("stale error = %+v, want %+v", *se, want)
	}
}

func fmtTokens(ts []fencing.Token) string { return fmt.Sprint(ts) }
