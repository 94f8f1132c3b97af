package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Mutex defaults.
const (
	// DefaultMutexTTL is the TTL of the lease a Mutex creates for itself.
	DefaultMutexTTL = time.Duration(api.DefaultTTLMs) * time.Millisecond
	// DefaultWaitChunk is the longest single server-side wait Lock asks for; longer waits
	// are re-issued. It stays well below api.MaxWaitMs and common proxy idle timeouts.
	DefaultWaitChunk = 240 * time.Second
)

// MutexOption configures a Mutex.
type MutexOption func(*Mutex)

// WithOwner sets the label shown in the lock's status (a host name, a job ID); empty
// means none.
func WithOwner(owner string) MutexOption { return func(m *Mutex) { m.owner = owner } }

// WithLeaseTTL sets the TTL of the lease a Mutex made by Client.NewMutex creates for each
// hold (default DefaultMutexTTL). It has no effect on a Mutex made on a given Lease.
func WithLeaseTTL(ttl time.Duration) MutexOption { return func(m *Mutex) { m.ttl = ttl } }

// WithLeaseOptions sets the options of the lease a Mutex made by Client.NewMutex creates.
func WithLeaseOptions(opts ...LeaseOption) MutexOption {
	return func(m *Mutex) { m.leaseOpts = append(m.leaseOpts, opts...) }
}

// WithWaitChunk sets the longest single server-side wait of Lock (default
// DefaultWaitChunk, at most api.MaxWaitMs). A wait that is re-issued joins the back of the
// lock's queue again, so longer chunks keep a waiter's place longer.
func WithWaitChunk(d time.Duration) MutexOption {
	return func(m *Mutex) {
		if d > 0 {
			m.chunk = min(d, time.Duration(api.MaxWaitMs)*time.Millisecond)
		}
	}
}

// Mutex is an exclusive lock held by a lease. Each grant comes with a fencing token
// (Token) that the holder must pass to every write it makes under the lock; the storage
// must refuse tokens lower than the highest it has seen. A Mutex can NOT promise that
// it is still held when the holder acts: a holder can pause (GC, swap, SIGSTOP) for
// longer than its lease. Lost and SafeUntil make that rare; the token makes it harmless.
//
// A Mutex serializes its own Lock, TryLock and Unlock calls; it is safe for concurrent
// use, but two goroutines sharing one Mutex share its hold.
type Mutex struct {
	c         *Client
	name      string
	owner     string
	chunk     time.Duration
	given     *Lease // nil: the Mutex creates a lease per hold
	ttl       time.Duration
	leaseOpts []LeaseOption

	op sync.Mutex // serializes Lock, TryLock and Unlock

	mu    sync.Mutex
	lease *Lease // lease of the current hold
	token uint64
	held  bool
}

// NewMutex returns a Mutex for lock name held with lease. Many Mutexes may share one
// lease (one keepalive stream for many locks); all are lost together when it is.
func NewMutex(lease *Lease, name string, opts ...MutexOption) *Mutex {
	m := newMutex(lease.c, name, opts)
	m.given = lease
	return m
}

// NewMutex returns a Mutex for lock name that creates its own lease (WithLeaseTTL) for
// each hold and revokes it on Unlock.
func (c *Client) NewMutex(name string, opts ...MutexOption) *Mutex {
	return newMutex(c, name, opts)
}

func newMutex(c *Client, name string, opts []MutexOption) *Mutex {
	m := &Mutex{c: c, name: name, chunk: DefaultWaitChunk, ttl: DefaultMutexTTL}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

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
	m.mu.Lock()
	if m.held && m.lease.lost() == nil {
		m.mu.Unlock()
		return nil
	}
	m.held, m.token, m.lease = false, 0, nil
	m.mu.Unlock()

	op := fmt.Sprintf("lock %q", m.name)
	if err := checkName(op, m.name); err != nil {
		return err
	}
	lease := m.given
	if lease == nil {
		if _, err := newLeaseConfig(op, m.ttl, m.leaseOpts); err != nil {
			return err
		}
		if !wait {
			// One round trip: the server creates the lease in the entry that grants the
			// lock, and creates nothing when the lock is held. Retries carry the request ID
			// acquire draws, so they cannot create a second lease.
			g, res, err := m.c.acquire(ctx, m.name, AcquireOptions{TTL: m.ttl, Owner: m.owner})
			if err != nil {
				return err
			}
			// SafeUntil counts from the first attempt: the lease may have been created by
			// it (its answer lost) and only returned by a later one.
			l, err := m.c.startLease(g.LeaseID, time.Duration(g.TTLMs)*time.Millisecond, res.first, m.leaseOpts)
			if err != nil {
				m.c.revokeQuietly(ctx, g.LeaseID)
				return err
			}
			m.setHeld(l, g.Token)
			return nil
		}
		var err error
		if lease, err = m.c.NewLease(ctx, m.ttl, m.leaseOpts...); err != nil {
			return err
		}
	}
	err := m.acquireWith(ctx, op, lease, wait)
	if err != nil && m.given == nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.c.timeout)
		defer cancel()
		_ = lease.Close(cctx)
	}
	return err
}

func (m *Mutex) setHeld(l *Lease, token uint64) {
	m.mu.Lock()
	m.lease, m.token, m.held = l, token, true
	m.mu.Unlock()
}

// acquireWith takes the lock with lease, re-issuing server-side waits until ctx ends.
func (m *Mutex) acquireWith(ctx context.Context, op string, lease *Lease, wait bool) error {
	for {
		if err := lease.lost(); err != nil {
			return wrap(ErrLeaseLost, err, "%s: the lease is lost", op)
		}
		var w time.Duration
		if wait {
			w = m.chunk
			if dl, ok := ctx.Deadline(); ok {
				w = min(w, max(time.Until(dl), time.Millisecond))
			}
		}
		// The request ends when the lease is lost: the server then drops the wait.
		rctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(lease.ctx, cancel)
		g, res, err := m.c.acquire(rctx, m.name, AcquireOptions{LeaseID: lease.ID(), Wait: w, Owner: m.owner})
		stop()
		cancel()
		if err == nil {
			if !lease.observe(res.sent) {
				// Granted, but the lease was declared lost meanwhile: give the lock back.
				m.c.releaseQuietly(ctx, m.name, lease.ID(), g.Token)
				return wrap(ErrLeaseLost, lease.Err(), "%s: the lease was lost as the lock was granted", op)
			}
			m.setHeld(lease, g.Token)
			return nil
		}
		if lerr := lease.lost(); lerr != nil {
			return wrap(ErrLeaseLost, lerr, "%s: the lease was lost while waiting", op)
		}
		if errors.Is(err, ErrLeaseNotFound) {
			lease.lose(wrap(ErrLeaseLost, err, "lease %s: the cluster no longer knows it (it expired or was revoked)", redactID(lease.ID())))
			return wrap(ErrLeaseLost, err, "%s: the lease is gone", op)
		}
		if wait && errors.Is(err, ErrWaitTimeout) && ctx.Err() == nil {
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > 0 {
				m.c.log.Debug("re-issuing a wait", "lock", m.name)
				continue
			}
		}
		return err
	}
}

// Unlock releases the lock with the lease and token of the hold, so a retried or late
// Unlock can never free a later grant. A Mutex made by Client.NewMutex then revokes its
// lease. Unlock returns ErrNotLocked when the Mutex does not hold the lock, and
// ErrNotHolder or ErrLeaseNotFound when the lock had already been lost; in every case but
// a network failure the Mutex no longer counts itself as holding the lock.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.op.Lock()
	defer m.op.Unlock()
	m.mu.Lock()
	held, lease, token := m.held, m.lease, m.token
	m.mu.Unlock()
	if !held {
		return wrap(ErrNotLocked, nil, "unlock %q", m.name)
	}
	res, err := m.c.release(ctx, m.name, lease.ID(), token)
	if err != nil && res.attempts > 1 && errors.Is(err, ErrNotHolder) && lease.lost() == nil {
		err = nil // an earlier attempt, whose answer was lost, released it
	}
	gone := err == nil || errors.Is(err, ErrNotHolder) || errors.Is(err, ErrLeaseNotFound)
	if m.given == nil {
		// Our own lease holds nothing else: revoking it releases the lock in any case.
		if cerr := lease.Close(ctx); cerr == nil {
			if !gone {
				err = nil // the release did not get through, but the revoke did
			}
			gone = true
		} else if err == nil {
			err = cerr
		}
	}
	if gone {
		m.mu.Lock()
		m.held, m.token, m.lease = false, 0, nil
		m.mu.Unlock()
	}
	return err
}

// Token returns the fencing token of the current hold, zero when the Mutex does not hold
// the lock. It stays readable after the lease is lost, until Unlock or the next Lock, so
// that a holder can still label what it was doing; writes must stop at Lost.
func (m *Mutex) Token() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token
}

// closedChan is returned by Lost when nothing is held.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Lost returns a channel closed when the current hold is lost: the lease was lost or
// closed, or its SafeUntil passed without an answered keepalive. When the Mutex does not
// hold the lock, the channel is already closed.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return closedChan
	}
	return m.lease.Done()
}

// Lease returns the lease of the current hold (the given lease for a Mutex made by
// NewMutex), or nil when a Mutex that creates its own leases holds nothing.
func (m *Mutex) Lease() *Lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return m.given
	}
	return m.lease
}

// SafeUntil returns the SafeUntil of the current hold's lease, or the zero time when the
// Mutex does not hold the lock.
func (m *Mutex) SafeUntil() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.held {
		return time.Time{}
	}
	return m.lease.SafeUntil()
}

// revokeQuietly revokes a lease nobody will use, on a context that survives ctx's end.
func (c *Client) revokeQuietly(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	if _, err := c.Revoke(rctx, id); err != nil {
		c.log.Debug("revoking an unused lease failed; it will expire", "lease", redactID(id), "error", err)
	}
}

// releaseQuietly releases a grant nobody will use.
func (c *Client) releaseQuietly(ctx context.Context, name, id string, token uint64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	if err := c.Release(rctx, name, id, token); err != nil {
		c.log.Debug("releasing an unused grant failed", "lock", name, "error", err)
	}
}
