package harness

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testkit"
)

// TestStopped_SeesSIGSTOP checks that Stopped tells a stopped process from a running one,
// since the bank campaign counts a pause only once /proc shows the worker stopped.
func TestStopped_SeesSIGSTOP(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		testkit.Unavailable(t, "no sleep command: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if Stopped(pid) {
		t.Fatal("a running process is reported stopped")
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	if !testkit.Poll(time.Until(deadline), time.Millisecond, func() bool { return Stopped(pid) }) {
		t.Fatal("not reported stopped 5 s after SIGSTOP")
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !testkit.Poll(time.Until(deadline.Add(5*time.Second)), time.Millisecond, func() bool { return !Stopped(pid) }) {
		t.Fatal("still reported stopped after SIGCONT")
	}
}
