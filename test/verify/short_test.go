package verify

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/verify/nemesis"
	"github.com/raftlock/raftlock/test/verify/workload"
)

// shortConfig is the campaign that runs in `make test`: one round of each fault except the
// snapshot install (which needs the leader's 10-20 s snapshot interval), with the race
// detector's slower servers in mind.
func shortConfig(t *testing.T) campaignConfig {
	var kinds []nemesis.Kind
	for _, k := range nemesis.AllKinds() {
		if k != nemesis.SnapshotInstall { // needs 25 s; the long campaign runs it
			kinds = append(kinds, k)
		}
	}
	if s := os.Getenv("RAFTLOCK_VERIFY_FAULTS"); s != "" {
		var err error
		if kinds, err = nemesis.ParseKinds(s); err != nil {
			t.Fatal(err)
		}
	}
	return campaignConfig{
		Name: "short", Seed: envSeed(t), Nodes: envInt(t, "RAFTLOCK_VERIFY_NODES", 3), Rounds: len(kinds), Max: 100 * time.Second, Kinds: kinds,
		MinHold: 1500 * time.Millisecond, MaxHold: 2500 * time.Millisecond, SnapshotHold: 25 * time.Second,
		Warmup: time.Second, After: 500 * time.Millisecond,
		LinWorkers: 4, LinLocks: 2, BankWorkers: 4, BankLocks: 2,
		RWWorkers: 3, RWLocks: 1, SemWorkers: 3, Semaphores: 1, SemLimit: 2, ElectWorkers: 3, Elections: 1,
		SetWorkers: 4, SetLocks: 4, SetSize: 2, SetWaitMs: 1000, SetMaxHoldMs: 300,
		EdgePairs: 1, Edges: edgesConfig,
		BankTTLMs: 1000, BankWaitMs: 1500, PauseProb: 0.3,
		Fenced: true, LivenessSlack: 1500 * time.Millisecond,
		Extra: campaignServeFlags,
	}
}

// edgesConfig is the edge workers' configuration in the short campaign and the negative
// controls. The cycle's waits of 2 s leave 1.75 s (2 × 2 s − 2 s − checker.QueueCommit)
// for both requests' latency and the skew of their calls before a server that queues the
// cycle escapes the deadlocks checker. A delay of 1 s is far above the few milliseconds in which a server that ignores it hands
// the lock over; the slack covers a fault's election.
var edgesConfig = workload.EdgesConfig{CycleWaitMs: 2000, DelayMs: 1000, ExpireTTLMs: 1000, MaxHoldMs: 300, SlackMs: 3000}

// TestShortCampaign runs the short campaign and fails on any anomaly.
func TestShortCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes; skipped with -short")
	}
	res := runCampaign(t, shortConfig(t))
	t.Logf("\n%s\n%s", res.table(), res.verdictReport())
	for _, name := range checkerOrder {
		if v := res.Verdicts[name]; !v.OK() {
			t.Errorf("%s (history in %s; replay with RAFTLOCK_VERIFY_SEED=%d)", v, res.Artifacts, res.Seed)
		}
	}
	if res.Grants == 0 || res.Competitions == 0 || res.Pauses == 0 {
		t.Errorf("the workload did too little: %d grants, %d competitions, %d pauses", res.Grants, res.Competitions, res.Pauses)
	}
	if res.Goal != nil {
		t.Error(res.Goal)
	}
	checkPrims(t, res)
	checkFaults(t, res)
	if res.Net.Unknown > 0 {
		t.Logf("warning: %d proxied connections had an unidentified source", res.Net.Unknown)
	}
}

// checkPrims fails t when a feature the checkers judge did not happen in the campaign
// (missingFeatures).
func checkPrims(t testing.TB, res *campaignResult) {
	t.Helper()
	for _, m := range missingFeatures(res) {
		t.Error(m)
	}
}

// missingFeatures says what the campaign did too little of: a checker that met no
// deadlock answer, no maximum hold ending a grant, no lock delay or no leader change
// judged nothing of it, and a mutant of that mechanism would pass. Each count is printed
// in the campaign's table.
func missingFeatures(res *campaignResult) []string {
	var out []string
	for _, w := range primWorkloads {
		if p := res.Prims[w]; p.Grants == 0 || p.Refusals == 0 {
			out = append(out, fmt.Sprintf("the %s workload did too little: %d grants, %d refusals", primNames[w], p.Grants, p.Refusals))
		}
	}
	need := []struct {
		what string
		n    int
	}{
		{"shared grants", res.Prims["rw"].SharedGrants},
		{"semaphore permits granted", res.Prims["sem"].Grants},
		{"election leader changes", res.Prims["elect"].LeaderChanges},
		{"locksets granted whole", res.Sets.Sets},
		{"lockset or lock waits refused (deadlock or timeout)", res.Sets.Deadlocks + res.Sets.Timeouts},
		{"deadlock answers", res.Sets.Deadlocks},
		{"grants ended by their maximum hold", res.Sets.MaxHoldEnded},
		{"grants that waited out a lock delay", res.Sets.DelayWaits},
	}
	for _, f := range need {
		if f.n == 0 {
			out = append(out, fmt.Sprintf("the campaign never saw %s: the checkers judged none, so a mutant of it would pass", f.what))
		}
	}
	return out
}
