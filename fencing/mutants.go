package fencing

import (
	"context"
	"database/sql"
	"strings"
)

// The helpers of the fencing mutants of internal/mutant. Only their hooks call them, so a
// build without the mutants tag drops them.

// mutantStrictRaise returns a copy of g whose raise statement uses < where it needs <=.
func (g *SQLGuard) mutantStrictRaise() *SQLGuard {
	c := *g
	c.raise = strings.Replace(c.raise, "<=", "<", 1)
	return &c
}

// mutantFenceExists reports whether resource has a fence row.
func (g *SQLGuard) mutantFenceExists(ctx context.Context, tx *sql.Tx, resource string) bool {
	var cur int64
	return tx.QueryRowContext(ctx, g.current, resource).Scan(&cur) == nil
}
