package client

import (
	"context"
	"fmt"

	"github.com/raftlock/raftlock/api"
)

// Semaphore is one permit of a counting semaphore: at most limit leases hold a permit of
// the semaphore at a time, each with a fencing token of its own. The first acquirer of a
// semaphore that is not in use sets its limit; while any permit is held or awaited, a
// request with another limit fails with ErrLimitConflict. Waiters queue in FIFO order and
// a freed permit goes to the head of the queue in the same commit; a lease that expires
// or is revoked frees its permit on cluster time.
//
// A Semaphore has the options, the lease handling, Lost and SafeUntil of Mutex. One
// lease holds at most one permit of a semaphore: take several permits with several
// leases.
type Semaphore struct {
	hold
	limit int
}

// NewSemaphore returns a Semaphore for one permit of semaphore name, of limit permits,
// held with lease.
func NewSemaphore(lease *Lease, name string, limit int, opts ...MutexOption) *Semaphore {
	return newSemaphore(lease.c, lease, name, limit, opts)
}

// NewSemaphore returns a Semaphore for one permit of semaphore name, of limit permits,
// that creates its own lease (WithLeaseTTL) for each hold and revokes it on Release.
func (c *Client) NewSemaphore(name string, limit int, opts ...MutexOption) *Semaphore {
	return newSemaphore(c, nil, name, limit, opts)
}

func newSemaphore(c *Client, given *Lease, name string, limit int, opts []MutexOption) *Semaphore {
	s := newHold[Semaphore](c, given, name, "semaphore", opts, c.releaser(fmt.Sprintf("release a permit of %q", name), semaphoresRoute, name))
	s.limit = limit
	return s
}

// Limit returns the limit the Semaphore asks for.
func (s *Semaphore) Limit() int { return s.limit }

// Acquire takes a permit, waiting in the semaphore's FIFO queue for as long as ctx allows,
// as Mutex.Lock does. It returns nil at once when the Semaphore holds a permit already.
func (s *Semaphore) Acquire(ctx context.Context) error { return s.acquire(ctx, true) }

// TryAcquire takes a permit if one is free and returns ErrSemaphoreFull at once if not.
func (s *Semaphore) TryAcquire(ctx context.Context) error { return s.acquire(ctx, false) }

func (s *Semaphore) acquire(ctx context.Context, wait bool) error {
	s.op.Lock()
	defer s.op.Unlock()
	op := fmt.Sprintf("acquire a permit of %q", s.name)
	if err := invalid(op, api.ValidateSemaphoreLimit(int64(s.limit))); err != nil {
		return err
	}
	return s.take(ctx, op, "", wait, func(ctx context.Context, opts AcquireOptions) (grant, result, error) {
		var out api.SemaphoreGrant
		res, err := s.c.acquireAt(ctx, op, semaphoresRoute, s.name, opts, func(r api.AcquireRequest) any {
			return api.SemaphoreAcquireRequest{Limit: int64(s.limit), LeaseID: r.LeaseID, TTLMs: r.TTLMs, WaitMs: r.WaitMs, Owner: r.Owner, RequestID: r.RequestID, MaxHoldMs: r.MaxHoldMs}
		}, &out)
		return grant{token: out.Token, leaseID: out.LeaseID, ttlMs: out.TTLMs}, res, err
	})
}

// Release gives the permit back with the lease and token of the hold, as Mutex.Unlock
// does; one made by Client.NewSemaphore then revokes its lease. It returns ErrNotLocked
// when no permit is held.
func (s *Semaphore) Release(ctx context.Context) error {
	return s.giveBack(ctx, fmt.Sprintf("release a permit of %q", s.name))
}

// SemaphoreStatus reads semaphore name: its limit, the permits held (owner and token, in
// grant order) and the number of waiters. A semaphore not in use has limit 0 and no
// permits. opts make it a blocking query or a stale read, as for Status.
func (c *Client) SemaphoreStatus(ctx context.Context, name string, opts StatusOptions) (api.SemaphoreStatus, error) {
	return statusAt[api.SemaphoreStatus](ctx, c, fmt.Sprintf("semaphore status %q", name), semaphoresRoute, name, opts)
}
