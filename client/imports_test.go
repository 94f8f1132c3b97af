package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps the client free of server packages: a worker that depends on it must
// not pull in raft, BoltDB or the state machine.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/raftlock/raftlock/client").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/raftlock/raftlock/client": true,
		"github.com/raftlock/raftlock/api":    true,
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/raftlock/raftlock/") && !allowed[pkg] {
			t.Errorf("client depends on %s", pkg)
		}
		if strings.HasPrefix(pkg, "github.com/hashicorp/raft") {
			t.Errorf("client depends on %s", pkg)
		}
	}
}
