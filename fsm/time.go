package fsm

import (
	"math"

	"github.com/raftlock/raftlock/internal/mutant"
)

// MaxTimeStep is the most that one entry may advance cluster time once the cluster runs
// protocol version 2 or later: 24 hours in milliseconds, the longest TTL the API accepts.
//
// Without a bound, one entry whose Now is near MaxInt64 (anyone who can reach the Raft port
// can write one) moves cluster time to the end of time for good, and every lease expires at
// the next entry. With it, such an entry costs at most one step. The bound cannot tell a
// forged Now from a genuine one, so it limits the damage rather than preventing it; the
// Raft port must still be trusted.
//
// Why clamping is safe: it only ever makes cluster time run behind the leader's clock, and
// deadlines are stamped from the entry's own Now (see stamp), not from the clamped time, so
// a lagging cluster time only lengthens leases. A leader that was idle for longer than the
// step (no leases, so no ticks) therefore catches up one MaxTimeStep per entry: its next
// ticks each move time by at most a day until time reaches its clock.
const MaxTimeStep int64 = 24 * 60 * 60 * 1000

// satAdd returns a+b for b >= 0, or MaxInt64 when the sum would overflow. Deadlines are
// sums of a time and a duration that the decoder only bounds by MaxInt64; a wrapped sum
// would be a negative deadline (expired at once, and unreadable in a snapshot), while a
// saturated one is merely far away.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b && !mutant.Is("deadline-wraps") {
		return math.MaxInt64
	}
	return a + b
}

// advance moves cluster time for an entry stamped now and records the entry's stamp.
//
// At version 1 time becomes max(time, now), exactly as version 1 code does, so that a
// version 1 node and a newer node in one cluster never diverge. From version 2 one entry may
// move time by at most MaxTimeStep: time = max(time, min(now, time+MaxTimeStep)).
//
// The stamp is max(time before clamping, now): the instant a lease or wait stamped by this
// entry starts. It must not be the clamped time. While cluster time lags behind the leader's
// clock (after a clamp), the next entries move time by up to a day each; a deadline of
// clamped time + TTL could then pass a moment after it was set, in real time. Stamped from
// now, a deadline d is reached only by an entry whose Now >= d, which the leader read at
// least TTL after it read this entry's Now. For version 1 stamp and time are the same.
func (s *state) advance(now int64) {
	s.stamp = max(s.time, now)
	if s.version >= 2 {
		now = min(now, satAdd(s.time, MaxTimeStep))
	}
	s.time = max(s.time, now)
	if mutant.Is("time-goes-back") {
		s.time = now
	}
}
