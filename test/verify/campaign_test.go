//go:build verify

package verify

import (
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/verify/nemesis"
)

// TestCampaign is the long campaign (make verify): every fault kind on three nodes, then on
// five, until at least 100,000 lock competitions have been counted, in under 20 minutes on
// two cores. Run it without -race: the servers' speed is part of what it measures.
//
//	go test -tags verify -timeout 30m -run TestCampaign -v ./test/verify/
//
// RAFTLOCK_VERIFY_SEED replays a seed; RAFTLOCK_VERIFY_TARGET changes the target count.
func TestCampaign(t *testing.T) {
	seed := envSeed(t)
	target := envInt(t, "RAFTLOCK_VERIFY_TARGET", 100_000)
	base := campaignConfig{
		Seed: seed, Rounds: 10_000, Kinds: nemesis.AllKinds(),
		MinHold: 2 * time.Second, MaxHold: 5 * time.Second, SnapshotHold: 25 * time.Second,
		Warmup: time.Second, After: time.Second,
		LinWorkers: 6, LinLocks: 3, BankWorkers: 6, BankLocks: 3,
		RWWorkers: 4, RWLocks: 2, SemWorkers: 4, Semaphores: 2, SemLimit: 2, ElectWorkers: 3, Elections: 2,
		BankTTLMs: 1000, BankWaitMs: 1500, PauseProb: 0.2,
		Fenced: true, LivenessSlack: 1500 * time.Millisecond,
		Extra: []string{"--snapshot-threshold", "1024", "--trailing-logs", "256"},
	}
	three := base
	three.Name, three.Nodes, three.Budget, three.Target = "three", 3, 11*time.Minute, target*7/10
	five := base
	five.Name, five.Nodes, five.Seed, five.Budget = "five", 5, seed+1, 6*time.Minute

	var total int
	var results []*campaignResult
	t.Run("three", func(t *testing.T) {
		res := runCampaign(t, three)
		results = append(results, res)
		total += res.Competitions
		report(t, res)
	})
	five.Target = target - total
	if five.Target < target*3/10 {
		five.Target = target * 3 / 10
	}
	t.Run("five", func(t *testing.T) {
		res := runCampaign(t, five)
		results = append(results, res)
		total += res.Competitions
		report(t, res)
	})
	t.Logf("campaign total: %d lock competitions (target %d), seed %d", total, target, seed)
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
	checkPrims(t, res)
	checkFaults(t, res)
}
