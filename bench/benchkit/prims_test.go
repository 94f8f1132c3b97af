package benchkit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// primBackend is an in-memory read/write lock and semaphore. With broken set, RLock
// takes nothing (a reader beside a writer) and the semaphore has one permit too many:
// the workloads must flag both.
type primBackend struct {
	memBackend
	rw     sync.RWMutex
	once   sync.Once
	sem    chan struct{}
	broken bool
}

func (b *primBackend) NewSession(context.Context, int) (Session, error) {
	b.once.Do(func() {
		n := SemaphoreLimit
		if b.broken {
			n++
		}
		b.sem = make(chan struct{}, n)
	})
	return &primSession{memSession: memSession{b: &b.memBackend}, p: b}, nil
}

type primSession struct {
	memSession
	p *primBackend
}

func (s *primSession) LockMode(_ context.Context, _ string, shared bool) (uint64, error) {
	switch {
	case !shared:
		s.p.rw.Lock()
	case !s.p.broken:
		s.p.rw.RLock()
	}
	return s.p.token.Add(1), nil
}

func (s *primSession) UnlockMode(_ context.Context, _ string, _ uint64, shared bool) error {
	switch {
	case !shared:
		s.p.rw.Unlock()
	case !s.p.broken:
		s.p.rw.RUnlock()
	}
	return nil
}

func (s *primSession) Acquire(ctx context.Context, _ string, _ int) (uint64, error) {
	select {
	case s.p.sem <- struct{}{}:
		return s.p.token.Add(1), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (s *primSession) Release(context.Context, string, uint64) error {
	<-s.p.sem
	return nil
}

func TestRun_PrimitiveWorkloads(t *testing.T) {
	for _, wl := range []string{Shared, Semaphore} {
		r, err := Run(context.Background(), &primBackend{}, Config{Workload: wl, Clients: 8, Duration: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops == 0 || r.Errors != 0 || r.Violations != 0 || r.Op != "grant" || len(r.PerClient) != 8 {
			t.Errorf("%s: %+v", wl, r)
		}
		r, err = Run(context.Background(), &primBackend{broken: true}, Config{Workload: wl, Clients: 8, Duration: 300 * time.Millisecond, Hold: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.Violations == 0 {
			t.Errorf("%s: a broken %s was not flagged: %+v", wl, wl, r)
		}
	}
	// A backend without the primitive is refused with a reason, not run.
	if _, err := Run(context.Background(), &memBackend{}, Config{Workload: Semaphore, Clients: 2, Duration: 100 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "no semaphore") {
		t.Fatalf("semaphore workload on a backend without semaphores: %v", err)
	}
}
