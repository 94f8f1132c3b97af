package fencing_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/raftlock/raftlock/fencing"
)

func ExampleMemoryGuard() {
	var g fencing.MemoryGuard
	balance := 100

	// The holder of token 7 debits 30.
	_ = g.Do("accounts/A", 7, func() error { balance -= 30; return nil })

	// A holder that paused with the older token 6 wakes up and tries the same.
	err := g.Do("accounts/A", 6, func() error { balance -= 30; return nil })
	fmt.Println(err)
	fmt.Println(errors.Is(err, fencing.ErrStaleToken), balance)
	// Output:
	// fencing: stale token 6 for resource "accounts/A": it has already accepted token 7
	// true 70
}

func ExampleSQLGuard() {
	dir, _ := os.MkdirTemp("", "fencing-example")
	defer os.RemoveAll(dir)
	db, err := fencing.OpenSQLite(filepath.Join(dir, "bank.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	ctx := context.Background()
	_, _ = db.ExecContext(ctx, `CREATE TABLE accounts (id TEXT PRIMARY KEY, balance BIGINT NOT NULL)`)
	_, _ = db.ExecContext(ctx, `INSERT INTO accounts VALUES ('A', 100)`)

	guard, _ := fencing.NewSQLGuard(db, fencing.SQLite)
	if err := guard.CreateTable(ctx); err != nil {
		fmt.Println(err)
		return
	}
	debit := func(token fencing.Token, amount int) error {
		return guard.Do(ctx, "accounts/A", token, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - ? WHERE id = 'A'`, amount)
			return err
		})
	}
	fmt.Println(debit(7, 30)) // the current holder
	fmt.Println(debit(6, 30)) // a stale holder: refused, nothing written

	var balance int
	_ = db.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = 'A'`).Scan(&balance)
	fmt.Println(balance)
	// Output:
	// <nil>
	// fencing: stale token 6 for resource "accounts/A": it has already accepted token 7
	// 70
}
