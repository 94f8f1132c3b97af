package harness

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestStopped_SeesSIGSTOP checks that Stopped tells a stopped process from a running one,
// since the bank campaign counts a pause only once /proc shows the worker stopped.
func TestStopped_SeesSIGSTOP(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
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
	for !Stopped(pid) {
		if time.Now().After(deadline) {
			t.Fatal("not reported stopped 5 s after SIGSTOP")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for Stopped(pid) {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("still reported stopped after SIGCONT")
		}
		time.Sleep(time.Millisecond)
	}
}
