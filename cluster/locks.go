package cluster

import (
	"context"
	"time"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
)

// Locks is the node's lock operations, exclusive and shared. Reach it with Node.Locks.
type Locks struct{ n *Node }

// Grant is a lock held by a lease.
type Grant struct {
	Name  string
	Token uint64
	Lease LeaseID
	TTL   time.Duration
	Owner string
	// Shared reports a grant in shared mode.
	Shared bool
}

// AcquireRequest asks for a lock. With NewLease the node creates the lease with TTL in the
// same entry as the acquire: its ID is derived from RequestID when one is given (so that a
// retried request acts on the same lease), and drawn at random otherwise.
type AcquireRequest struct {
	Name      string
	Lease     LeaseID
	NewLease  bool
	RequestID string
	TTL       time.Duration // for NewLease
	Wait      time.Duration
	Owner     string
	// Shared asks for the lock in shared mode (protocol version 2).
	Shared bool
}

// Acquire takes a lock. If it is held and req.Wait > 0, the lease waits in the lock's FIFO
// queue and Acquire returns when the commit that grants the lock (or ends the wait) is
// applied. If ctx ends first, the lease leaves the queue (and, if it was granted the lock
// meanwhile, releases it) before Acquire returns.
func (l *Locks) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	n := l.n
	req.Lease = leaseOf(req.NewLease, req.RequestID, req.Lease)
	typ := fsm.TypeAcquire
	if req.Shared {
		typ = fsm.TypeAcquireShared
		if err := n.prop.versionReady(ctx, typ); err != nil {
			return Grant{}, err
		}
	}
	if mutant.Is("grant-without-commit") && !n.IsLeader() && !n.fsm.Lock(req.Name).Held {
		return Grant{Name: req.Name, Lease: req.Lease, TTL: req.TTL, Token: n.fsm.AppliedIndex() + 1, Owner: req.Owner}, nil
	}
	w := &queuedWait{n: n, space: fsm.SpaceLock, name: req.Name, lease: req.Lease, newLease: req.NewLease, ttl: req.TTL, wait: req.Wait, dequeue: fsm.TypeDequeue,
		release: func(ctx context.Context, token uint64) error { return l.Release(ctx, req.Name, req.Lease, token) }}
	if req.Wait > 0 {
		w.register()
		defer w.done()
	}
	c := &fsm.Command{Type: typ, Name: req.Name, Lease: req.Lease, NewLease: req.NewLease, TTL: ms(req.TTL), Wait: waitMs(req.Wait), Owner: req.Owner}
	r, err := n.prop.propose(ctx, c)
	if err != nil {
		return Grant{}, err
	}
	g := Grant{Name: req.Name, Lease: req.Lease, TTL: dur(r.TTL), Token: r.Token, Owner: r.Owner, Shared: req.Shared}
	switch r.Status {
	case fsm.StatusOK:
		return g, nil
	case fsm.StatusQueued:
		e, err := w.await(ctx)
		if err != nil {
			return Grant{}, err
		}
		g.Token, g.Owner = e.Token, e.Owner
		return g, nil
	}
	return Grant{}, outcomeError(c.Type, r, n.fsm.Limits)
}

// Release releases lock name held by lease with token.
func (l *Locks) Release(ctx context.Context, name string, lease LeaseID, token uint64) error {
	c := &fsm.Command{Type: fsm.TypeRelease, Name: name, Lease: lease, Token: token}
	r, err := l.n.prop.propose(ctx, c)
	if err != nil {
		return err
	}
	return outcomeError(c.Type, r, l.n.fsm.Limits)
}

// Status returns the state of lock name. Unless q.Stale, the read is linearizable. With
// q.Wait > 0 it is a blocking query: it returns as soon as the lock's modify index exceeds
// q.WaitIndex, or after q.Wait with the current state.
func (l *Locks) Status(ctx context.Context, name string, q Query) (LockView, error) {
	read := func() (uint64, bool) {
		v := l.n.fsm.Lock(name)
		return v.ModifyIndex, v.Held
	}
	if err := l.n.blockingRead(ctx, fsm.SpaceLock, name, q, read); err != nil {
		return LockView{}, err
	}
	return l.n.fsm.Lock(name), nil
}

// List lists held locks whose names start with prefix and sort after after, in name
// order, at most limit of them (limit > 0), and reports whether more follow.
func (l *Locks) List(ctx context.Context, prefix, after string, limit int, stale bool) ([]LockView, bool, error) {
	if err := l.n.readBarrier(ctx, stale); err != nil {
		return nil, false, err
	}
	views, truncated := l.n.fsm.Locks(prefix, after, limit)
	return views, truncated, nil
}
