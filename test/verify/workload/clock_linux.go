package workload

import (
	"syscall"
	"unsafe"
)

// clockMonotonic is Linux's CLOCK_MONOTONIC.
const clockMonotonic = 1

// MonotonicNow reads the machine's CLOCK_MONOTONIC in nanoseconds. Go's own monotonic
// readings count from the start of each process, so they cannot order events of two
// processes; this clock is one for the whole machine, never steps, and keeps running while
// a process is stopped by SIGSTOP.
func MonotonicNow() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic("workload: clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}
