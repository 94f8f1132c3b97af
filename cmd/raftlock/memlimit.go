package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
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
// limit in force afterwards. Why a soft limit: at the default GOGC the heap grows to about
// twice the live heap before a collection, so a node whose live state is 600 MiB reaches
// 1.2 GiB; under a limit the collector runs earlier instead (docs/OPERATIONS.md, sizing).
func applyMemoryLimit(limit int64) int64 {
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return debug.SetMemoryLimit(-1)
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
