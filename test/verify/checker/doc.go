// Package checker judges the history of a verification campaign. Each checker returns a
// Verdict with its anomalies and a counterexample for each:
//
//  1. Linearizable: every lock's acquire, release, revoke and status operations of the lin
//     workload, checked with porcupine against a model of a lock with fencing tokens.
//     Ambiguous operations may or may not have taken effect; their return time is the
//     return of the definite revoke of their lease that followed (after which they can no
//     longer take effect), or never.
//  2. Fencing: the ledger's applied charges per account never go back in token, each carries
//     a token granted for the account's lock, the balance is the opening balance minus the
//     applied charges, acknowledged charges are applied, refused ones are not, and no job of
//     the read-modify-write is applied twice.
//  3. Tokens: per lock, grants and reads never see a token go backwards, no two leases share
//     a token, and a lease that released and took a lock again got a larger token.
//  4. Acknowledged: a read that starts after a grant was acknowledged and ends while the
//     holder's lease is protected (below) and before the holder released, shows that grant;
//     a lease read in that window finds the lease.
//  5. Timing: no lock is granted to another lease, and no lease is reported missing, before
//     TTL has passed since the send time of the holder's last answered keepalive (or grant or
//     creation): a lease's protected time is max(send + TTL) over its answered refreshes.
//  6. Liveness is judged by the campaign from its probes (see Liveness).
//
// The package imports only api; the history is a slice of Op, the record type the
// workload itself records (test/verify/workload imports it), read back from JSON where
// the records come from worker processes.
package checker
