package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Deadlock detection, locksets, maximum holds and lock delays (protocol version 3).

var (
	// ErrDeadlock: a waiting acquire would have closed a cycle of waiting leases (409
	// deadlock); nothing was queued. The message names the cycle's locks and lease
	// fingerprints. Release what you hold of the cycle, or take the locks together
	// (Client.LockSet).
	ErrDeadlock = errors.New("client: deadlock")
	// ErrVersionInactive: the request uses what a protocol version the cluster has not yet
	// activated adds (409 version_inactive): a lockset, a maximum hold or a lock delay
	// during a rolling upgrade. Nothing was applied.
	ErrVersionInactive = errors.New("client: protocol version not active")
)

// locksetsRoute is the route of locksets.
const locksetsRoute = "/v1/locksets"

// WithMaxHold makes every grant of the hold end at most d after it, even while its
// lease is kept alive (max_hold_ms): the next waiter is then granted, and Lost fires.
// Lost is timed from when the request that was granted was sent when it was granted at
// once, and from its answer when it waited (the grant came at some point of the wait:
// that may be up to the answer's network time after the real end). Zero: none.
func WithMaxHold(d time.Duration) MutexOption { return func(o *holdOptions) { o.maxHold = d } }

// WithLockDelay keeps the lock from everyone for d after the hold's lease expired or was
// revoked without a release (lock_delay_ms; exclusive locks only): for storage that
// cannot check fencing tokens. Zero: none.
func WithLockDelay(d time.Duration) MutexOption { return func(o *holdOptions) { o.lockDelay = d } }

// armMaxHold starts the timer of the maximum hold of the grant just set on lease l,
// granted no earlier than from. Lost then fires at the earlier of the lease's loss and
// from + the maximum hold.
func (h *hold) armMaxHold(l *Lease, from time.Time) {
	if h.o.maxHold <= 0 {
		return
	}
	end, stop := endChannel(l, time.Until(from.Add(h.o.maxHold)))
	h.mu.Lock()
	h.disarmMaxHold()
	h.end, h.stopEnd = end, stop
	h.mu.Unlock()
}

// disarmMaxHold stops the maximum hold's timer; h.mu is held.
func (h *hold) disarmMaxHold() {
	if h.stopEnd != nil {
		h.stopEnd()
	}
	h.end, h.stopEnd = nil, nil
}

// endChannel returns a channel closed after d or when l is lost, whichever is first, and
// a function that closes it at once (and frees its goroutine).
func endChannel(l *Lease, d time.Duration) (chan struct{}, func()) {
	ch := make(chan struct{})
	var once sync.Once
	fire := func() { once.Do(func() { close(ch) }) }
	t := time.AfterFunc(max(d, 0), fire)
	go func() {
		select {
		case <-l.Done():
			fire()
		case <-ch:
		}
	}()
	return ch, func() { t.Stop(); fire() }
}

// AcquireSet takes every lock of names in one commit, or none: ErrLockHeld (naming the
// held locks) when one is not free and opts.Wait is zero, ErrDeadlock when waiting would
// close a cycle. With opts.Wait the set waits as one request in every queue and the
// answer comes from the commit that grants them all. opts.Mode applies to every lock.
// Like Acquire it is idempotent and retried across endpoints.
func (c *Client) AcquireSet(ctx context.Context, names []string, opts AcquireOptions) (api.LockSetGrant, error) {
	op := fmt.Sprintf("lockset %s", strings.Join(names, ","))
	if len(names) == 0 || len(names) > api.MaxLockSetNames {
		return api.LockSetGrant{}, wrap(ErrInvalid, nil, "%s: a lockset names 1 to %d locks", op, api.MaxLockSetNames)
	}
	mode, ae := api.NormalizeMode(opts.Mode)
	if err := invalid(op, ae); err != nil {
		return api.LockSetGrant{}, err
	}
	var out api.LockSetGrant
	// acquireAt checks the first name, the lease, the request ID and the wait, and sends
	// the shared fields; the body adds the names.
	for _, n := range names {
		if err := checkNameAt(op, locksRoute, n); err != nil {
			return out, err
		}
	}
	_, err := c.acquireSetAt(ctx, op, names, opts, mode, &out)
	return out, err
}

// acquireSetAt is acquireAt for POST /v1/locksets.
func (c *Client) acquireSetAt(ctx context.Context, op string, names []string, opts AcquireOptions, mode string, out *api.LockSetGrant) (result, error) {
	reqID, remaining, err := acquireParams(op, opts)
	if err != nil {
		return result{}, err
	}
	return c.do(ctx, &request{
		op: op, method: http.MethodPost, path: locksetsRoute,
		body: func() any {
			return api.LockSetRequest{Names: names, LeaseID: opts.LeaseID, TTLMs: ms(opts.TTL), WaitMs: ms(remaining()), Owner: opts.Owner,
				RequestID: reqID, Mode: mode, MaxHoldMs: ms(opts.MaxHold), LockDelayMs: ms(opts.LockDelay)}
		},
		waitFn:  remaining,
		secrets: []string{opts.LeaseID, reqID},
	}, out)
}

// ReleaseSet releases every lock of locks, held by leaseID with those tokens, in one
// commit, or none (ErrNotHolder naming those not held so).
func (c *Client) ReleaseSet(ctx context.Context, leaseID string, locks []api.LockToken) error {
	op := "release lockset"
	if err := checkLeaseID(op, leaseID); err != nil {
		return err
	}
	_, err := c.do(ctx, &request{
		op: op, method: http.MethodDelete, path: locksetsRoute,
		body:    func() any { return api.LockSetRelease{LeaseID: leaseID, Locks: locks} },
		secrets: []string{leaseID},
	}, &api.LockSetReleased{})
	return err
}

// LockSet is several exclusive locks held together by one lease, taken in one commit:
// two workers taking {a, b} in different orders cannot deadlock, and a crash midway
// leaves nothing taken. Each lock has its own fencing token. It is safe for concurrent
// use; its calls are serialized.
type LockSet struct {
	c     *Client
	names []string
	o     holdOptions
	given *Lease // nil: Client.LockSet's own lease, revoked by Unlock

	mu    sync.Mutex
	lease *Lease
	grant api.LockSetGrant
	held  bool
	end   chan struct{}
	stop  func()
}

// NewLockSet returns a LockSet of the locks names held with lease (WithOwner,
// WithMaxHold, WithLockDelay and WithWaitChunk apply).
func NewLockSet(lease *Lease, names []string, opts ...MutexOption) *LockSet {
	s := &LockSet{c: lease.c, names: slices.Clone(names), given: lease, o: holdOptions{chunk: DefaultWaitChunk, ttl: DefaultMutexTTL}}
	for _, o := range opts {
		o(&s.o)
	}
	return s
}

// LockSet takes every lock of names at once with a lease of its own (WithLeaseTTL, kept
// alive), waiting in every queue for as long as ctx allows (re-issued in chunks of
// WithWaitChunk), and returns the held set. It fails with ErrDeadlock when waiting would
// close a cycle, with ctx's error or ErrWaitTimeout when ctx ends first. Unlock releases
// the set and revokes the lease.
func (c *Client) LockSet(ctx context.Context, names []string, opts ...MutexOption) (*LockSet, error) {
	s := &LockSet{c: c, names: slices.Clone(names), o: holdOptions{chunk: DefaultWaitChunk, ttl: DefaultMutexTTL}}
	for _, o := range opts {
		o(&s.o)
	}
	lease, err := c.NewLease(ctx, s.o.ttl, s.o.leaseOpts...)
	if err != nil {
		return nil, err
	}
	if err := s.take(ctx, lease, true); err != nil {
		cctx, cancel := c.cleanupContext(ctx)
		_ = lease.Close(cctx)
		cancel()
		return nil, err
	}
	return s, nil
}

// Lock takes every lock of the set, waiting as ctx allows (see Client.LockSet).
func (s *LockSet) Lock(ctx context.Context) error { return s.take(ctx, s.given, true) }

// TryLock takes every lock of the set if all are free, and fails with ErrLockHeld (none
// taken) otherwise.
func (s *LockSet) TryLock(ctx context.Context) error { return s.take(ctx, s.given, false) }

func (s *LockSet) take(ctx context.Context, lease *Lease, wait bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held && lease.lost() == nil {
		return nil
	}
	for {
		if err := lease.lost(); err != nil {
			return wrap(ErrLeaseLost, err, "lockset: the lease is lost")
		}
		var w time.Duration
		if wait {
			w = s.o.chunk
			if dl, ok := ctx.Deadline(); ok {
				w = min(w, max(time.Until(dl), time.Millisecond))
			}
		}
		rctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(lease.ctx, cancel)
		sent := time.Now()
		g, err := s.c.AcquireSet(rctx, s.names, AcquireOptions{LeaseID: lease.ID(), Wait: w, Owner: s.o.owner, MaxHold: s.o.maxHold, LockDelay: s.o.lockDelay})
		stop()
		cancel()
		if err == nil {
			s.lease, s.grant, s.held = lease, g, true
			if s.o.maxHold > 0 {
				from := sent
				if wait {
					from = time.Now()
				}
				s.end, s.stop = endChannel(lease, time.Until(from.Add(s.o.maxHold)))
			}
			return nil
		}
		if lerr := lease.lost(); lerr != nil {
			return wrap(ErrLeaseLost, lerr, "lockset: the lease was lost while waiting")
		}
		if wait && errors.Is(err, ErrWaitTimeout) && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// Tokens returns every lock of the set with its fencing token, in name order (nil when
// the set is not held).
func (s *LockSet) Tokens() []api.LockToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.grant.Locks)
}

// Token returns the fencing token of lock name in the set (0 when not held).
func (s *LockSet) Token(name string) uint64 {
	for _, lt := range s.Tokens() {
		if lt.Name == name {
			return lt.Token
		}
	}
	return 0
}

// Lease returns the set's lease.
func (s *LockSet) Lease() *Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil {
		return s.given
	}
	return s.lease
}

// Lost returns a channel closed when the set is lost: its lease was lost, or the maximum
// hold (WithMaxHold) ended its grants. It is closed already when the set is not held.
func (s *LockSet) Lost() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.held:
		return closedChan
	case s.end != nil:
		return s.end
	}
	return s.lease.Done()
}

// Unlock releases every lock of the set in one commit; a set made by Client.LockSet then
// revokes its lease. ErrNotLocked when the set is not held.
func (s *LockSet) Unlock(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return wrap(ErrNotLocked, nil, "unlock lockset")
	}
	err := s.c.ReleaseSet(ctx, s.lease.ID(), s.grant.Locks)
	if s.given == nil {
		if cerr := s.lease.Close(ctx); cerr == nil {
			err = nil // the revoke releases whatever the release did not
		} else if err == nil {
			err = cerr
		}
	}
	if s.stop != nil {
		s.stop()
	}
	s.held, s.grant, s.end, s.stop = false, api.LockSetGrant{}, nil, nil
	return err
}
