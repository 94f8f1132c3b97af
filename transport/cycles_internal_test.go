package transport

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
)

// With every name readable a cycle reads as fsm.DescribeCycle writes it (ACLs off, or a
// caller that reads everything, sees what it saw before); a reader of a/ never sees a name
// under secret/, and sees each name under a/ whole, whatever the names contain: the cycle
// is read from its steps, never cut out of a text.
func TestCycles_DescribeFromSteps(t *testing.T) {
	names := []string{"a/1", "a/2", "secret/payroll", "a/x (held or asked for ahead of it by lease 0011aabb), which waits for lock b/y", "secret/), which waits for lock a/1", " (held or asked for ahead of it by lease ", "lease 00112233 waits for lock ", "z"}
	readsA := func(n string) bool { return strings.HasPrefix(n, "a/") }
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		cycle := make([]fsm.CycleStep, 1+r.IntN(4))
		for i := range cycle {
			for j := range cycle[i].Lease {
				cycle[i].Lease[j] = byte(r.IntN(256))
			}
			cycle[i].Lock = names[r.IntN(len(names))]
		}
		for i := range cycle {
			cycle[i].Holder = cycle[(i+1)%len(cycle)].Lease
		}
		text := fsm.DescribeCycle(cycle)
		if got := describeCycleFor(cycle, func(string) bool { return true }); got != text {
			t.Fatalf("all readable:\n got %s\nwant %s", got, text)
		}
		if got := cycleText(&fsm.RecordedCycle{Steps: cycle}, nil); got != text {
			t.Fatalf("ACLs off:\n got %s\nwant %s", got, text)
		}
		shown := shownCycle(cycle, readsA)
		for i, st := range shown {
			if st.Hidden == readsA(cycle[i].Lock) || !st.Hidden && st.Lock != cycle[i].Lock || strings.Contains(st.Lock, "secret/") {
				t.Fatalf("step %d of %+v shown to an a/ reader as %+v", i, cycle, st)
			}
		}
		if d := cycleText(&fsm.RecordedCycle{Steps: cycle}, readsA); strings.Contains(d, "secret/") {
			t.Fatalf("detail for an a/ reader names a secret/ lock: %s (from %s)", d, text)
		}
	}
}

// A caller that may read a/ only sees the other locks as hiddenLock, and the fingerprint
// of a lease only when a lock it waits for or holds is readable; the cycle still reads as
// a cycle.
func TestCycles_Hidden(t *testing.T) {
	fp := func(b byte) fsm.Fingerprint { return fsm.Fingerprint{b, b, b, b} }
	// A waits for a/2 (held by B), B for secret/x (held by C), C for secret/y (held by
	// D), D for a/1 (held by A).
	cycle := []fsm.CycleStep{{Lease: fp(0xa1), Lock: "a/2"}, {Lease: fp(0xb2), Lock: "secret/x"}, {Lease: fp(0xc3), Lock: "secret/y"}, {Lease: fp(0xd4), Lock: "a/1"}}
	readsA := func(n string) bool { return strings.HasPrefix(n, "a/") }
	got := describeCycleFor(cycle, readsA)
	want := "lease a1a1a1a1 waits for lock a/2 (held or asked for ahead of it by lease b2b2b2b2), which waits for " + hiddenLock + " (held or asked for ahead of it by " + hiddenLease + "), which waits for " + hiddenLock + " (held or asked for ahead of it by lease d4d4d4d4), which waits for lock a/1 (held or asked for ahead of it by lease a1a1a1a1)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if d := cycleText(&fsm.RecordedCycle{Steps: cycle}, readsA); d != want {
		t.Fatalf("history detail %s\nwant %s", d, want)
	}
	wantSteps := []api.CycleStep{{LeaseFingerprint: "a1a1a1a1", Lock: "a/2"}, {LeaseFingerprint: "b2b2b2b2", Hidden: true}, {Hidden: true}, {LeaseFingerprint: "d4d4d4d4", Lock: "a/1"}}
	if got := shownCycle(cycle, readsA); !slices.Equal(got, wantSteps) {
		t.Fatalf("steps %+v\nwant %+v", got, wantSteps)
	}
}

// A refusal recorded before protocol version 8 kept only its text: shown as it is with
// ACLs off, and as a sentence that names nothing with ACLs on, even to a caller that may
// read every name in it (nothing cuts the text back into names).
func TestCycles_TextRecordedBeforeVersion8(t *testing.T) {
	cycle := []fsm.CycleStep{{Lease: fsm.Fingerprint{1}, Lock: "a/1"}, {Lease: fsm.Fingerprint{2}, Lock: "secret/x"}}
	old := &fsm.RecordedCycle{Text: fsm.DescribeCycle(cycle)}
	if got := cycleText(old, nil); got != old.Text {
		t.Fatalf("ACLs off: %s", got)
	}
	if got := cycleText(old, func(string) bool { return true }); got != hiddenCycle {
		t.Fatalf("ACLs on: %s", got)
	}
	if got := cycleText(nil, nil); got != "" {
		t.Fatalf("no cycle: %q", got)
	}
}
