package workload

import (
	"testing"
	"time"
)

// TestSharedClock_FollowsMonotonic checks that a shared clock counts from its origin and
// moves forward with real time.
func TestSharedClock_FollowsMonotonic(t *testing.T) {
	c := NewSharedClock(MonotonicNow())
	a := c.Now()
	time.Sleep(20 * time.Millisecond)
	b := c.Now()
	if a < 0 || b-a < int64(20*time.Millisecond) || b-a > int64(5*time.Second) {
		t.Fatalf("shared clock read %d then %d across a 20ms sleep", a, b)
	}
	if d := NewSharedClock(c.Origin()).Now() - c.Now(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("two clocks with one origin differ by %v", time.Duration(d))
	}
}
