package workload

import (
	"sync"
	"time"

	"github.com/raftlock/raftlock/test/verify/checker"
)

// Op is one recorded operation: the checker's Op, so that the records the workload
// writes are the history the checkers judge, field for field. Times are nanoseconds on
// the campaign's Clock; Kind and Outcome take the checker's Kind and Out constants.
type Op = checker.Op

// Clock is the campaign's one monotonic clock. A clock from NewClock counts from its own
// start and serves one process; a clock from NewSharedClock reads the machine's
// CLOCK_MONOTONIC, so that the records of worker processes and of the test share one
// time line.
type Clock struct {
	start  time.Time
	shared bool
	origin int64
}

// NewClock starts a clock at zero.
func NewClock() *Clock { return &Clock{start: time.Now()} }

// NewSharedClock returns a clock that reads MonotonicNow() - origin. Processes on one machine
// given the same origin read the same clock.
func NewSharedClock(origin int64) *Clock { return &Clock{shared: true, origin: origin} }

// Origin is the MonotonicNow reading a shared clock counts from (zero for a NewClock).
func (c *Clock) Origin() int64 { return c.origin }

// Now returns nanoseconds since the clock started (monotonic).
func (c *Clock) Now() int64 {
	if c.shared {
		return MonotonicNow() - c.origin
	}
	return int64(time.Since(c.start))
}

// Recorder collects operations from many goroutines.
type Recorder struct {
	Clock *Clock
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder returns an empty recorder on clock.
func NewRecorder(clock *Clock) *Recorder { return &Recorder{Clock: clock} }

// Add records op and returns its ID.
func (r *Recorder) Add(op Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
	return op.ID
}

// Ops returns a copy of everything recorded so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Len returns the number of recorded operations.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}
