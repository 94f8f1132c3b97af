package testcluster

import "syscall"

// killWithParent has the kernel send the process SIGKILL when the test process dies.
func killWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
