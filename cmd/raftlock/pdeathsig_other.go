//go:build unix && !linux

package main

import "syscall"

// setParentDeathSignal does nothing where the kernel has no parent-death signal: if
// raftlock dies, the command runs on without its lock until it ends.
func setParentDeathSignal(*syscall.SysProcAttr) {}
