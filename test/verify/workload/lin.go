package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/verify/checker"
)

// LinConfig configures a lin worker.
type LinConfig struct {
	// Locks are the locks the worker competes for.
	Locks []string
	// TTLMs is the lease TTL: long enough never to expire during a round (the
	// linearizability model has no expiry). Zero means 120000.
	TTLMs int64
	// KeepAliveEvery renews the lease; zero means 10 s.
	KeepAliveEvery time.Duration
	// Think is the longest pause between two operations; zero means none.
	Think time.Duration
}

// linLease is the worker's current lease.
type linLease struct {
	id, owner string
}

// RunLin runs a lin worker until ctx ends, then revokes its lease (within cleanup). Every
// operation on a lock uses wait 0, so an operation never outlives its request. After an
// ambiguous acquire or release the worker revokes its lease until a definite answer says it
// is gone: from then on the ambiguous operation can no longer take effect, which lets the
// checker close its interval at the revoke's return.
func RunLin(ctx context.Context, c *Client, cfg LinConfig, cleanup time.Duration) {
	runLeased(ctx, c, cfg, cleanup, linOps{
		acquire: func(ctx context.Context, name string, l linLease) Op {
			return c.AcquireLock(ctx, name, l.id, l.owner, 0, 0)
		},
		release: func(ctx context.Context, name string, l linLease, token uint64) Op {
			return c.ReleaseLock(ctx, name, l.id, l.owner, token)
		},
		status: c.LockStatus,
	})
}

// linOps are the requests of one primitive that a lin-style worker sends.
type linOps struct {
	// acquire asks for a grant (a lock, a permit, a leadership) at once.
	acquire func(ctx context.Context, name string, l linLease) Op
	// release gives a grant back with its token.
	release func(ctx context.Context, name string, l linLease, token uint64) Op
	// status reads the primitive.
	status func(ctx context.Context, name string) Op
	// update, when set, is an operation a holder may send instead of a release (a
	// proclaim); a definite refusal means the grant is gone.
	update func(ctx context.Context, name string, l linLease, token uint64) Op
}

// runLeased runs a lin-style worker on the primitives named in cfg.Locks with the
// requests of ops: its own leases of a TTL that never expires during a round, every
// request with wait 0, and a revoke of the lease (until a definite answer) after any
// ambiguous grant or release, so that the checker can close the ambiguous operation's
// interval at that revoke's return.
func runLeased(ctx context.Context, c *Client, cfg LinConfig, cleanup time.Duration, ops linOps) {
	if cfg.TTLMs == 0 {
		cfg.TTLMs = 120000
	}
	if cfg.KeepAliveEvery == 0 {
		cfg.KeepAliveEvery = 10 * time.Second
	}
	rng := c.Rand()
	seq := 0
	newLease := func() (linLease, bool) {
		for ctx.Err() == nil {
			seq++
			owner := fmt.Sprintf("%s%d.%d", c.Workload, c.Worker, seq)
			op := c.CreateLease(ctx, cfg.TTLMs, owner)
			if op.Outcome == checker.OutOK {
				return linLease{op.Lease, owner}, true
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
		return linLease{}, false
	}
	l, ok := newLease()
	if !ok {
		return
	}
	held := map[string]uint64{}
	lastKA := time.Now()
	reset := func() {
		c.RevokeUntilGone(l.id, l.owner, cleanup, 50*time.Millisecond)
		held = map[string]uint64{}
		l, ok = newLease()
	}
	for ctx.Err() == nil && ok {
		if time.Since(lastKA) > cfg.KeepAliveEvery {
			lastKA = time.Now()
			if op := c.KeepAlive(ctx, l.id, l.owner, cfg.TTLMs); op.Outcome == checker.OutLeaseNotFound {
				reset()
				continue
			}
		}
		name := cfg.Locks[rng.Intn(len(cfg.Locks))]
		p := rng.Float64()
		if tok, mine := held[name]; mine {
			switch {
			case p < 0.3:
				ops.status(ctx, name)
			case p < 0.5 && ops.update != nil:
				switch ops.update(ctx, name, l, tok).Outcome {
				case checker.OutNotHolder, checker.OutLeaseNotFound, checker.OutFailed:
					delete(held, name)
				case checker.OutAmbiguous:
					reset()
				}
			default:
				switch ops.release(ctx, name, l, tok).Outcome {
				case checker.OutOK, checker.OutNotHolder, checker.OutLeaseNotFound, checker.OutFailed:
					delete(held, name)
				case checker.OutAmbiguous:
					reset()
				}
			}
		} else {
			if p < 0.25 {
				ops.status(ctx, name)
			} else {
				op := ops.acquire(ctx, name, l)
				switch op.Outcome {
				case checker.OutOK:
					held[name] = op.Token
				case checker.OutAmbiguous:
					reset()
				case checker.OutLeaseNotFound:
					l, ok = newLease()
					held = map[string]uint64{}
				case checker.OutUnavailable:
					sleepCtx(ctx, 20*time.Millisecond) // that node is down; do not spin
				}
			}
		}
		if cfg.Think > 0 {
			sleepCtx(ctx, time.Duration(rng.Int63n(int64(cfg.Think))))
		}
	}
	if ok {
		c.RevokeUntilGone(l.id, l.owner, cleanup, 50*time.Millisecond)
	}
}

// RunShared runs a lin-style worker on shared locks: nine acquires in ten are shared,
// the others exclusive.
func RunShared(ctx context.Context, c *Client, cfg LinConfig, cleanup time.Duration) {
	rng := c.Rand()
	runLeased(ctx, c, cfg, cleanup, linOps{
		acquire: func(ctx context.Context, name string, l linLease) Op {
			mode := api.ModeShared
			if rng.Float64() < 0.1 {
				mode = api.ModeExclusive
			}
			return c.AcquireLockMode(ctx, name, l.id, l.owner, mode, 0, 0)
		},
		release: func(ctx context.Context, name string, l linLease, token uint64) Op {
			return c.ReleaseLock(ctx, name, l.id, l.owner, token)
		},
		status: c.LockStatus,
	})
}

// RunSemaphore runs a lin-style worker on semaphores of limit permits; one acquire in
// twenty asks for limit+1, to meet limit_conflict (or, on an unused semaphore, to set the
// other limit).
func RunSemaphore(ctx context.Context, c *Client, cfg LinConfig, limit int64, cleanup time.Duration) {
	rng := c.Rand()
	runLeased(ctx, c, cfg, cleanup, linOps{
		acquire: func(ctx context.Context, name string, l linLease) Op {
			n := limit
			if rng.Float64() < 0.05 {
				n++
			}
			return c.AcquirePermit(ctx, name, l.id, l.owner, n)
		},
		release: func(ctx context.Context, name string, l linLease, token uint64) Op {
			return c.ReleasePermit(ctx, name, l.id, l.owner, token)
		},
		status: c.SemaphoreStatus,
	})
}

// RunElection runs a lin-style worker on elections: it campaigns, proclaims new values
// while leading, and resigns. Every value is unique, so a status read tells which
// campaign or proclaim it saw.
func RunElection(ctx context.Context, c *Client, cfg LinConfig, cleanup time.Duration) {
	n := 0
	value := func(l linLease) string {
		n++
		return fmt.Sprintf("%s/v%d", l.owner, n)
	}
	runLeased(ctx, c, cfg, cleanup, linOps{
		acquire: func(ctx context.Context, name string, l linLease) Op {
			return c.Campaign(ctx, name, l.id, l.owner, value(l), 0)
		},
		release: func(ctx context.Context, name string, l linLease, token uint64) Op {
			return c.Resign(ctx, name, l.id, l.owner, token)
		},
		status: c.ElectionStatus,
		update: func(ctx context.Context, name string, l linLease, token uint64) Op {
			return c.Campaign(ctx, name, l.id, l.owner, value(l), token)
		},
	})
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
