//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// prepareCommand puts the command in a process group of its own, so that raftlock can
// stop it together with everything it started.
func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalCommand sends sig to the command's whole process group (its ID is the command's
// PID, thanks to Setpgid).
func signalCommand(cmd *exec.Cmd, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(-cmd.Process.Pid, s)
	}
}
