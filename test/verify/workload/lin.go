package workload

import (
	"context"
	"fmt"
	"time"
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
			owner := fmt.Sprintf("lin%d.%d", c.Worker, seq)
			op := c.CreateLease(ctx, cfg.TTLMs, owner)
			if op.Outcome == OK {
				return linLease{op.Lease, owner}, true
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
		return linLease{}, false
	}
	revoke := func(ctx context.Context, l linLease) {
		for ctx.Err() == nil {
			op := c.RevokeLease(ctx, l.id, l.owner)
			if op.Outcome == OK || op.Outcome == LeaseNotFound {
				return
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
	}
	l, ok := newLease()
	if !ok {
		return
	}
	held := map[string]uint64{}
	lastKA := time.Now()
	reset := func() {
		rctx, cancel := context.WithTimeout(context.Background(), cleanup)
		revoke(rctx, l)
		cancel()
		held = map[string]uint64{}
		l, ok = newLease()
	}
	for ctx.Err() == nil && ok {
		if time.Since(lastKA) > cfg.KeepAliveEvery {
			lastKA = time.Now()
			if op := c.KeepAlive(ctx, l.id, l.owner, cfg.TTLMs); op.Outcome == LeaseNotFound {
				reset()
				continue
			}
		}
		lock := cfg.Locks[rng.Intn(len(cfg.Locks))]
		p := rng.Float64()
		if tok, mine := held[lock]; mine {
			if p < 0.3 {
				c.LockStatus(ctx, lock)
			} else {
				op := c.ReleaseLock(ctx, lock, l.id, l.owner, tok)
				switch op.Outcome {
				case OK, NotHolder, LeaseNotFound, Failed:
					delete(held, lock)
				case Ambiguous:
					reset()
				}
			}
		} else {
			if p < 0.25 {
				c.LockStatus(ctx, lock)
			} else {
				op := c.AcquireLock(ctx, lock, l.id, l.owner, 0, 0)
				switch op.Outcome {
				case OK:
					held[lock] = op.Token
				case Ambiguous:
					reset()
				case LeaseNotFound:
					l, ok = newLease()
					held = map[string]uint64{}
				case Unavailable:
					sleepCtx(ctx, 20*time.Millisecond) // that node is down; do not spin
				}
			}
		}
		if cfg.Think > 0 {
			sleepCtx(ctx, time.Duration(rng.Int63n(int64(cfg.Think))))
		}
	}
	if ok {
		rctx, cancel := context.WithTimeout(context.Background(), cleanup)
		revoke(rctx, l)
		cancel()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
