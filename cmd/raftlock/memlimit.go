package main

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// memoryUnits are the suffixes --memory-limit takes: the ones GOMEMLIMIT takes, so that an
// operator can move a value between the two unchanged.
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseMemoryLimit reads a --memory-limit value: "" or "0" (leave the Go runtime's limit,
// which GOMEMLIMIT sets, alone) or a whole number of bytes with an optional B, KiB, MiB,
// GiB or TiB suffix ("900MiB"). It returns 0 for "leave alone".
func parseMemoryLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	num, shift := s, uint(0)
	for _, u := range memoryUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 63)
	if err != nil || n == 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("--memory-limit %q is not a size: give a whole number with B, KiB, MiB, GiB or TiB (for example 900MiB), or 0 for none", s)
	}
	return int64(n << shift), nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit when limit > 0 and returns the
// limit in force afterwards. Why a soft limit: between collections the heap grows by the
// GC percent over the live heap (by half at serve's 50, to twice it at Go's 100), so a
// node's peak follows its state; under a limit the collector runs earlier instead, to
// hold a budget whatever the state (docs/OPERATIONS.md, sizing).
func applyMemoryLimit(limit int64) int64 {
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return debug.SetMemoryLimit(-1)
}

// serveGCPercent is the collector's target percent in raftlock serve when GOGC is not set,
// in place of Go's 100. A node's heap is mostly its live state, which lives as long as the
// locks do, and at GOGC=100 the heap grows to twice it between collections: 1.2 GiB on the
// leader at 1,000,000 locks against a live state of about 500 MB. At 50 it grows by half:
// 844 MiB on that leader, for a fill about a tenth slower (docs/PERFORMANCE.md, round
// five, "The collector's target"). Prometheus sets its own default (75) for the same
// reason. A node holding little state is not touched: --gc-headroom keeps its percent high.
const serveGCPercent = 50

// applyGCPercent sets serveGCPercent as the collector's target unless the environment
// sets GOGC, which then rules as it does for any Go program, and returns the percent in
// force and whether it was GOGC's.
func applyGCPercent(lookupEnv func(string) (string, bool)) (percent int, fromEnv bool) {
	if _, set := lookupEnv("GOGC"); set {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p, true
	}
	debug.SetGCPercent(serveGCPercent)
	return serveGCPercent, false
}

// formatBytes renders a byte count the way --memory-limit reads it, for the start-up log.
func formatBytes(n int64) string {
	if n == math.MaxInt64 {
		return "none"
	}
	for _, u := range memoryUnits {
		if u.shift > 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// gcHeadroomMaxPercent caps the GC percent the headroom asks for, so that a node whose
// live heap is near zero (just started, nothing held) still collects now and then.
const gcHeadroomMaxPercent = 2000

// headroomPercent is the GC percent that lets the heap grow by at least headroom bytes
// over live before the next collection, never below base (the percent in force: GOGC's, or
// serveGCPercent). A small live heap otherwise makes the collector run after every few MiB
// allocated, which under request load is many cycles a second; a large one is left at
// base, so the heap's peak (and a node's RSS at 1,000,000 locks) follows base alone.
func headroomPercent(live, headroom uint64, base int) int {
	if base < 0 || headroom == 0 {
		return base
	}
	if live == 0 {
		return max(base, gcHeadroomMaxPercent)
	}
	p := headroom * 100 / live
	if p > gcHeadroomMaxPercent {
		p = gcHeadroomMaxPercent
	}
	return max(base, int(p))
}

// gcHeadroom keeps the GC percent at headroomPercent of the live heap until stop is
// closed, recomputing it after every collection: the live heap is known then, and setting
// the percent at once also moves the goal of the cycle just begun. A timer would not do: a
// node restoring 1,000,000 locks grows its live heap a hundredfold between two ticks, and a
// percent chosen for an empty heap would let the heap reach twenty times the state before
// the next one. It returns at once when headroom is 0 or GOGC is off; base is the percent in
// force when it starts (GOGC's, or serveGCPercent), restored at the end.
func gcHeadroom(headroom uint64, stop <-chan struct{}) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if headroom == 0 || base < 0 {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var mu sync.Mutex
	current, stopped := base, false
	update := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return false
		}
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		if p := headroomPercent(live, headroom, base); p != current {
			debug.SetGCPercent(p)
			current = p
		}
		return true
	}
	update()
	afterEveryGC(update)
	<-stop
	mu.Lock()
	stopped = true
	debug.SetGCPercent(base)
	mu.Unlock()
}

// afterEveryGC calls f on the finalizer goroutine after each collection, for as long as f
// returns true: a sentinel that nothing references is finalized by every cycle and set up
// again by its finalizer.
func afterEveryGC(f func() bool) {
	type sentinel struct{ _ [16]byte } // not zero-sized: those may never be finalized
	var again func(*sentinel)
	again = func(s *sentinel) {
		if f() {
			runtime.SetFinalizer(s, again)
		}
	}
	runtime.SetFinalizer(&sentinel{}, again)
}
