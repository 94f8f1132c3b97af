package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Defaults of the held primitives (Mutex, RWMutex, Semaphore, Election).
const (
	// DefaultMutexTTL is the TTL of the lease a Mutex (or an RWMutex, a Semaphore, an
	// Election) creates for itself.
	DefaultMutexTTL = time.Duration(api.DefaultTTLMs) * time.Millisecond
	// DefaultWaitChunk is the longest single server-side wait Lock (RLock, Acquire,
	// Campaign) asks for; longer waits are re-issued. It stays well below api.MaxWaitMs
	// and common proxy idle timeouts.
	DefaultWaitChunk = 240 * time.Second
)

// MutexOption configures a Mutex, and likewise an RWMutex, a Semaphore or an Election:
// they share the options and the lease handling.
type MutexOption func(*holdOptions)

// holdOptions are the options of a held primitive.
type holdOptions struct {
	owner     string
	chunk     time.Duration
	ttl       time.Duration
	leaseOpts []LeaseOption
	// maxHold and lockDelay are WithMaxHold's and WithLockDelay's (lockset.go).
	maxHold, lockDelay time.Duration
}

// WithOwner sets the label shown in the lock's (semaphore's, election's) status: a host
// name, a job ID; empty means none.
func WithOwner(owner string) MutexOption { return func(o *holdOptions) { o.owner = owner } }

// WithLeaseTTL sets the TTL of the lease a Mutex made by Client.NewMutex (or an RWMutex,
// Semaphore or Election made by the Client) creates for each hold (default
// DefaultMutexTTL). It has no effect on one made on a given Lease.
func WithLeaseTTL(ttl time.Duration) MutexOption { return func(o *holdOptions) { o.ttl = ttl } }

// WithLeaseOptions sets the options of the lease a Mutex made by Client.NewMutex (or an
// RWMutex, Semaphore or Election made by the Client) creates.
func WithLeaseOptions(opts ...LeaseOption) MutexOption {
	return func(o *holdOptions) { o.leaseOpts = append(o.leaseOpts, opts...) }
}

// WithWaitChunk sets the longest single server-side wait of Lock (RLock, Acquire,
// Campaign; default DefaultWaitChunk, at most api.MaxWaitMs). A wait that is re-issued
// joins the back of the queue again, so longer chunks keep a waiter's place longer.
func WithWaitChunk(d time.Duration) MutexOption {
	return func(o *holdOptions) {
		if d > 0 {
			o.chunk = min(d, time.Duration(api.MaxWaitMs)*time.Millisecond)
		}
	}
}

// grant is what every acquire-like answer carries: a lock grant (either mode), a permit,
// a leadership, a lockset.
type grant struct {
	token   uint64
	leaseID string
	ttlMs   int64
	// locks are a lockset's locks with their tokens (token is then theirs: one entry
	// grants them all); nil for the other primitives.
	locks []api.LockToken
}

// acquireFunc sends one acquire of a primitive with opts (LeaseID, or TTL for a lease
// created with the grant; Wait; Owner).
type acquireFunc func(ctx context.Context, opts AcquireOptions) (grant, result, error)

// releaseFunc gives back grant g of leaseID.
type releaseFunc func(ctx context.Context, leaseID string, g grant) (result, error)

// hold is the machinery every held primitive shares: a grant held by a lease (a given
// one, or one created per hold), taken with server-side waits that are re-issued, given
// back with the lease and the token, and watched for loss. Mutex, RWMutex, Semaphore,
// Election and LockSet embed it; they differ only in the requests they send.
type hold struct {
	c       *Client
	name    string
	kind    string // "lock", "semaphore", "election", "lockset": for error texts
	o       holdOptions
	given   *Lease // nil: a lease is created per hold
	release releaseFunc
	// check checks the name before anything is sent or a lease is created.
	check func(op string) error

	op sync.Mutex // serializes taking and giving back

	mu    sync.Mutex
	lease *Lease // lease of the current hold
	grant grant  // the current hold's grant
	mode  string // the variant held: a lock's mode; "" for the other primitives
	held  bool
	// end is closed when the current hold's maximum hold ends it (or the lease is lost);
	// nil without a maximum hold. stopEnd disarms it.
	end     chan struct{}
	stopEnd func()
}

// held is a primitive built on a hold: *Mutex, *RWMutex, *Semaphore, *Election or
// *LockSet.
type held[T any] interface {
	*T
	base() *hold
}

// base is the hold a primitive embeds.
func (h *hold) base() *hold { return h }

// newHold makes a T around a hold of name (of kind, given back with release): the one
// constructor of the primitives.
func newHold[T any, P held[T]](c *Client, given *Lease, name, kind string, opts []MutexOption, release releaseFunc) *T {
	t := new(T)
	P(t).base().init(c, given, name, kind, opts, release)
	return t
}

// newLockHold makes a T around a hold of lock name: Mutex and RWMutex are the two views
// of one lock, taken and released on the same routes.
func newLockHold[T any, P held[T]](c *Client, given *Lease, name string, opts []MutexOption) *T {
	return newHold[T, P](c, given, name, "lock", opts, c.lockReleaser(name))
}

func (h *hold) init(c *Client, given *Lease, name, kind string, opts []MutexOption, release releaseFunc) {
	h.c, h.given, h.name, h.kind, h.release = c, given, name, kind, release
	h.check = func(op string) error { return checkNameOf(op, kind, name) }
	h.o = holdOptions{chunk: DefaultWaitChunk, ttl: DefaultMutexTTL}
	for _, o := range opts {
		o(&h.o)
	}
}

// whileHeld reads *v, a field that h.mu guards, while a grant is held, and is "" otherwise:
// what a grant published (a mode, a value) means nothing once it is gone.
func (h *hold) whileHeld(v *string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return ""
	}
	return *v
}

// Name returns the name of the lock (semaphore, election; a lockset's names joined by
// commas).
func (h *hold) Name() string { return h.name }

// take takes the grant in mode, waiting (when wait) for as long as ctx allows. It returns
// nil at once when the same mode is held with a live lease, and ErrModeConflict when the
// other mode is. The caller holds h.op.
func (h *hold) take(ctx context.Context, op, mode string, wait bool, acq acquireFunc) error {
	h.mu.Lock()
	if h.held && h.lease.lost() == nil {
		held := h.mode
		h.mu.Unlock()
		if held != mode {
			return wrap(ErrModeConflict, nil, "%s: held in %s mode; release it first", op, held)
		}
		return nil
	}
	h.held, h.grant, h.lease, h.mode = false, grant{}, nil, ""
	h.mu.Unlock()

	if err := h.check(op); err != nil {
		return err
	}
	lease := h.given
	if lease == nil {
		if _, err := newLeaseConfig(op, h.o.ttl, h.o.leaseOpts); err != nil {
			return err
		}
		if !wait {
			// One round trip: the server creates the lease in the entry that grants, and
			// creates nothing when it refuses. Retries carry the request ID acquireAt draws,
			// so they cannot create a second lease.
			g, res, err := acq(ctx, AcquireOptions{TTL: h.o.ttl, Owner: h.o.owner, MaxHold: h.o.maxHold, LockDelay: h.o.lockDelay})
			if err != nil {
				return err
			}
			// SafeUntil counts from the first attempt: the lease may have been created by
			// it (its answer lost) and only returned by a later one.
			l, err := h.c.startLease(g.leaseID, time.Duration(g.ttlMs)*time.Millisecond, res.first, h.o.leaseOpts)
			if err != nil {
				h.c.revokeQuietly(ctx, g.leaseID)
				return err
			}
			h.setHeld(l, g, mode)
			h.armMaxHold(l, res.sent) // granted at once: no earlier than this send
			return nil
		}
		var err error
		if lease, err = h.c.NewLease(ctx, h.o.ttl, h.o.leaseOpts...); err != nil {
			return err
		}
	}
	err := h.takeWith(ctx, op, mode, lease, wait, acq)
	if err != nil && h.given == nil {
		cctx, cancel := h.c.cleanupContext(ctx)
		defer cancel()
		_ = lease.Close(cctx)
	}
	return err
}

func (h *hold) setHeld(l *Lease, g grant, mode string) {
	h.mu.Lock()
	h.lease, h.grant, h.mode, h.held = l, g, mode, true
	h.mu.Unlock()
}

// takeWith takes the grant with lease, re-issuing server-side waits until ctx ends.
func (h *hold) takeWith(ctx context.Context, op, mode string, lease *Lease, wait bool, acq acquireFunc) error {
	for {
		if err := lease.lost(); err != nil {
			return wrap(ErrLeaseLost, err, "%s: the lease is lost", op)
		}
		var w time.Duration
		if wait {
			w = h.o.chunk
			if dl, ok := ctx.Deadline(); ok {
				w = min(w, max(time.Until(dl), time.Millisecond))
			}
		}
		// The request ends when the lease is lost: the server then drops the wait.
		rctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(lease.ctx, cancel)
		g, res, err := acq(rctx, AcquireOptions{LeaseID: lease.ID(), Wait: w, Owner: h.o.owner, MaxHold: h.o.maxHold, LockDelay: h.o.lockDelay})
		stop()
		cancel()
		if err == nil {
			if !lease.observe(res.sent) {
				// Granted, but the lease was declared lost meanwhile: give the grant back.
				h.releaseQuietly(ctx, lease.ID(), g)
				return wrap(ErrLeaseLost, lease.Err(), "%s: the lease was lost as it was granted", op)
			}
			h.setHeld(lease, g, mode)
			from := res.sent
			if wait {
				from = time.Now() // a waited grant came after the send, by up to the wait
			}
			h.armMaxHold(lease, from)
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
				h.c.log.Debug("re-issuing a wait", h.kind, h.name)
				continue
			}
		}
		return err
	}
}

// giveBack releases the grant with the lease and token of the hold, so that a retried or
// late release can never free a later grant; a hold on a lease of its own then revokes
// the lease. It returns ErrNotLocked when nothing is held, and ErrNotHolder or
// ErrLeaseNotFound when the grant had already been lost; in every case but a network
// failure the hold is over. It holds h.op while it runs.
func (h *hold) giveBack(ctx context.Context, op string) error {
	h.op.Lock()
	defer h.op.Unlock()
	h.mu.Lock()
	held, lease, g := h.held, h.lease, h.grant
	h.mu.Unlock()
	if !held {
		return wrap(ErrNotLocked, nil, "%s", op)
	}
	res, err := h.release(ctx, lease.ID(), g)
	if err != nil && res.attempts > 1 && errors.Is(err, ErrNotHolder) && lease.lost() == nil {
		err = nil // an earlier attempt, whose answer was lost, released it
	}
	gone := err == nil || errors.Is(err, ErrNotHolder) || errors.Is(err, ErrLeaseNotFound)
	if h.given == nil {
		// Our own lease holds nothing else: revoking it releases the grant in any case.
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
		h.mu.Lock()
		h.held, h.grant, h.lease, h.mode = false, grant{}, nil, ""
		h.disarmMaxHold()
		h.mu.Unlock()
	}
	return err
}

// current returns the lease and token of the hold, and whether anything is held.
func (h *hold) current() (*Lease, uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease, h.grant.token, h.held
}

// Token returns the fencing token of the current hold, zero when nothing is held. It
// stays readable after the lease is lost, until the grant is given back or taken again,
// so that a holder can still label what it was doing; writes must stop at Lost.
func (h *hold) Token() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.grant.token
}

// closedChan is returned by Lost when nothing is held.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Lost returns a channel closed when the current hold is lost: the lease was lost or
// closed, its SafeUntil passed without an answered keepalive, or the maximum hold
// (WithMaxHold) ended the grant. When nothing is held,
// the channel is already closed.
func (h *hold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return closedChan
	}
	if h.end != nil {
		return h.end
	}
	return h.lease.Done()
}

// Lease returns the lease of the current hold (the given lease for one made on a Lease),
// or nil when one that creates its own leases holds nothing.
func (h *hold) Lease() *Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lease == nil {
		return h.given
	}
	return h.lease
}

// SafeUntil returns the SafeUntil of the current hold's lease, or the zero time when
// nothing is held.
func (h *hold) SafeUntil() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return time.Time{}
	}
	return h.lease.SafeUntil()
}

// releaseQuietly gives back a grant nobody will use.
func (h *hold) releaseQuietly(ctx context.Context, id string, g grant) {
	rctx, cancel := h.c.cleanupContext(ctx)
	defer cancel()
	if _, err := h.release(rctx, id, g); err != nil {
		h.c.log.Debug("releasing an unused grant failed", h.kind, h.name, "error", err)
	}
}
