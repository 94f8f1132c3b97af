package fsm

import "testing"

// TestLeaseFingerprint_Vector pins the fingerprint's definition (docs/DECISIONS.md), which
// test/verify/workload computes on its own (TestFingerprint_MatchesTheServers).
func TestLeaseFingerprint_Vector(t *testing.T) {
	id, err := ParseLeaseID("00112233445566778899aabbccddeeff")
	if err != nil {
		t.Fatal(err)
	}
	if got := LeaseFingerprint(id).String(); got != "8058afbe" {
		t.Fatalf("LeaseFingerprint = %q, want 8058afbe", got)
	}
}
