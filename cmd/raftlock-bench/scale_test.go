package main

import (
	"strings"
	"testing"
	"time"
)

// TestProbeMetrics checks the split of the probe's cycles: a cycle that overlaps a node's
// snapshot window counts for that node (and for the stall target), one that overlaps none
// is the baseline.
func TestProbeMetrics(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	nodes := []*node{{ID: "n1"}, {ID: "n2"}}
	snaps := map[string]snapshotInfo{
		"n1": {Started: at(1000), Finished: at(2000)},
		"n2": {Started: at(3000), Finished: at(3500)},
	}
	probe := []probeCycle{
		{at(0), 5 * time.Millisecond},     // outside
		{at(990), 80 * time.Millisecond},  // starts before n1's window, ends in it
		{at(1500), 20 * time.Millisecond}, // inside n1's
		{at(2500), 7 * time.Millisecond},  // outside
		{at(3400), 30 * time.Millisecond}, // inside n2's
		{at(3600), 9 * time.Millisecond},  // outside
	}
	got := map[string]float64{}
	var stall *bool
	for _, m := range probeMetrics(probe, nodes, snaps, "n2") {
		got[m.Name] = m.Value
		if strings.HasPrefix(m.Name, "longest probe cycle during any") {
			stall = m.Met
		}
	}
	want := map[string]float64{
		"longest probe cycle while n1 (follower) wrote its snapshot": 80,
		"longest probe cycle while n2 (leader) wrote its snapshot":   30,
		"longest probe cycle during any snapshot":                    80,
		"probe cycle outside every snapshot":                         9,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
	if stall == nil || *stall {
		t.Errorf("an 80 ms cycle during a snapshot should miss the %d ms target", scaleTargetStallMs)
	}
}
