package fencing_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: fencing imports nothing else from raftlock, so that a storage owner can depend
// on it alone (docs/DESIGN.md, "Architecture").
func TestImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/raftlock/raftlock/fencing").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		// internal/mutant (the mutation campaign's hooks) imports only the standard library.
		if strings.HasPrefix(pkg, "github.com/raftlock/raftlock") && pkg != "github.com/raftlock/raftlock/fencing" && pkg != "github.com/raftlock/raftlock/internal/mutant" {
			t.Errorf("fencing depends on %s", pkg)
		}
	}
}
