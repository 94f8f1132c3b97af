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
	var out api.LockSetGrant
	_, err := c.acquireSetAt(ctx, setOp(names), names, opts, &out)
	return out, err
}

// setOp names a call on the lockset of names in errors.
func setOp(names []string) string { return fmt.Sprintf("lockset %s", strings.Join(names, ",")) }

// checkSetNames checks the names of a lockset: their number and each name.
func checkSetNames(op string, names []string) error {
	if len(names) == 0 || len(names) > api.MaxLockSetNames {
		return wrap(ErrInvalid, nil, "%s: a lockset names 1 to %d locks", op, api.MaxLockSetNames)
	}
	for _, n := range names {
		if err := checkNameOf(op, "lock", n); err != nil {
			return err
		}
	}
	return nil
}

// acquireSetAt is acquireAt for POST /v1/locksets.
func (c *Client) acquireSetAt(ctx context.Context, op string, names []string, opts AcquireOptions, out *api.LockSetGrant) (result, error) {
	if err := checkSetNames(op, names); err != nil {
		return result{}, err
	}
	mode, ae := api.NormalizeMode(opts.Mode)
	if err := invalid(op, ae); err != nil {
		return result{}, err
	}
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
	_, err := c.releaseSetAt(ctx, "release lockset", leaseID, locks)
	return err
}

// releaseSetAt is releaseAt for DELETE /v1/locksets.
func (c *Client) releaseSetAt(ctx context.Context, op, leaseID string, locks []api.LockToken) (result, error) {
	if err := checkLeaseID(op, leaseID); err != nil {
		return result{}, err
	}
	return c.do(ctx, &request{
		op: op, method: http.MethodDelete, path: locksetsRoute,
		body:    func() any { return api.LockSetRelease{LeaseID: leaseID, Locks: locks} },
		secrets: []string{leaseID},
	}, &api.LockSetReleased{})
}

// LockSet is several exclusive locks held together by one lease, taken in one commit:
// two workers taking {a, b} in different orders cannot deadlock, and a crash midway
// leaves nothing taken. Each lock has its own fencing token. It has the options, the
// lease handling, Lost and SafeUntil of Mutex, and is safe for concurrent use; its calls
// are serialized.
type LockSet struct {
	hold
	names []string
}

// NewLockSet returns a LockSet of the locks names held with lease (WithOwner,
// WithMaxHold, WithLockDelay and WithWaitChunk apply).
func NewLockSet(lease *Lease, names []string, opts ...MutexOption) *LockSet {
	return newLockSet(lease.c, lease, names, opts)
}

func newLockSet(c *Client, given *Lease, names []string, opts []MutexOption) *LockSet {
	names = slices.Clone(names)
	s := newHold[LockSet](c, given, strings.Join(names, ","), "lockset", opts, func(ctx context.Context, leaseID string, g grant) (result, error) {
		return c.releaseSetAt(ctx, "unlock "+setOp(names), leaseID, g.locks)
	})
	s.names = names
	s.check = func(op string) error { return checkSetNames(op, names) }
	return s
}

// NewLockSet returns a LockSet of the locks names that creates a lease of its own
// (WithLeaseTTL, kept alive) for each hold, as Client.NewMutex does: Lock waits, TryLock
// fails at once with ErrLockHeld; Unlock releases the set and revokes the lease.
func (c *Client) NewLockSet(names []string, opts ...MutexOption) *LockSet {
	return newLockSet(c, nil, names, opts)
}

// LockSet takes every lock of names at once with a lease of its own (WithLeaseTTL, kept
// alive), waiting in every queue for as long as ctx allows (re-issued in chunks of
// WithWaitChunk), and returns the held set. It fails with ErrDeadlock when waiting would
// close a cycle, with ctx's error or ErrWaitTimeout when ctx ends first. Unlock releases
// the set and revokes the lease; a later Lock takes the set with a new lease.
func (c *Client) LockSet(ctx context.Context, names []string, opts ...MutexOption) (*LockSet, error) {
	s := newLockSet(c, nil, names, opts)
	if err := s.Lock(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Lock takes every lock of the set, waiting as ctx allows (see Client.LockSet). It
// returns nil at once when the set is held with a live lease.
func (s *LockSet) Lock(ctx context.Context) error { return s.lock(ctx, true) }

// TryLock takes every lock of the set if all are free, and fails with ErrLockHeld (none
// taken) otherwise.
func (s *LockSet) TryLock(ctx context.Context) error { return s.lock(ctx, false) }

func (s *LockSet) lock(ctx context.Context, wait bool) error {
	s.op.Lock()
	defer s.op.Unlock()
	op := setOp(s.names)
	return s.take(ctx, op, "", wait, func(ctx context.Context, opts AcquireOptions) (grant, result, error) {
		var out api.LockSetGrant
		res, err := s.c.acquireSetAt(ctx, op, s.names, opts, &out)
		g := grant{leaseID: out.LeaseID, ttlMs: out.TTLMs, locks: out.Locks}
		if len(out.Locks) > 0 {
			g.token = out.Locks[0].Token
		}
		return g, res, err
	})
}

// Tokens returns every lock of the set with its fencing token, in name order (nil when
// the set is not held).
func (s *LockSet) Tokens() []api.LockToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.grant.locks)
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

// Unlock releases every lock of the set in one commit, with the lease and tokens of the
// hold, as Mutex.Unlock does; a set made by Client.LockSet then revokes its lease.
// ErrNotLocked when the set is not held.
func (s *LockSet) Unlock(ctx context.Context) error {
	return s.giveBack(ctx, "unlock "+setOp(s.names))
}
