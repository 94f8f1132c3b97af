// Package workload runs the clients of a verification campaign and records every operation
// they perform, with its call and return times on one monotonic clock (Clock; for records
// made in several processes, the machine's CLOCK_MONOTONIC through NewSharedClock):
//
//   - lin workers (RunLin) take, release and read locks with long leases that never expire,
//     for the linearizability checker;
//   - bank workers (RunBank) hold locks with short leases kept alive in the background, pause
//     (all activity, keepalives included) for longer than their TTL, and while holding a lock
//     do a fenced read-modify-write on the ledger;
//   - RunHolds is the bank workload of the worker processes (test/verify/bankworker): a
//     lease kept alive, a fenced claim whose answer tells the next job, the job write, and a
//     release, with a pause (a SIGSTOP by the harness) right before the write of some holds;
//   - an observer (RunObserver) reads the status of the bank's locks;
//   - a probe (Probe) measures how long a lock takes to become available after a fault heals.
//
// Requests use raw HTTP with the api types, so the workload decides what an answer means: a
// 2xx or 4xx answer is definite; a 5xx answer, a timeout or a broken connection after the
// request was sent is ambiguous (the operation may or may not have taken effect); a refused
// connection is definite (nothing was sent).
package workload
