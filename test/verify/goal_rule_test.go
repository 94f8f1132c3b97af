package verify

import (
	"strings"
	"testing"
	"time"
)

// slowHour drives g with rounds that each take perRound of a fake clock and count perRound's
// share of rate competitions: the campaign's stop rule on a machine of a known speed, without
// starting a server.
func slowHour(g goal, perRound time.Duration, perRoundCompetitions int) progress {
	var now time.Duration
	count := 0
	return drive(g, func() time.Duration { return now }, func() int { return count }, func(int) bool {
		now += perRound
		count += perRoundCompetitions
		return true
	})
}

// On a slow hour (1,000 competitions a minute) the old rule stopped the three-node part at
// its 11-minute budget with 11,000 competitions and the campaign fell short. The goal rule
// goes on past 11 minutes until the target, and the run passes.
func TestGoal_ContinuesPastTheOldBudgetUntilTheTarget(t *testing.T) {
	g := goal{Name: "three", Target: 20_000, Rounds: 10_000, Max: 45 * time.Minute, Knobs: "RAFTLOCK_VERIFY_MAX"}
	p := slowHour(g, time.Minute, 1000)
	if p.Err != nil {
		t.Fatalf("a run that can reach its target before its maximum failed: %v", p.Err)
	}
	if p.Competitions < g.Target || p.Elapsed <= 11*time.Minute || p.Rounds != 20 {
		t.Fatalf("got %d competitions in %d rounds, %v; want the 20,000 target reached in 20 rounds, past the old 11-minute budget",
			p.Competitions, p.Rounds, p.Elapsed)
	}
	if got := p.PerMinute(); got != 1000 {
		t.Fatalf("rate %.1f competitions/minute, want 1000", got)
	}
}

// A run that cannot reach its target before its maximum fails, and the failure gives the rate,
// the time the target would need at it, and what to change; no round starts after the maximum.
func TestGoal_MaxFailsLoudlyWithTheRate(t *testing.T) {
	g := goal{Name: "campaign three", Target: 70_000, Rounds: 10_000, Max: 30 * time.Minute, Knobs: "RAFTLOCK_VERIFY_MAX"}
	p := slowHour(g, 2*time.Minute, 2000)
	if p.Err == nil {
		t.Fatalf("a run that reached %d of %d competitions at its maximum passed", p.Competitions, g.Target)
	}
	if p.Rounds != 15 || p.Elapsed != 30*time.Minute {
		t.Fatalf("%d rounds in %v: want 15 rounds, the last started before the 30-minute maximum", p.Rounds, p.Elapsed)
	}
	msg := p.Err.Error()
	for _, want := range []string{"campaign three", "30000 of 70000", "1000 competitions/minute", "needs about 1h10m0s", "maximum of 30m0s", "RAFTLOCK_VERIFY_MAX", "-timeout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
}

// The other ends of the rule: a plan that runs out before the target fails; without a target
// the planned rounds run and the maximum still fails loudly; a caller that stops (an anomaly)
// is not a shortfall of the rule's.
func TestGoal_OtherLimits(t *testing.T) {
	p := slowHour(goal{Name: "x", Target: 1_000_000, Rounds: 3, Max: time.Hour}, time.Minute, 10)
	if p.Err == nil || p.Rounds != 3 || !strings.Contains(p.Err.Error(), "last planned round (3)") {
		t.Fatalf("a plan that ran out before the target: %d rounds, err %v", p.Rounds, p.Err)
	}
	if p := slowHour(goal{Name: "short", Rounds: 12, Max: 100 * time.Second}, 5*time.Second, 10); p.Err != nil || p.Rounds != 12 {
		t.Fatalf("a run without a target: %d rounds (want 12), err %v", p.Rounds, p.Err)
	}
	p = slowHour(goal{Name: "short", Rounds: 12, Max: 100 * time.Second, Knobs: "the campaign's Max"}, 10*time.Second, 10)
	if p.Err == nil || p.Rounds != 10 || !strings.Contains(p.Err.Error(), "60 competitions/minute") {
		t.Fatalf("a run without a target that reached its maximum: %d rounds, err %v", p.Rounds, p.Err)
	}
	var now time.Duration
	p = drive(goal{Target: 100, Max: time.Hour}, func() time.Duration { return now }, func() int { return 5 }, func(int) bool { now += time.Minute; return false })
	if p.Err != nil || p.Rounds != 1 || p.Competitions != 5 {
		t.Fatalf("a run its caller stopped: %d rounds, %d competitions, err %v", p.Rounds, p.Competitions, p.Err)
	}
}

// The long campaign's two parts both contribute: 70% of the target and of the maximum for
// three nodes, the rest for five, adding up to the whole.
func TestSplitCampaign(t *testing.T) {
	for _, target := range []int{100_000, 1, 7, 99_999} {
		three, five := splitCampaign(campaignConfig{Seed: 10, Knobs: "K"}, target, 45*time.Minute)
		if three.Target+five.Target != target || three.Target < target*7/10 || (target >= 4 && (three.Target == 0 || five.Target == 0)) {
			t.Errorf("target %d split %d + %d", target, three.Target, five.Target)
		}
		if three.Nodes != 3 || five.Nodes != 5 || three.Seed == five.Seed || three.Knobs != "K" {
			t.Errorf("parts %+v %+v", three, five)
		}
		if three.Max != 31*time.Minute+30*time.Second || three.Max+five.Max != 45*time.Minute {
			t.Errorf("maximum split %v + %v", three.Max, five.Max)
		}
	}
	sum := campaignSummary([]*campaignResult{
		{Name: "three", Rounds: 70, Competitions: 70_000, Elapsed: 14 * time.Minute},
		{Name: "five", Rounds: 40, Competitions: 30_000, Elapsed: 6 * time.Minute},
	}, 100_000, 21*time.Minute)
	for _, want := range []string{"three nodes: 70000 lock competitions in 70 rounds, 14m0s (5000 per minute)", "five nodes: 30000", "(5000 per minute)", "campaign total: 100000", "20m0s of rounds, 21m0s in all"} {
		if !strings.Contains(sum, want) {
			t.Errorf("the summary does not say %q:\n%s", want, sum)
		}
	}
}
