package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

// backend drives a raftlock cluster over its HTTP API for the lock workloads. Every
// client has a lease of its own, kept alive at TTL/3 like an etcd session, and takes its
// locks with that lease and a server-side wait (wait_ms), so that a waiting client is
// answered by the commit that grants it the lock.
type backend struct {
	hc      *httpClient
	cv      *clusterView
	bases   []string // where lock traffic goes; client i uses bases[i % len]
	target  string
	ttlMs   int64
	waitMs  int64
	bgErrs  atomic.Int64
	retries atomic.Int64
}

var (
	_ benchkit.BackgroundErrorer = (*backend)(nil)
	_ benchkit.Retrier           = (*backend)(nil)
)

// retryPause is the pause before retrying an operation answered with no_leader.
const retryPause = 50 * time.Millisecond

func (b *backend) Name() string                { return "raftlock" }
func (b *backend) Target() string              { return b.target }
func (b *backend) ServerPIDs() []int           { return b.cv.pids }
func (b *backend) BackgroundErrors() int64     { return b.bgErrs.Load() }
func (b *backend) Retries() int64              { return b.retries.Load() }
func (b *backend) bgFail(error)                { b.bgErrs.Add(1) }
func (b *backend) base(worker int) string      { return b.bases[worker%len(b.bases)] }
func (b *backend) waitDuration() time.Duration { return time.Duration(b.waitMs) * time.Millisecond }

// NewSession creates the client's lease and starts keeping it alive.
func (b *backend) NewSession(ctx context.Context, worker int) (benchkit.Session, error) {
	s, err := b.newSession(ctx, worker, b.ttlMs)
	if err != nil {
		return nil, err // not a nil *session in a non-nil interface
	}
	return s, nil
}

func (b *backend) newSession(ctx context.Context, worker int, ttlMs int64) (*session, error) {
	base := b.base(worker)
	body, _ := json.Marshal(api.CreateLeaseRequest{TTLMs: ttlMs})
	var l api.Lease
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.retry(cctx, func() error { return b.hc.do(cctx, "POST", base+"/v1/leases", body, &l) }); err != nil {
		return nil, fmt.Errorf("creating a lease: %w", err)
	}
	lockBody, _ := json.Marshal(api.AcquireRequest{LeaseID: l.LeaseID, WaitMs: b.waitMs})
	s := &session{b: b, base: base, lease: l.LeaseID, ttl: time.Duration(l.TTLMs) * time.Millisecond,
		lockBody: lockBody, stop: make(chan struct{}), done: make(chan struct{})}
	go s.keepalive()
	return s, nil
}

// session is one client's lease.
type session struct {
	b        *backend
	base     string
	lease    string
	ttl      time.Duration
	lockBody []byte // {"lease_id": ..., "wait_ms": ...}
	stop     chan struct{}
	done     chan struct{}
}

// keepalive renews the lease every TTL/3 until Close.
func (s *session) keepalive() {
	defer close(s.done)
	t := time.NewTicker(s.ttl / 3)
	defer t.Stop()
	url := s.base + "/v1/leases/" + s.lease + "/keepalive"
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.ttl/3)
		if err := s.b.hc.do(ctx, "POST", url, nil, nil); err != nil {
			s.b.bgFail(fmt.Errorf("keepalive: %w", err))
		}
		cancel()
	}
}

// Lock takes a lock with the session's lease, waiting in its queue up to wait_ms.
func (s *session) Lock(ctx context.Context, name string) (uint64, error) {
	return s.acquire(ctx, name, s.lockBody, s.b.waitDuration())
}

func (s *session) acquire(ctx context.Context, name string, body []byte, wait time.Duration) (uint64, error) {
	return s.put(ctx, "/v1/locks/", name, body, wait)
}

// put sends an acquire-like PUT route+name (a lock, a permit) and returns the grant's
// token. Every answer of these routes carries the token as "token".
func (s *session) put(ctx context.Context, route, name string, body []byte, wait time.Duration) (uint64, error) {
	cctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	var g api.Grant
	// An acquire is idempotent for its lease, so one answered no_leader (an election, or
	// an outcome the old leader could not know) is simply asked again.
	err := s.b.retry(cctx, func() error { return s.b.hc.do(cctx, "PUT", s.base+route+name, body, &g) })
	if err != nil {
		return 0, err
	}
	if g.Token == 0 {
		return 0, fmt.Errorf("acquire %s: answer without a token", name)
	}
	return g.Token, nil
}

// Unlock releases a lock granted with token.
func (s *session) Unlock(ctx context.Context, name string, token uint64) error {
	return s.release(ctx, "/v1/locks/", name, token)
}

// release sends DELETE route+name with the session's lease and token.
func (s *session) release(ctx context.Context, route, name string, token uint64) error {
	body := make([]byte, 0, 80)
	body = append(body, `{"lease_id":"`...)
	body = append(body, s.lease...)
	body = append(body, `","token":`...)
	body = strconv.AppendUint(body, token, 10)
	body = append(body, '}')
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	retried := false
	err := s.b.retry(cctx, func() error {
		err := s.b.hc.do(cctx, "DELETE", s.base+route+name, body, nil)
		if retried && errors.Is(err, &api.Error{Code: api.CodeNotHolder}) {
			return nil // the first attempt was applied after all
		}
		retried = true
		return err
	})
	return err
}

// retry runs op until it succeeds, fails with anything but no_leader, or ctx ends.
func (b *backend) retry(ctx context.Context, op func() error) error {
	for {
		err := op()
		if !errors.Is(err, &api.Error{Code: api.CodeNoLeader}) || ctx.Err() != nil {
			return err
		}
		b.retries.Add(1)
		benchkit.Sleep(ctx, retryPause)
	}
}

// Close stops the keepalives and revokes the lease, releasing whatever it still holds.
func (s *session) Close(ctx context.Context) error {
	close(s.stop)
	<-s.done
	return s.b.hc.do(ctx, "DELETE", s.base+"/v1/leases/"+s.lease, nil, nil)
}

var (
	_ benchkit.SharedLocker = (*session)(nil)
	_ benchkit.Semaphorer   = (*session)(nil)
)

// LockMode takes a lock shared or exclusive with the session's lease, waiting in its
// queue up to wait_ms. The exclusive mode is the lock of Lock.
func (s *session) LockMode(ctx context.Context, name string, shared bool) (uint64, error) {
	if !shared {
		return s.Lock(ctx, name)
	}
	body, _ := json.Marshal(api.AcquireRequest{LeaseID: s.lease, WaitMs: s.b.waitMs, Mode: api.ModeShared})
	return s.acquire(ctx, name, body, s.b.waitDuration())
}

// UnlockMode releases a grant of either mode: the same DELETE.
func (s *session) UnlockMode(ctx context.Context, name string, token uint64, _ bool) error {
	return s.Unlock(ctx, name, token)
}

// Acquire takes a permit of semaphore name with the session's lease, waiting in its queue
// up to wait_ms.
func (s *session) Acquire(ctx context.Context, name string, limit int) (uint64, error) {
	body, _ := json.Marshal(api.SemaphoreAcquireRequest{Limit: int64(limit), LeaseID: s.lease, WaitMs: s.b.waitMs})
	return s.put(ctx, "/v1/semaphores/", name, body, s.b.waitDuration())
}

// Release gives back a permit granted with token.
func (s *session) Release(ctx context.Context, name string, token uint64) error {
	return s.release(ctx, "/v1/semaphores/", name, token)
}
