package main

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	good := map[string]int64{
		"":        0,
		"0":       0,
		"900MiB":  900 << 20,
		"1GiB":    1 << 30,
		"4096":    4096,
		"512B":    512,
		"64KiB":   64 << 10,
		" 2TiB ":  2 << 40,
		"100 MiB": 100 << 20,
	}
	for in, want := range good {
		got, err := parseMemoryLimit(in)
		if err != nil || got != want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"900M", "1.5GiB", "-1", "GiB", "lots", "0MiB", "9999999999TiB", "1e9"} {
		if got, err := parseMemoryLimit(in); err == nil {
			t.Errorf("parseMemoryLimit(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "900MiB") {
			t.Errorf("parseMemoryLimit(%q): %v; the error should show an example", in, err)
		}
	}
}

// TestApplyMemoryLimit checks that the flag's value reaches the runtime, and that 0 leaves
// whatever limit is in force (GOMEMLIMIT's) as it was.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	if got := applyMemoryLimit(900 << 20); got != 900<<20 {
		t.Fatalf("applyMemoryLimit(900MiB) left the runtime's limit at %d", got)
	}
	if got := applyMemoryLimit(0); got != 900<<20 {
		t.Fatalf("applyMemoryLimit(0) changed the limit in force to %d, want it left at 900MiB", got)
	}
	if s := formatBytes(900 << 20); s != "900MiB" {
		t.Errorf("formatBytes(900MiB) = %q", s)
	}
	if s := formatBytes(math.MaxInt64); s != "none" {
		t.Errorf("formatBytes(MaxInt64) = %q", s)
	}
	if s := formatBytes(1000); s != "1000B" {
		t.Errorf("formatBytes(1000) = %q", s)
	}
}

// TestHeadroomPercent: a small live heap gets a GC percent that leaves the headroom
// between collections (capped), a large one keeps GOGC's, and GOGC=off or no headroom
// change nothing.
func TestHeadroomPercent(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		live, headroom uint64
		base, want     int
	}{
		{live: 16 * mib, headroom: 64 * mib, base: 100, want: 400},
		{live: 32 * mib, headroom: 64 * mib, base: 100, want: 200},
		{live: 500 * mib, headroom: 64 * mib, base: 100, want: 100},
		{live: 500 * mib, headroom: 64 * mib, base: 150, want: 150},
		{live: 1 * mib, headroom: 64 * mib, base: 100, want: 2000},
		{live: 0, headroom: 64 * mib, base: 100, want: 2000},
		{live: 16 * mib, headroom: 0, base: 100, want: 100},
		{live: 16 * mib, headroom: 64 * mib, base: -1, want: -1},
	}
	for _, c := range cases {
		if got := headroomPercent(c.live, c.headroom, c.base); got != c.want {
			t.Errorf("headroomPercent(live %d MiB, headroom %d MiB, base %d) = %d; want %d", c.live/mib, c.headroom/mib, c.base, got, c.want)
		}
	}
}
