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

// SemaphoreRequest asks for one permit of a semaphore; the Holder works as in
// AcquireRequest.
type SemaphoreRequest struct {
	Name  string
	Limit uint64
	Holder
	// MaxHold ends the permit at most this long after it, however long the lease lives;
	// zero for none (protocol version 3).
	MaxHold time.Duration
}

// SemaphoreGrant is a permit held by a lease.
type SemaphoreGrant struct {
	Granted
	Limit uint64
}

// Acquire takes a permit. If none is free and req.Wait > 0, the lease waits in the
// semaphore's FIFO queue and the call returns when the commit that grants the permit (or
// ends the wait) is applied. If ctx ends first, the lease leaves the queue (and gives back
// a permit granted meanwhile) before it returns.
func (s *Semaphores) Acquire(ctx context.Context, req SemaphoreRequest) (SemaphoreGrant, error) {
	n := s.n
	c, err := req.Holder.versionedCommand(ctx, n, fsm.TypeSemAcquire, req.Name)
	if err != nil {
		return SemaphoreGrant{}, err
	}
	c.Limit = req.Limit
	if req.MaxHold > 0 {
		if err := n.prop.versionReady(ctx, fsm.TypeSemAcquireEx); err != nil {
			return SemaphoreGrant{}, v3Inactive(err)
		}
		c.Type, c.MaxHold = fsm.TypeSemAcquireEx, ms(n.cfg.capHold(req.MaxHold))
	}
	w := &queuedWait{n: n, space: fsm.SpaceSemaphore, holder: req.Holder, dequeue: fsm.TypeSemDequeue, release: s.Release}
	return acquire(ctx, w, c, n.prop.applyAs(ctx), func(r *fsm.Result) SemaphoreGrant {
		return SemaphoreGrant{Granted: granted(req.Name, req.Lease, r), Limit: req.Limit}
	})
}

// Release gives back the permit of lease with token; the head waiter is granted it in the
// same commit.
func (s *Semaphores) Release(ctx context.Context, name string, lease LeaseID, token uint64) error {
	return s.n.prop.releaseGrant(ctx, &fsm.Command{Type: fsm.TypeSemRelease, Name: name, Lease: lease, Token: token})
}

// Status returns the state of semaphore name (its first q.Queue waiters in Queue), as
// Locks.Status does for a lock:
// linearizable unless q.Stale, and a blocking query on its modify index with q.Wait > 0.
func (s *Semaphores) Status(ctx context.Context, name string, q Query) (SemaphoreView, error) {
	view := func(name string) SemaphoreView { return s.n.fsm.SemaphoreQueue(name, q.Queue) }
	return statusRead(ctx, s.n, fsm.SpaceSemaphore, name, q, view, func(v SemaphoreView) (uint64, bool) { return v.ModifyIndex, v.Limit != 0 })
}
