package mutants

import (
	"flag"
	"fmt"
	"os"
	"path"
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

// safetyStart and safetyEnd mark the mutant table in docs/SAFETY.md.
const (
	safetyStart = "<!-- mutant table: made from test/mutants/kills.txt by `go test ./test/mutants -run TestKillTable_SafetyDocMatches -update` -->"
	safetyEnd   = "<!-- end of the mutant table -->"
)

var update = flag.Bool("update", false, "rewrite docs/SAFETY.md's mutant table from kills.txt")

// safetyTable renders kills.txt as docs/SAFETY.md's table: each mutant, what it breaks
// and the step of the argument (the line's "# step | what" tail), and its killing tests in
// the order scripts/mutants.sh tries them.
func safetyTable(t *testing.T, kills string) string {
	var b strings.Builder
	b.WriteString("| mutant | what it breaks | step | killed by (tried in this order) |\n|---|---|---|---|\n")
	for _, line := range strings.Split(kills, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		run, doc, ok := strings.Cut(line, "#")
		step, what, ok2 := strings.Cut(doc, "|")
		f := strings.Fields(run)
		if !ok || !ok2 || len(f) < 3 {
			t.Fatalf("kills.txt: line %q lacks its \"# step | what it breaks\" tail", line)
		}
		var tests []string
		for _, c := range f[2:] {
			pkg, re, _ := strings.Cut(c, ":")
			tests = append(tests, "`"+path.Base(pkg)+"."+strings.Trim(re, "^$")+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f[0], strings.TrimSpace(what), strings.TrimSpace(step), strings.Join(tests, ", "))
	}
	return b.String()
}

// TestKillTable_SafetyDocMatches: the mutant table in docs/SAFETY.md is kills.txt's, not
// one written by hand (run with -update to rewrite it).
func TestKillTable_SafetyDocMatches(t *testing.T) {
	kills, err := os.ReadFile("kills.txt")
	if err != nil {
		t.Fatal(err)
	}
	const doc = "../../docs/SAFETY.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, safetyStart), strings.Index(s, safetyEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no mutant table between %q and %q", doc, safetyStart, safetyEnd)
	}
	want := safetyTable(t, string(kills))
	got := s[i+len(safetyStart)+1 : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(s[:i+len(safetyStart)+1]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/SAFETY.md's mutant table is not kills.txt's; rewrite it with\n\tgo test ./test/mutants -run TestKillTable_SafetyDocMatches -update")
}
