package cluster

import (
	"context"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Semaphores is the node's counting semaphores. Reach it with Node.Semaphores. They work
// like locks: an implicit lease from a request ID, waiting requests answered by the commit
// that grants them, abandoned waits dequeued, and status reads that are linearizable or
// blocking queries on the modify index.
type Semaphores struct{ n *Node }

// SemaphoreRequest asks for one permit of a semaphore; the lease fields work as in
// AcquireRequest.
type SemaphoreRequest struct {
	Name      string
	Limit     uint64
	Lease     LeaseID
	NewLease  bool
	RequestID string
	TTL       time.Duration // for NewLease
	Wait      time.Duration
	Owner     string
}

// SemaphoreGrant is a permit held by a lease.
type SemaphoreGrant struct {
	Name  string
	Token uint64
	Lease LeaseID
	TTL   time.Duration
	Owner string
	Limit uint64
}

// Acquire takes a permit. If none is free and req.Wait > 0, the lease waits in the
// semaphore's FIFO queue and the call returns when the commit that grants the permit (or
// ends the wait) is applied. If ctx ends first, the lease leaves the queue (and gives back
// a permit granted meanwhile) before it returns.
func (s *Semaphores) Acquire(ctx context.Context, req SemaphoreRequest) (SemaphoreGrant, error) {
	n := s.n
	req.Lease = leaseOf(req.NewLease, req.RequestID, req.Lease)
	if err := n.prop.versionReady(ctx, fsm.TypeSemAcquire); err != nil {
		return SemaphoreGrant{}, err
	}
	w := &queuedWait{n: n, space: fsm.SpaceSemaphore, name: req.Name, lease: req.Lease, newLease: req.NewLease, ttl: req.TTL, wait: req.Wait, dequeue: fsm.TypeSemDequeue,
		release: func(ctx context.Context, token uint64) error { return s.Release(ctx, req.Name, req.Lease, token) }}
	if req.Wait > 0 {
		w.register()
		defer w.done()
	}
	c := &fsm.Command{Type: fsm.TypeSemAcquire, Name: req.Name, Limit: req.Limit, Lease: req.Lease, NewLease: req.NewLease, TTL: ms(req.TTL), Wait: waitMs(req.Wait), Owner: req.Owner}
	r, err := n.prop.apply(c)
	if err != nil {
		return SemaphoreGrant{}, err
	}
	g := SemaphoreGrant{Name: req.Name, Lease: req.Lease, TTL: dur(r.TTL), Token: r.Token, Owner: r.Owner, Limit: req.Limit}
	switch r.Status {
	case fsm.StatusOK:
		return g, nil
	case fsm.StatusQueued:
		e, err := w.await(ctx)
		if err != nil {
			return SemaphoreGrant{}, err
		}
		g.Token, g.Owner = e.Token, e.Owner
		return g, nil
	}
	return SemaphoreGrant{}, outcomeError(c.Type, r, n.fsm.Limits)
}

// Release gives back the permit of lease with token; the head waiter is granted it in the
// same commit.
func (s *Semaphores) Release(ctx context.Context, name string, lease LeaseID, token uint64) error {
	return s.n.prop.releaseGrant(ctx, &fsm.Command{Type: fsm.TypeSemRelease, Name: name, Lease: lease, Token: token})
}

// Status returns the state of semaphore name, as Locks.Status does for a lock:
// linearizable unless q.Stale, and a blocking query on its modify index with q.Wait > 0.
func (s *Semaphores) Status(ctx context.Context, name string, q Query) (SemaphoreView, error) {
	read := func() (uint64, bool) {
		v := s.n.fsm.Semaphore(name)
		return v.ModifyIndex, v.Limit != 0
	}
	if err := s.n.blockingRead(ctx, fsm.SpaceSemaphore, name, q, read); err != nil {
		return SemaphoreView{}, err
	}
	return s.n.fsm.Semaphore(name), nil
}
