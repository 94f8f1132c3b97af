//go:build !linux

package workload

import "time"

var processStart = time.Now()

// MonotonicNow off Linux counts from this process's start, so it orders the events of one
// process only: the multi-process bank workload runs on Linux.
func MonotonicNow() int64 { return int64(time.Since(processStart)) }
