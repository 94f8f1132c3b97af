package mutants

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// TestKillTable_NamesEveryMutant: kills.txt, which scripts/mutants.sh runs, has exactly
// one line per registered mutant, each naming at least one killing test.
func TestKillTable_NamesEveryMutant(t *testing.T) {
	b, err := os.ReadFile("kills.txt")
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 3 || (f[1] != "quick" && f[1] != "full") || !strings.Contains(f[2], ":") {
			t.Errorf("kills.txt: malformed line %q", line)
		}
		table = append(table, f[0])
	}
	names := registryNames(t)
	sort.Strings(table)
	sort.Strings(names)
	if strings.Join(table, " ") != strings.Join(names, " ") {
		t.Errorf("kills.txt names\n  %v\nthe registry has\n  %v", table, names)
	}
}
