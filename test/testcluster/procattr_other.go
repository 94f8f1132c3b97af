//go:build !linux

package testcluster

import "syscall"

// killWithParent does nothing: only Linux sends a signal when the parent dies.
func killWithParent(*syscall.SysProcAttr) {}
