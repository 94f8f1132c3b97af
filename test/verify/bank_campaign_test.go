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
	t.Run("sqlite", func(t *testing.T) {
		cfg := longBankConfig(t, "long")
		checkBank(t, cfg, runBank(t, cfg))
	})
	t.Run("postgres", func(t *testing.T) {
		cfg := longBankConfig(t, "long")
		cfg.DSN = postgresDSN(t)
		checkBank(t, cfg, runBank(t, cfg))
	})
}
