package workload

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/raftlock/raftlock/test/verify/checker"
)

// EdgesConfig configures a pair of edge workers (RunEdges).
type EdgesConfig struct {
	// Prefix starts the worker pair's lock names; every scenario takes fresh ones.
	Prefix string
	// CycleWaitMs is each lease's wait in the cycle scenario. A server without deadlock
	// detection queues both and answers both wait_timeout after it; the deadlocks
	// checker sees that cycle when both were certainly queued at one instant, which
	// needs twice the wait, less checker.QueueCommit, to cover both requests from the
	// first call to the last return.
	CycleWaitMs int64
	// DelayMs is the lock delay of the delay scenario's grant.
	DelayMs int64
	// ExpireTTLMs is the TTL of the lease that lets its lock-delay grant end by expiry
	// (every other delay scenario; the others revoke it).
	ExpireTTLMs int64
	// MaxHoldMs is the maximum hold of the max-hold scenario's grant.
	MaxHoldMs int64
	// SlackMs is added to every wait that should end in a grant (faults, a loaded machine).
	SlackMs int64
	// TTLMs is the TTL of the workers' own leases, long enough never to expire in a
	// round; zero means 120000.
	TTLMs int64
}

// edgeSide is one lease-holding side of an edge scenario: a client, its current lease
// and the locks it holds with their tokens.
type edgeSide struct {
	c            *Client
	ttlMs        int64
	seq          int
	lease, owner string
	held         map[string]uint64
	// doubt is set when an answer left the lease's state unknown (ambiguous, or the
	// lease gone): the side then revokes it and takes a new one instead of releasing.
	doubt  bool
	lastKA time.Time
}

// open gives the side a new lease of ttlMs; false when ctx ended first.
func (s *edgeSide) open(ctx context.Context, ttlMs int64) bool {
	for ctx.Err() == nil {
		s.seq++
		s.owner = fmt.Sprintf("%s%d.%d", s.c.Workload, s.c.Worker, s.seq)
		if op := s.c.CreateLease(ctx, ttlMs, s.owner); op.Outcome == checker.OutOK {
			s.lease, s.ttlMs, s.held, s.doubt, s.lastKA = op.Lease, ttlMs, map[string]uint64{}, false, time.Now()
			return true
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	return false
}

// revoke revokes the side's lease until a definite answer (within cleanup), so that
// the checkers can close its ambiguous operations there.
func (s *edgeSide) revoke(cleanup time.Duration) {
	s.c.RevokeUntilGone(s.lease, s.owner, cleanup, 50*time.Millisecond)
	s.held = map[string]uint64{}
}

// acquire asks for lock with the side's lease and notes a grant; it reports whether
// the lock was granted.
func (s *edgeSide) acquire(ctx context.Context, lock string, waitMs, maxHoldMs, lockDelayMs int64) bool {
	op := s.c.AcquireHeld(ctx, lock, s.lease, s.owner, waitMs, maxHoldMs, lockDelayMs)
	switch op.Outcome {
	case checker.OutOK:
		s.held[lock] = op.Token
		return true
	case checker.OutHeld, checker.OutWaitTimeout, checker.OutDeadlock, checker.OutUnavailable, checker.OutFailed:
	default:
		s.doubt = true
	}
	return false
}

// giveBack releases every lock the side holds (a not_holder means a maximum hold ended
// the grant), or, in doubt, replaces its lease; false when ctx ended first.
func (s *edgeSide) giveBack(ctx context.Context, cleanup time.Duration) bool {
	for name, tok := range s.held {
		if out := s.c.ReleaseLock(ctx, name, s.lease, s.owner, tok).Outcome; out != checker.OutOK && out != checker.OutNotHolder {
			s.doubt = true
		}
	}
	s.held = map[string]uint64{}
	if !s.doubt && time.Since(s.lastKA) > 10*time.Second {
		s.lastKA = time.Now()
		s.doubt = s.c.KeepAlive(ctx, s.lease, s.owner, s.ttlMs).Outcome != checker.OutOK
	}
	if s.doubt {
		s.revoke(cleanup)
		return s.open(ctx, s.ttlMs)
	}
	return ctx.Err() == nil
}

// RunEdges runs a pair of edge workers, on clients a and b, until ctx ends, then revokes
// their leases (within cleanup). Where RunSets meets deadlocks, maximum holds and
// lock delays by chance, RunEdges makes each happen in every iteration, on fresh locks,
// so that a server without the mechanism fails its checker in every round it runs:
//
//   - cycle: a takes x, b takes y, then at once a asks for y and b for x, each waiting
//     CycleWaitMs. A correct server refuses the request that closes the cycle
//     (deadlock) and grants the other when the refused lease lets go; without deadlock
//     detection both wait and time out (the deadlocks checker's undetected_cycle).
//   - delay: a new lease of a takes x with a lock delay of DelayMs; b asks for x with a
//     wait; a's lease is revoked (or, every other time, left to expire after
//     ExpireTTLMs). A correct server grants b the lock no earlier than the delay after
//     the lease ended; the locksets model refuses an earlier grant.
//   - max hold: a takes x with a maximum hold of MaxHoldMs and does not let go; b asks
//     for x with a wait. A correct server ends a's grant at its maximum and grants b;
//     a's late release meets not_holder, which the campaign counts.
func RunEdges(ctx context.Context, a, b *Client, cfg EdgesConfig, cleanup time.Duration) {
	if cfg.TTLMs == 0 {
		cfg.TTLMs = 120000
	}
	sa, sb := &edgeSide{c: a}, &edgeSide{c: b}
	if !sa.open(ctx, cfg.TTLMs) || !sb.open(ctx, cfg.TTLMs) {
		return
	}
	defer func() {
		sa.revoke(cleanup)
		sb.revoke(cleanup)
	}()
	for i := 0; ctx.Err() == nil; i++ {
		name := func(s string) string { return fmt.Sprintf("%s/%d/%s", cfg.Prefix, i, s) }
		edgeCycle(ctx, sa, sb, name("x"), name("y"), cfg.CycleWaitMs, cleanup)
		if !sa.giveBack(ctx, cleanup) || !sb.giveBack(ctx, cleanup) {
			return
		}
		edgeDelay(ctx, sa, sb, name("d"), cfg, i%2 == 1, cleanup)
		if !sb.giveBack(ctx, cleanup) {
			return
		}
		if sa.acquire(ctx, name("m"), 0, cfg.MaxHoldMs, 0) {
			sb.acquire(ctx, name("m"), cfg.MaxHoldMs+cfg.SlackMs, 0, 0)
		}
		if !sa.giveBack(ctx, cleanup) || !sb.giveBack(ctx, cleanup) {
			return
		}
	}
}

// edgeCycle is the cycle scenario on fresh locks x and y.
func edgeCycle(ctx context.Context, sa, sb *edgeSide, x, y string, waitMs int64, cleanup time.Duration) {
	if !sa.acquire(ctx, x, 0, 0, 0) || !sb.acquire(ctx, y, 0, 0, 0) {
		return
	}
	// A side whose request was refused (or timed out) lets go of its lock at once, so
	// that the other side's wait ends in a grant.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !sa.acquire(ctx, y, waitMs, 0, 0) {
			sa.releaseNow(ctx, cleanup)
		}
	}()
	if !sb.acquire(ctx, x, waitMs, 0, 0) {
		sb.releaseNow(ctx, cleanup)
	}
	wg.Wait()
}

// releaseNow releases what the side holds now, keeping its lease; in doubt it revokes
// the lease (giveBack then takes a new one).
func (s *edgeSide) releaseNow(ctx context.Context, cleanup time.Duration) {
	if s.doubt {
		s.revoke(cleanup)
		return
	}
	for name, tok := range s.held {
		if out := s.c.ReleaseLock(ctx, name, s.lease, s.owner, tok).Outcome; out != checker.OutOK && out != checker.OutNotHolder {
			s.doubt = true
		}
		delete(s.held, name)
	}
}

// edgeDelay is the lock-delay scenario on a fresh lock: a new lease of sa's client takes
// it with the delay, sb waits for it, and the new lease is revoked (or, when expire is
// set, left to expire).
func edgeDelay(ctx context.Context, sa, sb *edgeSide, lock string, cfg EdgesConfig, expire bool, cleanup time.Duration) {
	ttl := cfg.TTLMs
	if expire {
		ttl = cfg.ExpireTTLMs
	}
	d := &edgeSide{c: sa.c, seq: sa.seq}
	defer func() { sa.seq = d.seq }() // owner labels stay unique per client
	if !d.open(ctx, ttl) {
		return
	}
	if !d.acquire(ctx, lock, 0, 0, cfg.DelayMs) {
		d.revoke(cleanup)
		return
	}
	wait := cfg.DelayMs + cfg.SlackMs
	if expire {
		wait += ttl
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sb.acquire(ctx, lock, wait, 0, 0)
	}()
	// Let b's wait be queued behind the holder, so that it is what the delay holds back.
	sleepCtx(ctx, 100*time.Millisecond)
	if !expire {
		d.revoke(cleanup)
	}
	<-done
}
