package main

import "syscall"

// setParentDeathSignal makes the kernel send SIGKILL to the command if raftlock dies
// (kill -9, OOM), so the command cannot go on running after the lease that protected it
// stops being renewed.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
