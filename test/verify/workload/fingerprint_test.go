package workload

import "testing"

// The workload's own fingerprint must be the server's: fsm.TestLeaseFingerprint_Vector pins
// the state machine's to the same vector, so a change on either side fails one of them.
func TestFingerprint_MatchesTheServers(t *testing.T) {
	if got := fingerprint("00112233445566778899aabbccddeeff"); got != "8058afbe" {
		t.Fatalf("fingerprint = %q, want 8058afbe (fsm.LeaseFingerprint of the same ID)", got)
	}
	if got := fingerprint("not-a-lease"); got != "" {
		t.Fatalf("fingerprint of a non-ID = %q, want \"\"", got)
	}
}
