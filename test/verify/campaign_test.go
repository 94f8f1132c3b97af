//go:build verify

package verify

import (
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/verify/nemesis"
)

// TestCampaign is the long campaign (make verify): every fault kind on three nodes until 70% of
// the target of lock competitions (100,000) have been counted, then on five nodes until the
// rest (at least 30%), however long that takes on the machine of the hour, up to a maximum
// (45 minutes in all, 70% of it for the three-node part) after which it fails with the rate it
// reached. On a quiet two-core machine it takes about 17 minutes. Run it without -race: the
// servers' speed is part of what it measures.
//
//	go test -tags verify -count=1 -timeout 60m -run TestCampaign -v ./test/verify/
//
// RAFTLOCK_VERIFY_SEED replays a seed; RAFTLOCK_VERIFY_TARGET changes the target count and
// RAFTLOCK_VERIFY_MAX the maximum (shortened to end 3 minutes before go test's -timeout).
func TestCampaign(t *testing.T) {
	seed := envSeed(t)
	target := envInt(t, "RAFTLOCK_VERIFY_TARGET", 100_000)
	max := withinDeadline(t, envDuration(t, "RAFTLOCK_VERIFY_MAX", 45*time.Minute))
	began := time.Now()
	end := began.Add(max)
	base := campaignConfig{
		Seed: seed, Rounds: 10_000, Kinds: nemesis.AllKinds(),
		MinHold: 2 * time.Second, MaxHold: 5 * time.Second, SnapshotHold: 25 * time.Second,
		Warmup: time.Second, After: time.Second,
		LinWorkers: 6, LinLocks: 3, BankWorkers: 6, BankLocks: 3,
		RWWorkers: 4, RWLocks: 2, SemWorkers: 4, Semaphores: 2, SemLimit: 2, ElectWorkers: 3, Elections: 2,
		SetWorkers: 5, SetLocks: 5, SetSize: 3, SetWaitMs: 1000, SetMaxHoldMs: 300,
		EdgePairs: 1, Edges: edgesConfig,
		BankTTLMs: 1000, BankWaitMs: 1500, PauseProb: 0.2,
		Fenced: true, LivenessSlack: 1500 * time.Millisecond,
		Extra: campaignServeFlags,
		Knobs: "RAFTLOCK_VERIFY_MAX",
	}
	three, five := splitCampaign(base, target, max)
	t.Logf("campaign: target %d lock competitions (three nodes %d, five nodes at least %d), maximum %v (three nodes %v), seed %d",
		target, three.Target, five.Target, max, three.Max, seed)

	var parts []*campaignResult
	t.Run("three", func(t *testing.T) {
		res := runCampaign(t, three)
		parts = append(parts, res)
		report(t, res)
	})
	// The five-node part gets the rest of the target (so that a three-node part that fell
	// short makes the whole fail by its own count, not by a larger five-node part) and the
	// rest of the time.
	total := 0
	for _, p := range parts {
		total += p.Competitions
	}
	if rest := target - total; rest > five.Target {
		five.Target = rest
	}
	five.Max = time.Until(end)
	if five.Max < time.Minute {
		five.Max = time.Minute
	}
	t.Run("five", func(t *testing.T) {
		res := runCampaign(t, five)
		parts = append(parts, res)
		report(t, res)
	})
	sum := campaignSummary(parts, target, time.Since(began))
	t.Logf("%s, seed %d", sum, seed)
	total = 0
	for _, p := range parts {
		total += p.Competitions
	}
	if total < target {
		t.Errorf("only %d lock competitions, want at least %d", total, target)
	}
}

func report(t *testing.T, res *campaignResult) {
	t.Helper()
	t.Logf("\n%s\n%s", res.table(), res.verdictReport())
	for _, name := range checkerOrder {
		if v := res.Verdicts[name]; !v.OK() {
			t.Errorf("%s (history in %s; replay with RAFTLOCK_VERIFY_SEED=%d)", v, res.Artifacts, res.Seed)
		}
	}
	if res.Goal != nil {
		t.Error(res.Goal)
	}
	checkPrims(t, res)
	checkFaults(t, res)
}
