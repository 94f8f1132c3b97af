//go:build mutants

package mutant

import (
	"fmt"
	"os"
)

// Enabled reports whether this build carries the mutant registry.
const Enabled = true

// active is the selected mutant, read once at start.
var active = os.Getenv(Env)

func init() {
	if active == "" {
		return
	}
	for _, m := range registry {
		if m.Name == active {
			fmt.Fprintf(os.Stderr, "raftlock: MUTANT %s active: %s\n", m.Name, m.Breaks)
			return
		}
	}
	// A misspelt name would silently test the unmutated code and count as a survivor;
	// refusing it would count as a kill. Say so loudly and leave the code unmutated.
	fmt.Fprintf(os.Stderr, "raftlock: unknown mutant %q in %s; no mutant is active\n", active, Env)
	active = ""
}

// Is reports whether the named mutant is the one RAFTLOCK_MUTANT selected.
func Is(name string) bool { return active != "" && name == active }

// Names lists the registered mutants with one line each on what they break.
func Names() []Mutant { return append([]Mutant(nil), registry...) }

// registry is every mutant a hook in the code tests for, grouped as docs/SAFETY.md is.
var registry = []Mutant{
	// reads (§5)
	{"read-skip-verify-leader", "ReadBarrier serves a linearizable read without the VerifyLeader heartbeat round"},
	{"read-skip-applied-wait", "ReadBarrier does not wait for the state machine to apply the commit index"},
	{"follower-local-read", "a follower serves a linearizable read from its own state instead of forwarding it"},
	// commit (§4, §8)
	{"grant-without-commit", "a follower answers an acquire of a lock that looks free locally at once, with a made-up token (the old --unsafe-grant-without-commit)"},
	{"grant-before-commit", "the leader answers an acquire after appending it, without waiting for the commit"},
	{"keepalive-before-commit", "the leader answers keepalives after appending their Renew entry, before it commits"},
	{"release-before-commit", "the leader answers a release after appending it, before it commits"},
	// time (§0, §3)
	{"clock-fast", "the leader's clock runs 1.5x real time"},
	{"clock-wall-base", "a new leader's clock starts from wall-clock time instead of fsm.Time after the barrier"},
	{"clock-own-base", "a new leader's clock starts from its own last reading instead of fsm.Time after the barrier"},
	{"no-barrier", "a new leader starts its clock without the barrier that applies every earlier commit"},
	{"renew-from-apply-time", "a renewal's deadline counts from the entry's (possibly clamped) cluster time, not its stamp"},
	{"expire-one-tick-early", "a deadline expires one millisecond before it is reached"},
	{"time-goes-back", "applying an entry sets cluster time to the entry's now even when that is earlier"},
	{"deadline-wraps", "deadline sums wrap around instead of saturating"},
	// tokens (§2)
	{"handover-token-plus-one", "a handover's token is the previous token + 1 instead of the entry's index"},
	{"regrant-keeps-token", "a handover re-grants the lock with the previous grant's token"},
	{"restore-resets-base", "a backup restore continues the log right after the backup's index (no token gap or floor)"},
	// queue (§1)
	{"handover-skips-head", "a handover grants the second waiter instead of the head"},
	{"abandon-not-dequeued", "an abandoned wait (Dequeue) leaves the lease queued"},
	{"expired-waiters-stay", "a waiter whose wait ended stays in the queue"},
	// release (§1)
	{"release-ignores-token", "a release by the holder's lease succeeds with any token"},
	{"revoke-leaves-locks", "revoking a lease leaves its locks held"},
	{"lease-owner-unchecked", "the state machine lets any caller use a lease another identity created"},
	{"token-delete-keeps-leases", "deleting an ACL token leaves the leases it created alive, queued and holding"},
	// isolation (§13)
	{"identity-quota-ignored", "the state machine grants past an identity's quotas and the cluster-wide limits of version 5"},
	{"history-shares-off", "one identity's churn of new names evicts another identity's lock history (one pool, as before version 5)"},
	{"sweep-in-one-entry", "an entry ends everything that expired, was revoked or lost its token, however much (no budget, as before version 6)"},
	{"lockset-groups-off", "a lockset granted whole is not kept as one group (as before version 7): its locks read as unrelated grants"},
	// primitives (§10)
	{"shared-beside-exclusive", "a shared lock request is granted beside an exclusive holder"},
	{"semaphore-extra-permit", "a semaphore grants one permit more than its limit"},
	{"election-two-leaders", "a campaign takes office while another lease leads"},
	// deadlocks, locksets, maximum holds, lock delays (§11)
	{"deadlock-check-off", "a waiting request that closes a wait-for cycle is queued instead of refused"},
	{"lockset-partial-grant", "a lockset that cannot be granted whole takes the locks that are free"},
	{"max-hold-ignored", "a grant outlives its maximum hold while its lease is kept alive"},
	{"lock-delay-ignored", "a lock whose holder's lease ended is handed over at once despite its lock delay"},
	// holding requests through an election (§12)
	{"hold-never-retries", "a node answers no_leader or unknown_outcome at once instead of holding the request until a leader is known"},
	{"hold-retries-non-idempotent", "a node repeats a call that is not idempotent (a lease created without request_id) after an ambiguous outcome"},
	{"hold-passes-repeat-denial", "a repeat that meets its first attempt's own effect answers not_holder or lease_not_found instead of unknown_outcome"},
	// fencing (§7)
	{"fence-lt", "the SQL fence is raised only for a token strictly above it (< for <=): the holder cannot write twice"},
	{"fence-skip-first-row", "the first fenced write of a resource does not create its fence row"},
	{"header-accepts-missing", "the Fencing-Token middleware lets a request without the header through"},
	{"memory-fence-equal-stale", "the in-memory guard refuses the current token (<= for <)"},
	// snapshot (§6)
	{"restore-drops-waiters", "restoring a snapshot drops every lock's queue"},
	{"restore-drops-time", "restoring a snapshot resets cluster time to zero"},
	{"snapshot-shadow-skips-entry", "the snapshot shadow skips the first entry it replays when more follow"},
}
