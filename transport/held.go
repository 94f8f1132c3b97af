package transport

import "sync/atomic"

// limiter counts requests held open (waiting acquires, blocking queries) against a cap, so
// that a flood of them is refused with 429 instead of exhausting the node.
type limiter struct {
	max  int64
	held atomic.Int64
}

func newLimiter(max int) *limiter { return &limiter{max: int64(max)} }

// acquire takes a slot; ok is false when the cap is reached. release frees the slot.
func (l *limiter) acquire() (release func(), ok bool) {
	if l.held.Add(1) > l.max {
		l.held.Add(-1)
		return nil, false
	}
	return func() { l.held.Add(-1) }, true
}
