package main

import (
	"os"
	"os/exec"
)

// prepareCommand does nothing on Windows, which has no process groups to signal.
func prepareCommand(*exec.Cmd) {}

// signalCommand kills the command: Windows processes cannot be sent SIGTERM, so a lost
// lock or a forwarded signal ends the command at once (its children are not reached).
func signalCommand(cmd *exec.Cmd, _ os.Signal) { _ = cmd.Process.Kill() }
