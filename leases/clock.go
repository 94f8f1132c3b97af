package leases

import (
	"sync"
	"time"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Clock is the leader's reading of cluster time in milliseconds: base plus the monotonic
// time elapsed since Start. A new leader starts it only after a barrier has applied every
// entry committed before its term, with base set to the newest cluster time in its state,
// so its readings never fall below any time already in the log and never run faster than
// real time.
//
// Readings never go backwards, even if the elapsed-time source does. Clock is safe for
// concurrent use.
type Clock struct {
	mu         sync.Mutex
	base       int64
	last       int64
	started    bool
	since      func() time.Duration
	sinceStart func() time.Duration
}

// NewClock returns a stopped clock. elapsed, when non-nil, replaces the monotonic clock for
// tests: it returns the time elapsed since its own origin, and Start records its reading.
func NewClock(elapsed func() time.Duration) *Clock {
	return &Clock{since: elapsed}
}

// Start sets the clock running from base. It is called once per leadership term.
func (c *Clock) Start(base int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since == nil {
		origin := time.Now() // carries a monotonic reading; only time.Since is used on it
		c.sinceStart = func() time.Duration { return time.Since(origin) }
	} else {
		origin := c.since()
		src := c.since
		c.sinceStart = func() time.Duration { return src() - origin }
	}
	if mutant.Is("clock-own-base") {
		base = c.last
	}
	c.base = base
	c.last = base
	c.started = true
}

// Stop stops the clock, as when leadership is lost; Now then reports false.
func (c *Clock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = false
}

// Now returns the current cluster time and whether the clock is running.
func (c *Clock) Now() (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return 0, false
	}
	t := c.base + c.sinceStart().Milliseconds()
	if mutant.Is("clock-fast") {
		t = c.base + c.sinceStart().Milliseconds()*3/2
	}
	if t < c.last {
		t = c.last
	}
	c.last = t
	return t, true
}
