//go:build unix

package testkit

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A port another live process has claimed is skipped; one whose claimant is gone is taken
// over. Without the claims, two test binaries of one `go test` run can hand out the same
// port, and a node restarted on its port finds it taken.
func TestReserve_OtherProcessesPortsAreSkipped(t *testing.T) {
	_, ps, err := net.SplitHostPort(FreePort(t))
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := strconv.Atoi(ps)
	b, err := os.ReadFile(filepath.Join(reserveDir, ps))
	if err != nil || string(b) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("the claim of port %d handed out by this process: %q, %v; want this process's ID", mine, b, err)
	}

	// A port claimed by a live process (init, process 1), then by one that has exited.
	p := mine + 1
	if p >= firstPort+ports {
		p = mine - 1
	}
	name := filepath.Join(reserveDir, strconv.Itoa(p))
	t.Cleanup(func() { os.Remove(name) })
	if err := os.WriteFile(name, []byte("1"), 0o666); err != nil {
		t.Fatal(err)
	}
	if r, ok := reserve(p); ok {
		if r != nil {
			r.Close()
		}
		t.Fatalf("port %d, claimed by the live process 1, was reserved", p)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(strconv.Itoa(gone.Process.Pid)), 0o666); err != nil {
		t.Fatal(err)
	}
	r, ok := reserve(p)
	if !ok || r == nil {
		t.Fatalf("port %d, claimed by process %d that has exited, was not taken over", p, gone.Process.Pid)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("the claim of port %d after its release: %v; want it gone", p, err)
	}
}
