package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
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

// TestGCHeadroom_FollowsCollections: while gcHeadroom runs, each collection sets the GC
// percent for the live heap it found: the cap for this test's small heap (with a 1 GiB
// headroom), about 1 GiB / 128 MiB * 100 while 128 MiB more are live, the cap again once
// they are garbage; stopped, it leaves GOGC's percent.
func TestGCHeadroom_FollowsCollections(t *testing.T) {
	percent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	base := percent()
	if base < 0 {
		t.Skip("GOGC=off: gcHeadroom leaves the collector alone")
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { gcHeadroom(1<<30, stop); close(done) }()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	// awaitPercent collects until the percent is within [lo, hi]; the deadline is long
	// because the hook runs on the finalizer goroutine, whenever the scheduler gets to it.
	awaitPercent := func(what string, lo, hi int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for p := percent(); p < lo || p > hi; p = percent() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: GC percent %d after 10 s of collections; want %d to %d", what, p, lo, hi)
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	awaitPercent("small heap", gcHeadroomMaxPercent, gcHeadroomMaxPercent)
	ballast := make([]byte, 128<<20)
	for i := range ballast {
		ballast[i] = 1 // touched, so that it is live memory like any other state
	}
	awaitPercent("128 MiB more live", 600, 850)
	runtime.KeepAlive(ballast)
	ballast = nil
	awaitPercent("128 MiB freed", gcHeadroomMaxPercent, gcHeadroomMaxPercent)
	close(stop)
	<-done
	runtime.GC() // the hook's sentinel, finalized once more, must not set it again
	runtime.GC()
	if p := percent(); p != base {
		t.Fatalf("GC percent %d after gcHeadroom stopped; want GOGC's %d", p, base)
	}
}

// TestApplyGCPercent: without GOGC in the environment serve collects at serveGCPercent;
// with GOGC set, the percent it gave the runtime stays in force.
func TestApplyGCPercent(t *testing.T) {
	current := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	before := debug.SetGCPercent(77) // as GOGC=77 would have set it at start
	t.Cleanup(func() { debug.SetGCPercent(before) })
	gogc := func(v string, set bool) func(string) (string, bool) {
		return func(name string) (string, bool) {
			if name != "GOGC" {
				return "", false
			}
			return v, set
		}
	}
	if p, fromEnv := applyGCPercent(gogc("77", true)); p != 77 || !fromEnv || current() != 77 {
		t.Errorf("GOGC=77: applyGCPercent answered %d (from GOGC %v), percent in force %d; want GOGC's 77 left alone", p, fromEnv, current())
	}
	if p, fromEnv := applyGCPercent(gogc("", false)); p != serveGCPercent || fromEnv || current() != serveGCPercent {
		t.Errorf("no GOGC: applyGCPercent answered %d (from GOGC %v), percent in force %d; want serve's %d", p, fromEnv, current(), serveGCPercent)
	}
}
