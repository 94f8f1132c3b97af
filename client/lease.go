package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Lease defaults.
const (
	// MinDriftMargin is the smallest default drift margin (see DefaultDriftMargin).
	MinDriftMargin = 100 * time.Millisecond
	// keepAliveRetryMin bounds how fast a failing keepalive is retried.
	keepAliveRetryMin = 10 * time.Millisecond
)

// DefaultDriftMargin is the margin subtracted from a lease's TTL to compute SafeUntil when
// WithDriftMargin is not given: a tenth of the TTL, and at least MinDriftMargin.
func DefaultDriftMargin(ttl time.Duration) time.Duration {
	return max(ttl/10, MinDriftMargin)
}

// LeaseOption configures a Lease.
type LeaseOption func(*leaseConfig)

type leaseConfig struct {
	drift    time.Duration
	interval time.Duration
}

// WithDriftMargin sets how much earlier than send time + TTL the client stops trusting
// its lease (default DefaultDriftMargin). It covers the rate difference between this
// machine's clock and the servers' and the delay before the holder notices; it must be
// positive and shorter than the TTL.
func WithDriftMargin(d time.Duration) LeaseOption {
	return func(c *leaseConfig) { c.drift = d }
}

// WithKeepAliveInterval sets the pause between keepalives (default TTL/3). Each pause is
// shortened by up to a tenth at random so that many clients do not renew in lockstep. It
// must be shorter than TTL minus the drift margin.
func WithKeepAliveInterval(d time.Duration) LeaseOption {
	return func(c *leaseConfig) { c.interval = d }
}

func newLeaseConfig(op string, ttl time.Duration, opts []LeaseOption) (leaseConfig, error) {
	cfg := leaseConfig{drift: DefaultDriftMargin(ttl), interval: ttl / 3}
	for _, o := range opts {
		o(&cfg)
	}
	if ttl == 0 {
		return cfg, nil // the server's default; checked again once the server has said it
	}
	if ms(ttl) < api.MinTTLMs || ms(ttl) > api.MaxTTLMs {
		return cfg, wrap(ErrInvalid, nil, "%s: TTL %v is outside %v to %v", op, ttl,
			time.Duration(api.MinTTLMs)*time.Millisecond, time.Duration(api.MaxTTLMs)*time.Millisecond)
	}
	if cfg.drift <= 0 || cfg.drift >= ttl {
		return cfg, wrap(ErrInvalid, nil, "%s: drift margin %v must be positive and shorter than the TTL %v", op, cfg.drift, ttl)
	}
	if cfg.interval <= 0 || cfg.interval >= ttl-cfg.drift {
		return cfg, wrap(ErrInvalid, nil, "%s: keepalive interval %v must be positive and shorter than TTL - drift margin (%v)", op, cfg.interval, ttl-cfg.drift)
	}
	return cfg, nil
}

// Lease is a lease kept alive in the background. It knows, on this process's monotonic
// clock, until when the cluster cannot have expired it (SafeUntil), and closes Done as
// soon as it can no longer assume the lease is alive. See the package documentation for
// the timing contract.
//
// A Lease is safe for concurrent use. Close it when done, so that its locks are freed at
// once rather than a TTL later.
type Lease struct {
	c        *Client
	id       string
	ttl      time.Duration
	cfg      leaseConfig
	ctx      context.Context
	cancel   context.CancelFunc
	loopDone chan struct{}
	done     chan struct{}

	mu        sync.Mutex
	lastSent  time.Time // send time of the last answered create, acquire or keepalive
	safeUntil time.Time
	err       error
	watchdog  *time.Timer

	closeOnce sync.Once
	closeErr  error
}

// NewLease creates a lease with the given TTL (zero means the server's default) and keeps
// it alive in the background until Close or until it is lost.
func (c *Client) NewLease(ctx context.Context, ttl time.Duration, opts ...LeaseOption) (*Lease, error) {
	if _, err := newLeaseConfig("new lease", ttl, opts); err != nil {
		return nil, err
	}
	l, res, err := c.createLease(ctx, ttl)
	if err != nil {
		return nil, err
	}
	lease, err := c.startLease(l.LeaseID, time.Duration(l.TTLMs)*time.Millisecond, res.sent, opts)
	if err != nil {
		// The TTL the server chose does not fit the options; do not leave the lease behind.
		c.revokeQuietly(ctx, l.LeaseID)
		return nil, err
	}
	return lease, nil
}

// startLease starts keeping alive a lease whose last answered renewal was sent at sent.
func (c *Client) startLease(id string, ttl time.Duration, sent time.Time, opts []LeaseOption) (*Lease, error) {
	if ttl <= 0 {
		return nil, wrap(ErrServer, nil, "lease %s: the server answered a TTL of %v", redactID(id), ttl)
	}
	cfg, err := newLeaseConfig("lease "+redactID(id), ttl, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lease{
		c: c, id: id, ttl: ttl, cfg: cfg, ctx: ctx, cancel: cancel,
		loopDone: make(chan struct{}), done: make(chan struct{}),
		lastSent: sent, safeUntil: sent.Add(ttl - cfg.drift),
	}
	l.mu.Lock()
	l.watchdog = time.AfterFunc(time.Until(l.safeUntil), l.checkSafe)
	l.mu.Unlock()
	go l.run()
	return l, nil
}

// ID returns the lease ID: the secret that authorizes keepalive, release and revoke.
func (l *Lease) ID() string { return l.id }

// TTL returns the lease's time to live.
func (l *Lease) TTL() time.Duration { return l.ttl }

// DriftMargin returns the margin between SafeUntil and send time + TTL.
func (l *Lease) DriftMargin() time.Duration { return l.cfg.drift }

// SafeUntil returns the latest moment, on this process's clock, at which the holder may
// still assume the lease is alive: the send time of the last answered keepalive (or of the
// create or acquire request) plus TTL minus the drift margin. It only moves forward while
// the lease is live; once the lease is known lost it is at most the moment of the loss.
// The time carries a monotonic reading: compare it with time.Now, never with wall time.
func (l *Lease) SafeUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.safeUntil
}

// Done returns a channel closed when the lease is lost or closed. Err says why. Once
// SafeUntil has passed, the channel it returns is closed, even when the watchdog timer has
// not run yet (right after a pause of the whole process, which delays timers too).
func (l *Lease) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireIfPassedLocked()
	return l.done
}

// Err returns nil while the lease is live; after Done is closed, an error matching
// ErrLeaseLost (the cluster said the lease is gone, or SafeUntil passed without an
// answered keepalive) or ErrLeaseClosed (Close was called).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireIfPassedLocked()
	return l.err
}

// expireIfPassedLocked loses the lease when SafeUntil has passed, so that a reader never
// sees it live after its safe time however late the watchdog runs.
func (l *Lease) expireIfPassedLocked() {
	if l.err == nil && !time.Now().Before(l.safeUntil) {
		l.loseLocked(l.expiredErr())
	}
}

// Close stops the keepalives and revokes the lease, which releases its locks at once
// (each to its next waiter). A lease the cluster no longer knows counts as revoked. When
// the revoke fails (ctx ends, the cluster is unreachable) the lease expires by itself a
// TTL after its last keepalive. Close is idempotent.
func (l *Lease) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.lose(wrap(ErrLeaseClosed, nil, "lease %s", redactID(l.id)))
		<-l.loopDone
		if _, err := l.c.Revoke(ctx, l.id); err != nil && !errors.Is(err, ErrLeaseNotFound) {
			l.closeErr = err
		}
	})
	return l.closeErr
}

// observe records that a request sent at sent renewed the lease (an answered keepalive,
// create or acquire: each sets the deadline to TTL after the server read its clock, which
// it did after the request arrived). It reports false when the lease was already lost or
// its safe time has passed: an answer that comes too late does not revive a lease whose
// holder may already have been told it is lost.
func (l *Lease) observe(sent time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	if !time.Now().Before(l.safeUntil) {
		l.loseLocked(l.expiredErr())
		return false
	}
	if su := sent.Add(l.ttl - l.cfg.drift); su.After(l.safeUntil) {
		l.lastSent, l.safeUntil = sent, su
		l.watchdog.Reset(time.Until(su))
	}
	return true
}

func (l *Lease) expiredErr() error {
	return wrap(ErrLeaseLost, nil, "lease %s: its safe time passed without an answered keepalive", redactID(l.id))
}

// checkSafe runs when the watchdog fires at SafeUntil.
func (l *Lease) checkSafe() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if d := time.Until(l.safeUntil); d > 0 {
		l.watchdog.Reset(d) // renewed meanwhile
		return
	}
	l.c.log.Warn("lease lost: no keepalive answered in time", "lease", redactID(l.id), "safe_until_passed_by", -time.Until(l.safeUntil))
	l.loseLocked(l.expiredErr())
}

func (l *Lease) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loseLocked(err)
}

func (l *Lease) loseLocked(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	if now := time.Now(); l.safeUntil.After(now) {
		l.safeUntil = now
	}
	l.watchdog.Stop()
	l.cancel()
	close(l.done)
}

// lost returns the loss error without blocking, nil while the lease is live.
func (l *Lease) lost() error {
	select {
	case <-l.done:
		return l.Err()
	default:
		return nil
	}
}

// jittered returns d shortened by up to a tenth at random.
func jittered(d time.Duration) time.Duration {
	return d - rand.N(d/10+1)
}

// run hands the lease to its client's keepalive loop, which renews it (in one batch with
// the client's other leases) until it is lost or closed, and takes it back then.
func (l *Lease) run() {
	defer close(l.loopDone)
	l.mu.Lock()
	next := l.lastSent.Add(jittered(l.cfg.interval))
	l.mu.Unlock()
	l.c.ka.add(l.c, l, next)
	<-l.ctx.Done()
	l.c.ka.remove(l)
}
