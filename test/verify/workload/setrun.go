package workload

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/raftlock/raftlock/test/verify/checker"
)

// SetsConfig configures a lockset worker (RunSets).
type SetsConfig struct {
	// Locks is the small pool the worker takes its sets from.
	Locks []string
	// Size is how many distinct locks of the pool each round of the worker takes (M).
	Size int
	// WaitMs is every acquire's wait.
	WaitMs int64
	// SetProb is the share of rounds that ask for the set in one lockset; the others take
	// its locks one by one, in a random order (the orders that deadlock).
	SetProb float64
	// MaxHoldProb is the share of rounds whose grants have a maximum hold of MaxHoldMs;
	// half of those hold the complete set for twice MaxHoldMs, past the maximum hold.
	MaxHoldProb float64
	MaxHoldMs   int64
	// Hold is the longest time the worker holds a complete set before releasing it.
	Hold time.Duration
	// TTLMs is the lease TTL, long enough never to expire in a round; zero means 120000.
	TTLMs int64
}

// RunSets runs a lockset worker until ctx ends, then revokes its lease (within cleanup).
// Each round takes Size random locks of the pool, as one lockset or one by one in a
// random order, every request waiting up to WaitMs, some with a maximum hold; holds the
// set up to Hold; and gives it back (one lockset release, or lock by lock). A round whose
// acquire is refused (deadlock) or times out gives back what it took and starts again.
// Between requests it reads the status of a random lock of the pool. As in RunLin, an
// ambiguous answer makes the worker revoke its lease until a definite answer, so that the
// checkers can close the ambiguous operation there.
func RunSets(ctx context.Context, c *Client, cfg SetsConfig, cleanup time.Duration) {
	if cfg.TTLMs == 0 {
		cfg.TTLMs = 120000
	}
	rng := c.Rand()
	seq := 0
	var lease, owner string
	newLease := func() bool {
		for ctx.Err() == nil {
			seq++
			owner = fmt.Sprintf("%s%d.%d", c.Workload, c.Worker, seq)
			if op := c.CreateLease(ctx, cfg.TTLMs, owner); op.Outcome == checker.OutOK {
				lease = op.Lease
				return true
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
		return false
	}
	revoke := func() { c.RevokeUntilGone(lease, owner, cleanup, 50*time.Millisecond) }
	if !newLease() {
		return
	}
	lastKA := time.Now()
	held := map[string]uint64{}
	// giveBack releases everything held; false when the lease is gone or in doubt (then
	// it has been revoked and a new one must be made).
	giveBack := func() bool {
		if len(held) == 0 {
			return true
		}
		var names []string
		for n := range held {
			names = append(names, n)
		}
		sort.Strings(names)
		var outs []string
		if len(names) > 1 && rng.Float64() < 0.5 {
			toks := make([]uint64, len(names))
			for i, n := range names {
				toks[i] = held[n]
			}
			op := c.ReleaseSet(ctx, names, toks, lease, owner)
			outs = append(outs, op.Outcome)
			if op.Outcome == checker.OutNotHolder { // a maximum hold ended some: give back the rest
				gone := map[string]bool{}
				for _, n := range op.HeldNames {
					gone[n] = true
				}
				for _, n := range names {
					if !gone[n] {
						outs = append(outs, c.ReleaseLock(ctx, n, lease, owner, held[n]).Outcome)
					}
				}
			}
		} else {
			for _, n := range names {
				outs = append(outs, c.ReleaseLock(ctx, n, lease, owner, held[n]).Outcome)
			}
		}
		held = map[string]uint64{}
		for _, o := range outs {
			if o != checker.OutOK && o != checker.OutNotHolder {
				return false
			}
		}
		return true
	}
	reset := func() bool {
		revoke()
		held = map[string]uint64{}
		return newLease()
	}
	for ctx.Err() == nil {
		if time.Since(lastKA) > 10*time.Second {
			lastKA = time.Now()
			if op := c.KeepAlive(ctx, lease, owner, cfg.TTLMs); op.Outcome == checker.OutLeaseNotFound && !reset() {
				return
			}
		}
		perm := rng.Perm(len(cfg.Locks))[:cfg.Size]
		var names []string
		for _, i := range perm {
			names = append(names, cfg.Locks[i])
		}
		var maxHold int64
		if rng.Float64() < cfg.MaxHoldProb {
			maxHold = cfg.MaxHoldMs
		}
		ok := true // the lease is fine
		complete := false
		if rng.Float64() < cfg.SetProb {
			op := c.AcquireSet(ctx, names, lease, owner, cfg.WaitMs, maxHold, 0)
			switch op.Outcome {
			case checker.OutOK:
				for i, n := range op.Names {
					held[n] = op.Tokens[i]
				}
				complete = true
			case checker.OutDeadlock, checker.OutWaitTimeout, checker.OutHeld, checker.OutUnavailable, checker.OutFailed:
			default:
				ok = false
			}
		} else {
			complete = true
			for _, n := range names {
				if rng.Float64() < 0.2 {
					c.LockStatus(ctx, cfg.Locks[rng.Intn(len(cfg.Locks))])
				}
				op := c.AcquireHeld(ctx, n, lease, owner, cfg.WaitMs, maxHold, 0)
				if op.Outcome == checker.OutOK {
					held[n] = op.Token
					continue
				}
				complete = false
				if op.Outcome == checker.OutAmbiguous || op.Outcome == checker.OutLeaseNotFound {
					ok = false
				}
				break
			}
		}
		if ok && complete {
			c.LockStatus(ctx, names[rng.Intn(len(names))])
			switch {
			case maxHold > 0 && rng.Float64() < 0.5:
				// Past the maximum hold, so that the cluster ends the grant and the
				// release meets not_holder: the checkers judge maximum holds only
				// when some end.
				sleepCtx(ctx, time.Duration(2*maxHold)*time.Millisecond)
			case cfg.Hold > 0:
				sleepCtx(ctx, time.Duration(rng.Int63n(int64(cfg.Hold))))
			}
		}
		if ok {
			ok = giveBack()
		}
		if !ok && !reset() {
			return
		}
	}
	revoke()
}
