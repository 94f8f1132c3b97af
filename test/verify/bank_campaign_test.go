//go:build verify

package verify

import (
	"testing"
	"time"
)

// longBankConfig is the bank campaign of `make verify`: 96 worker processes on 16 locks
// until the bank workload alone has made 100,000 lock competitions, one hold in 64 stopped
// with SIGSTOP for 1.5 TTL right before its write. The rounds go on until the target however
// long that takes, up to RAFTLOCK_BANK_MAX (default 30 minutes per ledger, about three
// times a quiet machine's run, and within go test's -timeout): a run that reaches it first
// fails with its rate. The workers are many because a hold is
// latency-bound (a few commits and two ledger writes), not CPU-bound: on two cores 96
// workers make about 220 competitions a second, 32 about 70.
func longBankConfig(t *testing.T, name string) bankConfig {
	return bankConfig{
		Name: name, Seed: envSeed(t), Nodes: 3,
		Workers: envInt(t, "RAFTLOCK_BANK_WORKERS", 96), Locks: envInt(t, "RAFTLOCK_BANK_LOCKS", 16),
		TTLMs: 1000, WaitMs: 2000, PauseEvery: 64, PauseFactor: 1.5,
		Round: 60 * time.Second, Target: envInt(t, "RAFTLOCK_BANK_TARGET", 100_000), Fenced: true,
		Max:   withinDeadline(t, envDuration(t, "RAFTLOCK_BANK_MAX", 30*time.Minute)),
		Knobs: "RAFTLOCK_BANK_MAX (or RAFTLOCK_BANK_WORKERS: the rate is latency-bound)",
	}
}

// TestBankCampaign is the seed's benchmark counted honestly: the fenced-ledger workload
// alone, in separate worker processes, makes at least 100,000 lock competitions (acquires
// that found the lock held or queued behind another lease), with a real SIGSTOP longer than
// the TTL before the write of more than 1% of holds, and the ledger accepts zero stale
// writes and zero duplicate charges, on SQLite and then on PostgreSQL
// (RAFTLOCK_TEST_POSTGRES_DSN; skipped loudly when unset). Run it without -race:
//
//	go test -tags verify -count=1 -timeout 75m -run '^TestBankCampaign$' -v ./test/verify/
//
// RAFTLOCK_BANK_TARGET changes the target, RAFTLOCK_BANK_MAX the maximum; RAFTLOCK_VERIFY_SEED replays the workers' choices.
func TestBankCampaign(t *testing.T) {
	onLedgers(t, "", func(t *testing.T) bankConfig { return longBankConfig(t, "long") }, runAndCheck)
}

// seedBankConfig is the seed's headline on its own terms: holders frozen for 10 s, longer
// than their 2 s lease, right before their write, by stopping a whole worker process that
// runs many workers at once, as a JVM's stop-the-world pause freezes all its threads. 8
// processes of 12 workers each compete for 16 locks; a hold in 200 of each worker stops its
// process (every worker of it) for 5 TTLs = 10 s, so that the workers frozen are more than
// 1% of the holds. Each round starts new processes, so a worker pauses only when its offset
// falls within the holds it makes in one round: one in 1,200 froze 0.36% in a 60 s round;
// one in 300 froze 2.47% on SQLite and 1.10% on a slower PostgreSQL run (load 23-26). The run goes on to 100,000 lock competitions, up to
// RAFTLOCK_SEED_MAX (default 30 minutes per ledger).
func seedBankConfig(t *testing.T, name string) bankConfig {
	return bankConfig{
		Name: name, Seed: envSeed(t), Nodes: 3,
		Workers: envInt(t, "RAFTLOCK_SEED_PROCESSES", 8), Threads: envInt(t, "RAFTLOCK_SEED_THREADS", 12),
		Locks: envInt(t, "RAFTLOCK_SEED_LOCKS", 16),
		TTLMs: 2000, WaitMs: 3000, PauseEvery: envInt(t, "RAFTLOCK_SEED_PAUSE_EVERY", 200), PauseFactor: 5,
		Round: 60 * time.Second, Target: envInt(t, "RAFTLOCK_SEED_TARGET", 100_000), Fenced: true,
		Max:   withinDeadline(t, envDuration(t, "RAFTLOCK_SEED_MAX", 30*time.Minute)),
		Knobs: "RAFTLOCK_SEED_MAX (or RAFTLOCK_SEED_THREADS: the rate is latency-bound)",
	}
}

// TestSeedCampaign runs seedBankConfig on SQLite and on PostgreSQL
// (RAFTLOCK_TEST_POSTGRES_DSN), each to 100,000 competitions with zero stale writes
// accepted and zero duplicate charges, then one round of the same shape on each against a
// ledger without fencing, which must show both. Run it without -race:
//
//	go test -tags verify -count=1 -timeout 90m -run '^TestSeedCampaign$' -v ./test/verify/
func TestSeedCampaign(t *testing.T) {
	onLedgers(t, "", func(t *testing.T) bankConfig { return seedBankConfig(t, "seed") }, runAndCheck)
	onLedgers(t, "nofence-", func(t *testing.T) bankConfig { return seedBankConfig(t, "seed-nofence") }, checkBankUnfenced)
}
