package mutant

import "testing"

// TestIs_OffWithoutSelection: no name is active unless RAFTLOCK_MUTANT selects it, and
// every registered name is unique and described.
func TestIs_OffWithoutSelection(t *testing.T) {
	if Is("") || Is("no-such-mutant") {
		t.Fatal("Is reports an unregistered name as active")
	}
	seen := map[string]bool{}
	for _, m := range Names() {
		if m.Name == "" || m.Breaks == "" || seen[m.Name] {
			t.Errorf("bad or duplicate registry entry %+v", m)
		}
		seen[m.Name] = true
	}
	if Enabled != (len(Names()) > 0) {
		t.Errorf("Enabled = %v with %d names", Enabled, len(Names()))
	}
}
