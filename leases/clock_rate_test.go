package leases_test

import (
	"testing"
	"time"

	"github.com/raftlock/raftlock/leases"
)

// Invariant 0, step 2: on the real monotonic clock, cluster time never advances faster than
// real time. The clock's advance since Start is measured against real time taken before
// Start and after the reading, so scheduling delays only widen the real interval; a clock
// running 1.5x (the mutant clock-fast) overshoots it by 150 ms in 300 ms.
func TestClock_NeverFasterThanRealTime(t *testing.T) {
	c := leases.NewClock(nil)
	before := time.Now()
	c.Start(5000)
	for i := 0; i < 6; i++ {
		time.Sleep(50 * time.Millisecond)
		now, ok := c.Now()
		real := time.Since(before).Milliseconds()
		if !ok {
			t.Fatal("clock stopped")
		}
		if now-5000 > real {
			t.Fatalf("cluster time advanced %d ms in %d ms of real time", now-5000, real)
		}
	}
}
