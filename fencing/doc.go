// Package fencing gives storage owners what they need to reject stale lock holders: fencing
// tokens, a fence table for SQL databases, an in-memory guard, and an HTTP header convention.
//
// # Why
//
// A lock service cannot promise that a client which believes it holds a lock still holds it:
// the client can pause (a GC, a swap storm, a VM migration) for longer than its lease, lose the
// lock, and wake up still believing it owns it. raftlock hands out a fencing token with every
// grant, a number that strictly increases per lock. The storage, not the client, makes the
// final check: it accepts a write for a resource only if the write's token is at least every
// token it has already accepted for that resource, atomically with the write. A holder that
// wakes up with an old token is refused, and nothing it sent is applied.
//
// The comparison is "at least", not "greater than": the current holder may write many times
// with the same token.
//
// # What fencing does not do
//
// Fencing stops stale writers. It does not stop the same request from being processed twice
// by two successive holders: if holder A charges a card and then loses its lock before it can
// record that the job is done, holder B, with a newer token, will legitimately charge again.
// Each write was made by the then-current holder, so fencing accepts both. A payment therefore
// also needs an idempotency key (a charge id that the storage records in the same
// transaction and refuses to apply twice). The ledger demo in this repository uses both.
//
// # Pieces
//
//   - [Token], [ParseToken]: the token type and its decimal text form.
//   - [SQLGuard]: runs a caller's writes in one database transaction that first raises the
//     resource's fence in the fences table; works with SQLite ([OpenSQLite], driver
//     modernc.org/sqlite) and PostgreSQL (driver github.com/jackc/pgx/v5/stdlib).
//   - [MemoryGuard]: the same rule for state kept in memory.
//   - [RequireToken], [TokenFromHeader], [WriteStaleToken]: the Fencing-Token request header and
//     the JSON errors that go with it.
//
// Guards accept tokens from 1 to [MaxToken] (math.MaxInt64): 0 is never issued by raftlock
// (it is what a caller that forgot to set the token sends), and SQL BIGINT cannot store more.
//
// This package imports nothing else from raftlock, so a storage owner can depend on it alone.
package fencing
