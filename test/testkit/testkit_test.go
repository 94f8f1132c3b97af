package testkit

import "testing"

// Ports handed out by FreeAddr are never handed out twice in one process (until half the
// range is used): 5,000 random picks from 12,768 ports would repeat one almost surely
// without the record of what was picked.
func TestFreeAddr_NeverTheSamePortTwice(t *testing.T) {
	// From an empty record, as in a fresh process: a run before this one (-count) may
	// have left the record near the half of the range where it is forgotten.
	handedOut.Lock()
	forgetLocked()
	handedOut.Unlock()
	seen := map[string]bool{}
	for i := 0; i < 5000; i++ {
		a := FreePort(t)
		if seen[a] {
			t.Fatalf("pick %d: %s handed out twice", i, a)
		}
		seen[a] = true
	}
}
