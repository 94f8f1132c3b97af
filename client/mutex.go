package client

import (
	"context"
	"fmt"

	"github.com/raftlock/raftlock/api"
)

// Mutex is an exclusive lock held by a lease. Each grant comes with a fencing token
// (Token) that the holder must pass to every write it makes under the lock; the storage
// must refuse tokens lower than the highest it has seen. A Mutex can NOT promise that
// it is still held when the holder acts: a holder can pause (GC, swap, SIGSTOP) for
// longer than its lease. Lost and SafeUntil make that rare; the token makes it harmless.
//
// A Mutex serializes its own Lock, TryLock and Unlock calls; it is safe for concurrent
// use, but two goroutines sharing one Mutex share its hold.
type Mutex struct {
	hold
}

// NewMutex returns a Mutex for lock name held with lease. Many Mutexes may share one
// lease (one keepalive stream for many locks); all are lost together when it is.
func NewMutex(lease *Lease, name string, opts ...MutexOption) *Mutex {
	return newLockHold[Mutex](lease.c, lease, name, opts)
}

// NewMutex returns a Mutex for lock name that creates its own lease (WithLeaseTTL) for
// each hold and revokes it on Unlock.
func (c *Client) NewMutex(name string, opts ...MutexOption) *Mutex {
	return newLockHold[Mutex](c, nil, name, opts)
}

// lockReleaser releases a grant of lock name, in either mode.
func (c *Client) lockReleaser(name string) releaseFunc {
	return c.releaser(fmt.Sprintf("release %q", name), locksRoute, name)
}

// lockAcquirer takes lock name in mode.
func (c *Client) lockAcquirer(name, mode string) acquireFunc {
	return func(ctx context.Context, opts AcquireOptions) (grant, result, error) {
		opts.Mode = mode
		g, res, err := c.acquire(ctx, name, opts)
		return grant{token: g.Token, leaseID: g.LeaseID, ttlMs: g.TTLMs}, res, err
	}
}

// Lock takes the lock, waiting in the lock's FIFO queue on the server for as long as ctx
// allows (no polling: the answer comes from the commit that grants the lock). It returns
// nil only when the lock is held. Otherwise it returns ctx's error or ErrWaitTimeout when
// ctx ends first (the server takes the lease out of the queue when the request is
// cancelled, and releases the lock if it was granted meanwhile), or ErrLeaseLost when the
// lease is lost while waiting. Locking a Mutex that already holds its lock (and whose
// lease is live) returns nil at once.
//
// Waits longer than the wait chunk (WithWaitChunk) are re-issued; each re-issue joins the
// back of the queue.
func (m *Mutex) Lock(ctx context.Context) error { return m.lock(ctx, true) }

// TryLock takes the lock if it is free and returns ErrLockHeld at once if it is not.
func (m *Mutex) TryLock(ctx context.Context) error { return m.lock(ctx, false) }

func (m *Mutex) lock(ctx context.Context, wait bool) error {
	m.op.Lock()
	defer m.op.Unlock()
	return m.take(ctx, fmt.Sprintf("lock %q", m.name), api.ModeExclusive, wait, m.c.lockAcquirer(m.name, api.ModeExclusive))
}

// Unlock releases the lock with the lease and token of the hold, so a retried or late
// Unlock can never free a later grant. A Mutex made by Client.NewMutex then revokes its
// lease. Unlock returns ErrNotLocked when the Mutex does not hold the lock, and
// ErrNotHolder or ErrLeaseNotFound when the lock had already been lost; in every case but
// a network failure the Mutex no longer counts itself as holding the lock.
func (m *Mutex) Unlock(ctx context.Context) error {
	return m.giveBack(ctx, fmt.Sprintf("unlock %q", m.name))
}
