package transport

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// With every name readable a cycle reads as fsm.DescribeCycle writes it (ACLs off, or a
// caller that reads everything, sees what it saw before); parseCycle gives back the cycle
// it was written from when no name contains the text's separators; and a reader of a/
// never sees a name under secret/, whatever the names contain.
func TestCycles_DescribeAndParse(t *testing.T) {
	names := []string{"a/1", "a/2", "secret/payroll", "x (held or asked for ahead of it by lease 0011aabb), which waits for lock secret/y", "), which waits for lock ", " (held or asked for ahead of it by lease ", "lease 00112233 waits for lock ", "z"}
	r := rand.New(rand.NewPCG(1, 2))
	unique := 0
	for range 3000 {
		cycle := make([]fsm.CycleStep, 1+r.IntN(4))
		for i := range cycle {
			for j := range cycle[i].Lease {
				cycle[i].Lease[j] = byte(r.IntN(256))
			}
			cycle[i].Lock = names[r.IntN(len(names))]
		}
		text := fsm.DescribeCycle(cycle)
		if got := describeCycleFor(cycle, func(string) bool { return true }); got != text {
			t.Fatalf("all readable:\n got %s\nwant %s", got, text)
		}
		got, ok := parseCycle(text)
		plain := !slices.ContainsFunc(cycle, func(s fsm.CycleStep) bool {
			return strings.Contains(s.Lock, "), which ") || strings.Contains(s.Lock, " (held or")
		})
		if !ok {
			t.Fatalf("parseCycle(%q) failed", text)
		}
		if plain {
			unique++
			if !slices.Equal(got, cycle) {
				t.Fatalf("parseCycle(%q) = %v, want %v", text, got, cycle)
			}
		}
		if d := detailFor(text, func(n string) bool { return strings.HasPrefix(n, "a/") }); strings.Contains(d, "secret/") {
			t.Fatalf("detail for an a/ reader names a secret/ lock: %s (from %s)", d, text)
		}
	}
	if unique < 300 {
		t.Fatalf("only %d of 3000 cycles without separators in names", unique)
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
	got := describeCycleFor(cycle, func(n string) bool { return strings.HasPrefix(n, "a/") })
	want := "lease a1a1a1a1 waits for lock a/2 (held or asked for ahead of it by lease b2b2b2b2), which waits for " + hiddenLock + " (held or asked for ahead of it by " + hiddenLease + "), which waits for " + hiddenLock + " (held or asked for ahead of it by lease d4d4d4d4), which waits for lock a/1 (held or asked for ahead of it by lease a1a1a1a1)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if d := detailFor(fsm.DescribeCycle(cycle), func(n string) bool { return strings.HasPrefix(n, "a/") }); d != want {
		t.Fatalf("history detail %s\nwant %s", d, want)
	}
}
