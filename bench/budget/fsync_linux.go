package main

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (not its metadata), as the log stores do.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
