package workload

import (
	"context"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/test/verify/checker"
)

// Hold takes lock with a new lease of ttlMs and keeps the lease alive until the returned
// function is called; then the lease is abandoned (no release, no more keepalives), as by a
// client that died. It retries until ctx ends.
func Hold(ctx context.Context, c *Client, lock string, ttlMs int64) (abandon func(), err error) {
	var lease, owner string
	for i := 0; ; i++ {
		owner = "probe-holder"
		op := c.CreateLease(ctx, ttlMs, owner)
		if op.Outcome == checker.OutOK {
			lease = op.Lease
			a := c.AcquireLock(ctx, lock, lease, owner, 0, 0)
			if a.Outcome == checker.OutOK {
				break
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	kctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for kctx.Err() == nil {
			sleepCtx(kctx, time.Duration(ttlMs)*time.Millisecond/4)
			if kctx.Err() == nil {
				c.KeepAlive(kctx, lease, owner, ttlMs)
			}
		}
	}()
	return func() { cancel(); <-done }, nil
}

// Probe acquires lock with a new lease of ttlMs, queueing and retrying until it is granted
// or ctx ends, and returns how long that took. It then releases the lock.
func Probe(ctx context.Context, c *Client, lock string, ttlMs int64) (time.Duration, bool) {
	start := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		owner := fmt.Sprintf("probe.%d", i)
		op := c.CreateLease(ctx, ttlMs, owner)
		if op.Outcome != checker.OutOK {
			sleepCtx(ctx, 25*time.Millisecond)
			continue
		}
		for ctx.Err() == nil {
			wait := int64(1000)
			if dl, ok := ctx.Deadline(); ok {
				if left := time.Until(dl).Milliseconds(); left < wait {
					wait = left
				}
			}
			if wait <= 0 {
				break
			}
			a := c.AcquireLock(ctx, lock, op.Lease, owner, 0, wait)
			if a.Outcome == checker.OutOK {
				elapsed := time.Since(start)
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				c.RevokeLease(rctx, op.Lease, owner)
				cancel()
				return elapsed, true
			}
			if a.Outcome == checker.OutLeaseNotFound {
				break
			}
			if a.Outcome != checker.OutWaitTimeout && a.Outcome != checker.OutHeld {
				sleepCtx(ctx, 25*time.Millisecond)
			}
		}
	}
	return time.Since(start), false
}
