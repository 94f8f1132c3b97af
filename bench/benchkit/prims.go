package benchkit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The workloads of the other primitives: shared locks and semaphores.
const (
	// Shared: every client takes the same lock, nine times in ten shared (a reader) and
	// once exclusive (a writer), waiting in its queue, and releases it at once.
	Shared = "shared"
	// Semaphore: every client takes a permit of the same semaphore of SemaphoreLimit
	// permits, waiting in its queue, and releases it at once.
	Semaphore = "semaphore"
)

// SemaphoreLimit is the limit of the semaphore workload's semaphore.
const SemaphoreLimit = 4

// SharedFraction is the share of the shared workload's requests that are shared.
const SharedFraction = 0.9

// SharedLocker is a Session that has read/write locks, for the shared workload. Their
// exclusive mode may be another recipe than the Session's Lock (etcd's is), so the
// workload takes both modes through it.
type SharedLocker interface {
	// LockMode takes read/write lock name, shared (a reader: waiting while a writer holds
	// or waits for it) or exclusive, and returns the grant's fencing token (0 when the
	// system exposes none).
	LockMode(ctx context.Context, name string, shared bool) (uint64, error)
	// UnlockMode releases a grant of LockMode.
	UnlockMode(ctx context.Context, name string, token uint64, shared bool) error
}

// Semaphorer is a Session that can take a permit of a counting semaphore, for the
// semaphore workload.
type Semaphorer interface {
	// Acquire takes a permit of semaphore name of limit permits, waiting while all are
	// taken, and returns the permit's fencing token.
	Acquire(ctx context.Context, name string, limit int) (uint64, error)
	// Release gives the permit granted with token back.
	Release(ctx context.Context, name string, token uint64) error
}

// Unsupported is implemented by a Backend that lacks a workload's primitive; it says why,
// for the report ("etcd has no semaphore").
type Unsupported interface {
	Unsupported(workload string) string
}

// supports returns nil when s can run workload, or the error saying why not.
func supports(b Backend, s Session, workload string) error {
	ok := true
	switch workload {
	case Shared:
		_, ok = s.(SharedLocker)
	case Semaphore:
		_, ok = s.(Semaphorer)
	}
	if ok {
		return nil
	}
	if u, is := b.(Unsupported); is {
		return fmt.Errorf("benchkit: %s", u.Unsupported(workload))
	}
	return fmt.Errorf("benchkit: %s has no %s primitive", b.Name(), workload)
}

// primTake and primGive take and give back one grant of a primitive workload.
type primTake func(ctx context.Context, s Session, name string) (tok uint64, exclusive bool, err error)
type primGive func(ctx context.Context, s Session, name string, tok uint64, exclusive bool) error

// primitive is the body of the shared and semaphore workloads: every client takes a grant
// of the same name, waiting in its queue, and gives it back at once. Holder counters
// catch a grant that should have waited: an exclusive grant beside any holder, a shared
// one beside a writer, more than SemaphoreLimit permits. A writer's token must exceed
// every token released before it was granted.
func (r *run) primitive(i int) {
	s, w := r.sessions[i], &r.workers[i]
	name := r.cfg.Prefix + "/" + r.cfg.Workload
	take, give := r.primOps(i)
	for r.ctx.Err() == nil {
		start := time.Now()
		tok, excl, err := take(r.ctx, s, name)
		got := time.Now()
		if err != nil {
			r.failed("acquire", err)
			continue
		}
		r.mu.Lock()
		readers, writers := r.holders, r.writers
		if excl {
			r.writers++
		} else {
			r.holders++
		}
		released := r.lastToken
		r.mu.Unlock()
		switch {
		case r.cfg.Workload == Semaphore && readers >= SemaphoreLimit:
			r.violate("client %d granted a permit of %s (token %d) while %d of %d were held", i, name, tok, readers, SemaphoreLimit)
		case excl && readers+writers > 0:
			r.violate("client %d granted %s exclusive (token %d) beside %d reader(s) and %d writer(s)", i, name, tok, readers, writers)
		case !excl && writers > 0:
			r.violate("client %d granted %s shared (token %d) beside a writer", i, name, tok)
		case excl && tok != 0 && tok <= released:
			r.violate("writer granted %s with token %d, not above the released %d", name, tok, released)
		}
		if r.measuring.Load() {
			w.latency = append(w.latency, got.Sub(start))
			w.count++
			r.ops.Add(1)
		}
		Sleep(r.ctx, r.cfg.Hold)
		r.mu.Lock()
		if excl {
			r.writers--
		} else {
			r.holders--
		}
		r.lastToken = max(r.lastToken, tok)
		r.mu.Unlock()
		if err := give(r.ctx, s, name, tok, excl); err != nil && !r.stopping(err) {
			r.fail(fmt.Errorf("release: %w", err))
		}
	}
}

// primOps returns worker i's take and give for the run's workload.
func (r *run) primOps(i int) (primTake, primGive) {
	if r.cfg.Workload == Semaphore {
		return func(ctx context.Context, s Session, name string) (uint64, bool, error) {
				tok, err := s.(Semaphorer).Acquire(ctx, name, SemaphoreLimit)
				return tok, false, err
			}, func(ctx context.Context, s Session, name string, tok uint64, _ bool) error {
				return s.(Semaphorer).Release(ctx, name, tok)
			}
	}
	rng := rand.New(rand.NewPCG(uint64(i), uint64(len(r.workers))))
	return func(ctx context.Context, s Session, name string) (uint64, bool, error) {
			excl := rng.Float64() >= SharedFraction
			tok, err := s.(SharedLocker).LockMode(ctx, name, !excl)
			return tok, excl, err
		}, func(ctx context.Context, s Session, name string, tok uint64, excl bool) error {
			return s.(SharedLocker).UnlockMode(ctx, name, tok, !excl)
		}
}
