package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
)

// Locks is the node's lock operations, exclusive and shared. Reach it with Node.Locks.
type Locks struct{ n *Node }

// Grant is a lock held by a lease.
type Grant struct {
	Granted
	// Shared reports a grant in shared mode.
	Shared bool
}

// AcquireRequest asks for a lock; the Holder says by which lease and how long it waits.
type AcquireRequest struct {
	Name string
	Holder
	// Shared asks for the lock in shared mode (protocol version 2).
	Shared bool
	// MaxHold ends the grant at most this long after it, however long the lease lives,
	// and LockDelay keeps the lock from everyone this long after the lease ended without
	// a release (exclusive only); zero for none (protocol version 3).
	MaxHold, LockDelay time.Duration
}

// Acquire takes a lock. If it is held and req.Wait > 0, the lease waits in the lock's FIFO
// queue and Acquire returns when the commit that grants the lock (or ends the wait) is
// applied. If ctx ends first, the lease leaves the queue (and, if it was granted the lock
// meanwhile, releases it) before Acquire returns.
func (l *Locks) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	n := l.n
	c := req.Holder.command(ctx, n, fsm.TypeAcquire, req.Name)
	if req.Shared {
		c.Type = fsm.TypeAcquireShared
		if err := n.prop.versionReady(ctx, c.Type); err != nil {
			return Grant{}, err
		}
	}
	if req.MaxHold > 0 || req.LockDelay > 0 {
		if err := n.prop.versionReady(ctx, fsm.TypeAcquireEx); err != nil {
			return Grant{}, v3Inactive(err)
		}
		c.Type, c.Shared, c.MaxHold, c.LockDelay = fsm.TypeAcquireEx, req.Shared, ms(n.cfg.capHold(req.MaxHold)), ms(req.LockDelay)
	}
	if mutant.Is("grant-without-commit") && !n.IsLeader() && !n.fsm.Lock(req.Name).Held {
		return Grant{Granted: Granted{Name: req.Name, Lease: req.Lease, TTL: req.TTL, Token: n.fsm.AppliedIndex() + 1, Owner: req.Owner}}, nil
	}
	w := &queuedWait{n: n, space: fsm.SpaceLock, holder: req.Holder, dequeue: fsm.TypeDequeue, release: l.Release}
	propose := func(c *fsm.Command) (*fsm.Result, error) { return n.prop.propose(ctx, c) }
	return acquire(ctx, w, c, propose, func(r *fsm.Result) Grant {
		return Grant{Granted: granted(req.Name, req.Lease, r), Shared: req.Shared}
	})
}

// Release releases lock name held by lease with token.
func (l *Locks) Release(ctx context.Context, name string, lease LeaseID, token uint64) error {
	c := &fsm.Command{Type: fsm.TypeRelease, Name: name, Lease: lease, Token: token}
	r, err := l.n.prop.propose(ctx, c)
	if err != nil {
		return err
	}
	err = outcomeError(c.Type, r, l.n.fsm.Limits)
	if errors.Is(err, ErrNotHolder) && l.releasedBy(name, lease, token) {
		// This lease released that grant itself: a release repeated after an ambiguous
		// outcome (by a client, or by the node within its hold) answers as the first did.
		return nil
	}
	return err
}

// releasedBy reports whether the lock's history records lease releasing the grant token:
// the state machine's own record, so every node answers alike. The history keeps a lock's
// newest events only; a release older than those answers ErrNotHolder.
func (l *Locks) releasedBy(name string, lease LeaseID, token uint64) bool {
	fp := fsm.LeaseFingerprint(lease)
	for _, e := range l.n.fsm.History(name) {
		if e.Kind == fsm.HistoryReleased && e.Token == token && e.Lease == fp {
			return true
		}
	}
	return false
}

// Status returns the state of lock name, with its first q.Queue waiters in Queue. Unless
// q.Stale, the read is linearizable. With q.Wait > 0 it is a blocking query: it returns
// as soon as the lock's modify index exceeds q.WaitIndex, or after q.Wait with the
// current state.
func (l *Locks) Status(ctx context.Context, name string, q Query) (LockView, error) {
	view := l.n.fsm.Lock
	if q.Queue != 0 {
		view = func(name string) LockView { return l.n.fsm.LockQueue(name, q.Queue) }
	}
	return statusRead(ctx, l.n, fsm.SpaceLock, name, q, view, func(v LockView) (uint64, bool) { return v.ModifyIndex, v.Held })
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
