package mutants

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// registryNames reads the mutant names from the registry's source, which a build without
// the mutants tag does not compile.
func registryNames(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "internal", "mutant", "mutant_on.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\{"([a-z0-9-]+)",`).FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	if len(names) < 20 {
		t.Fatalf("found %d mutant names in mutant_on.go; the pattern no longer matches the registry", len(names))
	}
	return names
}

// build builds cmd/raftlock with extra go build flags and returns its bytes and symbols.
func build(t *testing.T, flags ...string) (bin []byte, syms string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "raftlock")
	args := append(append([]string{"build", "-o", out}, flags...), "./cmd/raftlock")
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, b)
	}
	nm, err := exec.Command("go", "tool", "nm", out).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, nm)
	}
	bin, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return bin, string(nm)
}

// mutantSymbols returns the symbol lines that belong to the mutant registry or to a
// helper that only mutant hooks call (their names carry "mutant").
func mutantSymbols(nm string) []string {
	var out []string
	for _, line := range strings.Split(nm, "\n") {
		if strings.Contains(strings.ToLower(line), "mutant") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// TestDefaultBinaryHasNoMutants: the release build of raftlock contains no mutant name,
// no registry or helper symbol, and no unsafe flag; the tagged build contains them all
// (so the check would see them if the tag leaked).
func TestDefaultBinaryHasNoMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("builds raftlock twice; skipped with -short")
	}
	names := registryNames(t)
	bin, nm := build(t)
	if syms := mutantSymbols(nm); len(syms) > 0 {
		t.Errorf("the default binary has mutant symbols:\n%s", strings.Join(syms, "\n"))
	}
	for _, s := range append([]string{"RAFTLOCK_MUTANT", "unsafe-grant-without-commit"}, names...) {
		if bytes.Contains(bin, []byte(s)) {
			t.Errorf("the default binary contains the string %q", s)
		}
	}

	tbin, tnm := build(t, "-tags", "mutants")
	if !strings.Contains(tnm, "internal/mutant.Is") && !strings.Contains(tnm, "internal/mutant.registry") {
		t.Errorf("the tagged binary has no registry symbol; the symbol check proves nothing")
	}
	for _, s := range append([]string{"RAFTLOCK_MUTANT"}, names...) {
		if !bytes.Contains(tbin, []byte(s)) {
			t.Errorf("the tagged binary lacks the string %q; the byte check proves nothing", s)
		}
	}
}
