package verify

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// goal is the stop rule of the fault campaign and of the bank campaign: rounds go on until
// Target lock competitions have been counted, however long that takes on the machine of the
// hour, up to Max. A run that reaches Max (or its last planned round) first has failed, and
// says at what rate it ran and what to change. The earlier rule stopped the rounds at a
// fixed time budget without failing, so the same code passed or fell short of its target
// depending on how loaded the machine was.
type goal struct {
	// Name names the run in the failure message ("three", "bank sqlite").
	Name string
	// Target is the number of competitions to reach; 0 means: run Rounds rounds.
	Target int
	// Rounds is the most rounds to run; 0: no limit.
	Rounds int
	// Max is the longest the rounds may run: no round starts once it is spent. 0: no limit.
	Max time.Duration
	// Knobs says what to change when Max comes first (the environment variables that raise
	// the maximum or lower the target), for the failure message.
	Knobs string
}

// progress is how far a run of rounds got.
type progress struct {
	Rounds       int
	Competitions int
	Elapsed      time.Duration
	// Err says why the goal was not met: nil when it was, or when the caller stopped the
	// rounds itself (an anomaly, a failed test), which the caller reports.
	Err error
}

// PerMinute is the rate the run reached, in competitions per minute.
func (p progress) PerMinute() float64 {
	return perMinute(p.Competitions, p.Elapsed)
}

// perMinute returns n per minute of d (0 for no time).
func perMinute(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Minutes()
}

// drive runs round(0), round(1), ... until g is met, or round returns false (the caller stops),
// or g's maximum or its last round comes first, which sets Err. count returns the competitions
// counted so far and elapsed the time since the rounds began; both are the caller's, so that a
// test can drive the rule with a clock of its own.
func drive(g goal, elapsed func() time.Duration, count func() int, round func(r int) bool) progress {
	var p progress
	for r := 0; ; r++ {
		p.Competitions, p.Elapsed = count(), elapsed()
		if g.Target > 0 && p.Competitions >= g.Target {
			return p
		}
		if g.Rounds > 0 && r >= g.Rounds {
			if g.Target > 0 {
				p.Err = g.shortfall(p, fmt.Sprintf("its last planned round (%d)", g.Rounds))
			}
			return p
		}
		if g.Max > 0 && p.Elapsed >= g.Max {
			p.Err = g.shortfall(p, fmt.Sprintf("the maximum of %v", g.Max))
			return p
		}
		more := round(r)
		p.Rounds++
		if !more {
			p.Competitions, p.Elapsed = count(), elapsed()
			return p
		}
	}
}

// shortfall is the loud failure of a run that hit a limit before its target: what it reached,
// at what rate, how long the target would take at that rate, and what to change.
func (g goal) shortfall(p progress, limit string) error {
	rate := p.PerMinute()
	if g.Target == 0 {
		return fmt.Errorf("%s: %s came after %d rounds in %v (%.0f competitions/minute), before the %d rounds planned; raise %s",
			g.Name, limit, p.Rounds, p.Elapsed.Round(time.Second), rate, g.Rounds, g.Knobs)
	}
	need := "an unknown time (no competition counted)"
	if rate > 0 {
		need = "about " + time.Duration(float64(g.Target)/rate*float64(time.Minute)).Round(time.Minute).String()
	}
	return fmt.Errorf("%s: only %d of %d lock competitions when %s came, after %d rounds in %v: "+
		"%.0f competitions/minute, at which the target needs %s; "+
		"run on a quieter machine (see uptime), or raise %s (and go test -timeout), or lower the target",
		g.Name, p.Competitions, g.Target, limit, p.Rounds, p.Elapsed.Round(time.Second), rate, need, g.Knobs)
}

// envDuration returns the duration in environment variable name ("45m"), or def.
func envDuration(t testing.TB, name string, def time.Duration) time.Duration {
	if s := os.Getenv(name); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 45m (%v)", name, s, err)
		}
		return d
	}
	return def
}

// deadlineMargin is the time kept between a run's maximum and go test's -timeout: the round in
// progress when the maximum comes runs to its end (up to a minute with a snapshot-install
// fault and its checks), and then the summary must still print. A run killed by -timeout
// prints a stack dump and none of its figures.
const deadlineMargin = 3 * time.Minute

// withinDeadline returns max, shortened (and said so in the log) so that it ends
// deadlineMargin before t's -timeout deadline.
func withinDeadline(t testing.TB, max time.Duration) time.Duration {
	dt, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return max
	}
	deadline, ok := dt.Deadline()
	if !ok {
		return max
	}
	left := (time.Until(deadline) - deadlineMargin).Round(time.Second)
	if left < time.Minute {
		left = time.Minute
	}
	if left < max {
		t.Logf("maximum %v shortened to %v: go test's -timeout ends in %v", max, left, time.Until(deadline).Round(time.Second))
		return left
	}
	return max
}

// splitCampaign returns the three-node and five-node parts of the long campaign: the
// three-node part must count 70% of target within 70% of max; the five-node part at least
// the remaining 30% in what is left of max (set when it starts).
func splitCampaign(base campaignConfig, target int, max time.Duration) (three, five campaignConfig) {
	three, five = base, base
	three.Name, three.Nodes, three.Target, three.Max = "three", 3, target*7/10, max*7/10
	five.Name, five.Nodes, five.Seed, five.Target, five.Max = "five", 5, base.Seed+1, target-target*7/10, max-three.Max
	return three, five
}

// campaignSummary renders each part's competitions, duration and rate, and the campaign's.
func campaignSummary(parts []*campaignResult, target int, wall time.Duration) string {
	var b strings.Builder
	total, rounds := 0, time.Duration(0)
	for _, p := range parts {
		total += p.Competitions
		rounds += p.Elapsed
		fmt.Fprintf(&b, "%s nodes: %d lock competitions in %d rounds, %v (%.0f per minute)\n",
			p.Name, p.Competitions, p.Rounds, p.Elapsed.Round(time.Second), p.PerMinute())
	}
	fmt.Fprintf(&b, "campaign total: %d lock competitions (target %d) in %v of rounds, %v in all (%.0f per minute of rounds)",
		total, target, rounds.Round(time.Second), wall.Round(time.Second), perMinute(total, rounds))
	return b.String()
}
