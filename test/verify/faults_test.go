package verify

import (
	"strings"
	"testing"

	"github.com/raftlock/raftlock/test/verify/checker"
	"github.com/raftlock/raftlock/test/verify/nemesis"
)

// A campaign whose fault could not be injected, or that never ran a kind it was asked
// for, has not tested what it claims: checkFaults must fail it.
func TestCampaignResult_FaultProblems(t *testing.T) {
	clean := &campaignResult{Asked: []nemesis.Kind{nemesis.KillLeader, nemesis.PauseLeader},
		Faults: map[nemesis.Kind]int{nemesis.KillLeader: 1, nemesis.PauseLeader: 2}}
	if p := clean.faultProblems(); len(p) != 0 {
		t.Fatalf("a campaign that ran every kind it was asked for reports %v", p)
	}
	if got, want := clean.faultCounts(), "kill-leader=1 pause-leader=2"; got != want {
		t.Fatalf("faultCounts = %q, want %q", got, want)
	}
	broken := &campaignResult{Asked: []nemesis.Kind{nemesis.KillLeader, nemesis.PauseLeader, nemesis.PauseLeader},
		Faults:      map[nemesis.Kind]int{nemesis.KillLeader: 1},
		FaultErrors: []string{"round 1: inject pause-leader: harness: stopped signal to n1: operation not permitted"}}
	p := strings.Join(broken.faultProblems(), "\n")
	if !strings.Contains(p, "inject pause-leader") || strings.Count(p, "pause-leader was asked for but never ran") != 1 {
		t.Fatalf("problems of a campaign whose pauses failed:\n%s", p)
	}
	if got, want := broken.faultCounts(), "kill-leader=1 pause-leader=0"; got != want {
		t.Fatalf("faultCounts = %q, want %q", got, want)
	}
	broken.Verdicts = map[string]*checker.Verdict{}
	for _, name := range checkerOrder {
		broken.Verdicts[name] = &checker.Verdict{Checker: name}
	}
	if tab := broken.table(); !strings.Contains(tab, "| pause-leader | 0 |") {
		t.Fatalf("the table hides the kind that never ran:\n%s", tab)
	}
}

// A snapshot-install fault that installed no snapshot did not test what it is for (the
// campaign of 2026-12-07 on raft-wal's 64 MiB segments: three injected, none installed).
func TestCampaignResult_SnapshotInstallThatInstalledNothing(t *testing.T) {
	res := &campaignResult{Asked: []nemesis.Kind{nemesis.SnapshotInstall},
		Faults: map[nemesis.Kind]int{nemesis.SnapshotInstall: 3}}
	if p := strings.Join(res.faultProblems(), "\n"); !strings.Contains(p, "snapshot-install ran 3 times but no node installed a snapshot") {
		t.Fatalf("problems of a campaign whose snapshot-install faults installed nothing: %q", p)
	}
	res.Snapshots = 1
	if p := res.faultProblems(); len(p) != 0 {
		t.Fatalf("a campaign that installed a snapshot reports %v", p)
	}
}
