package fsm

import (
	"math"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
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

// advance brings s to the entry at index, stamped now, before its command runs. Every
// node does the same steps in the same order, which the state and its snapshot bytes
// depend on:
//
//  1. cluster time moves (moveTime), and the entry becomes the last applied;
//  2. each primitive, in the order of primitives, ends the waits whose deadline is at or
//     before the new time, in (deadline, name, lease) order: lock waits, then semaphore
//     waits, then candidacies;
//  3. leases whose deadline is at or before it end (expireLeases): all of them leave every
//     queue before any grant of theirs is released and handed over, so that nothing is
//     handed to a lease that expires in the same entry;
//  4. each primitive ends what its own deadlines end (its expire hook): grants past their
//     maximum hold, then lock delays that are over (locks), permits past their maximum
//     hold (semaphores), each in (deadline, name, lease) order (version 3);
//  5. the shared waiters that steps 2 to 4 put at the head of a lock held shared are
//     granted, and locks that nobody holds go to the head of their queues (settle).
//
// The primitives' state is disjoint, so the order among them in steps 2 and 4 changes
// only the order of their events, never the state. From version 6 steps 2 to 5 are the
// sliced sweep (sweep.go): the same order, one lease at a time, at most the entry's budget.
func (s *state) advance(index uint64, now int64) {
	s.moveTime(now)
	s.applied = index
	s.startBudget()
	if s.version >= 6 {
		s.sweep(index) // sliced: at most budgetMax units (sweep.go)
		return
	}
	for i := range primitives {
		primitives[i].expireWaits(s, index)
	}
	s.expireLeases(index)
	for i := range primitives {
		if p := &primitives[i]; p.expire != nil {
			p.expire(s, index)
		}
	}
	s.settle(index)
}

// tick applies Tick, which the leader proposes so that time moves while nothing else
// happens: advance has done all there is to do.
func (s *state) tick(uint64, *Command, *Result) {}

// moveTime moves cluster time for an entry stamped now and records the entry's stamp.
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
func (s *state) moveTime(now int64) {
	s.stamp = max(s.time, now)
	if s.version >= 2 {
		now = min(now, satAdd(s.time, MaxTimeStep))
	}
	s.time = max(s.time, now)
	if mutant.Is("time-goes-back") {
		s.time = now
	}
}

// expireWaits pops the waits of t (keyed by waitKey) that have ended by the current time,
// one at a time (from version 6 while the entry's budget lasts), and takes each lease that
// still exists out of its queue with leave. Popping one at a time ends what popping them
// all first ended: a lockset's wait that ends takes its other locks' keys out of t, which
// would otherwise have been popped and found gone.
func (s *state) expireWaits(index uint64, t *leases.Table, leave func(s *state, index uint64, name string, l *lease)) {
	for {
		k, ok := s.popExpired(t)
		if !ok {
			return
		}
		name, id := splitWaitKey(k)
		if l := s.leases[id]; l != nil {
			leave(s, index, name, l)
		}
		s.unitDone(index)
	}
}

// expireLeases removes every lease whose deadline has passed at the current time
// (removeLeases), in (deadline, ID) order.
func (s *state) expireLeases(index uint64) {
	keys := s.leaseExp.PopExpired(s.time)
	if len(keys) == 0 {
		return
	}
	dead := make([]*lease, 0, len(keys))
	for _, k := range keys {
		var id LeaseID
		copy(id[:], k)
		dead = append(dead, s.leases[id])
	}
	s.hist.endCause = HistoryExpired
	s.removeLeases(index, dead)
}

// NextDeadline returns the earliest pending deadline (of a lease or of a waiter) in
// cluster time, and false when nothing is pending.
func (f *FSM) NextDeadline() (int64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.s.revoking) > 0 {
		return f.s.time, true // a deleted token's leases are left to sweep
	}
	_, next, ok := f.s.leaseExp.Next()
	for _, p := range primitives {
		for _, t := range p.deadlines(f.s) {
			if _, d, has := t.Next(); has && (!ok || d < next) {
				next, ok = d, true
			}
		}
	}
	return next, ok
}
