package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Holder is what every request that can wait in a queue carries besides its name and
// its own options (a lock's acquire, a lockset, a semaphore's permit, a campaign): the
// lease it holds by, how long it waits, and the owner label of its grant. With NewLease
// the node creates the lease with TTL in the same entry as the request: its ID is derived
// from RequestID when one is given (so that a retried request acts on the same lease), and
// drawn at random otherwise.
type Holder struct {
	Lease     LeaseID
	NewLease  bool
	RequestID string
	TTL       time.Duration // for NewLease
	Wait      time.Duration
	Owner     string
}

// Granted is what every grant of a request that can queue carries (a lock, a permit, a
// leadership): the name granted, the grant's fencing token, the lease that holds it with
// the lease's TTL, and the grant's owner label.
type Granted struct {
	Name  string
	Token uint64
	Lease LeaseID
	TTL   time.Duration
	Owner string
}

// granted is the Granted of name to lease that result r answers.
func granted(name string, lease LeaseID, r *fsm.Result) Granted {
	return Granted{Name: name, Token: r.Token, Lease: lease, TTL: dur(r.TTL), Owner: r.Owner}
}

// command settles the lease the request acts on (a new lease's ID, see Holder) and
// returns the command of type t for name that carries the holder.
func (h *Holder) command(ctx context.Context, n *Node, t fsm.Type, name string) *fsm.Command {
	h.Lease = n.leaseOf(ctx, h.NewLease, h.RequestID, h.Lease)
	return &fsm.Command{Type: t, Name: name, Lease: h.Lease, NewLease: h.NewLease, TTL: ms(h.TTL), Wait: waitMs(h.Wait), Owner: h.Owner}
}

// versionedCommand is command for a request of a primitive of protocol version 2 or
// later (a semaphore's permit, a campaign), refused with an *InactiveError while the
// cluster has not activated the version that t needs.
func (h *Holder) versionedCommand(ctx context.Context, n *Node, t fsm.Type, name string) (*fsm.Command, error) {
	c := h.command(ctx, n, t, name)
	if err := n.prop.versionReady(ctx, t); err != nil {
		return nil, err
	}
	return c, nil
}

// capHold applies the node's maximum hold ceiling (MaxHoldCeiling) to a request's
// maximum hold. A request without one is left without one.
func (cfg *Config) capHold(d time.Duration) time.Duration {
	if c := cfg.MaxHoldCeiling; c > 0 && d > c {
		return c
	}
	return d
}

// queuedWait is one request that may wait in a queue of the state machine: an acquire of
// a lock (either mode), of a lockset or of a semaphore permit, or a campaign. It is the
// one wait they all use. The request registers for its outcome before it proposes (the
// grant may be applied before the proposal returns), and once the state machine answers
// "queued" it awaits the commit that grants it or ends its wait.
type queuedWait struct {
	n      *Node
	space  fsm.Space
	name   string
	holder Holder // its lease (settled: see Holder.command), TTL and wait
	// dequeue is the command that takes the lease out of the queue.
	dequeue fsm.Type
	// release gives back a grant that arrived after the caller went away: the role's own
	// release (Locks.Release, Semaphores.Release, Elections.Resign).
	release func(ctx context.Context, name string, lease LeaseID, token uint64) error

	events <-chan fsm.Event // nil until registered
	cancel func()
}

// acquire is the flow every request that may queue shares: it proposes c with propose and
// answers grant of the result once the lease holds the grant, at once or, when the state
// machine queues it, after the commit that grants it (the result then carries that
// event's token, owner, value and modify index). Any other outcome is its error. The wait
// takes its name from c, and registers before the proposal only when c may queue: it
// waits, and is not a proclaim (which carries the token it holds).
func acquire[G any](ctx context.Context, w *queuedWait, c *fsm.Command, propose func(*fsm.Command) (*fsm.Result, error), grant func(*fsm.Result) G) (G, error) {
	var none G
	w.name = c.Name
	if c.Wait > 0 && c.Token == 0 {
		w.register()
		defer w.done()
	}
	r, err := propose(c)
	if err != nil {
		return none, err
	}
	switch r.Status {
	case fsm.StatusOK:
		return grant(r), nil
	case fsm.StatusQueued:
		e, err := w.await(ctx, r.Index)
		if err != nil {
			return none, err
		}
		granted := *r
		granted.Token, granted.Owner, granted.Value, granted.Modify = e.Token, e.Owner, e.Value, e.Index
		return grant(&granted), nil
	}
	return none, outcomeError(c.Type, r, w.n.fsm.Limits)
}

// register starts listening for the outcome of the wait; done stops.
func (w *queuedWait) register() {
	w.events, w.cancel = w.n.registry.waitFor(w.space, w.name, w.holder.Lease)
}

// done unregisters the wait, if it was registered.
func (w *queuedWait) done() {
	if w.cancel != nil {
		w.cancel()
	}
}

// await waits for the state machine to grant the queued request or end its wait; the
// event's Token, Owner, Value and Index describe the grant. The state machine ends the
// wait at its deadline in cluster time; the local backstop timer, a little later, only
// covers a leader that is cut off and no longer sees commits. While it waits, a lease the
// request created itself is kept alive here, since nobody else knows it.
//
// Its errors are ErrWaitTimeout (the lease has left the queue), or what ended the wait
// after the proposal, as afterProposal maps it.
func (w *queuedWait) await(ctx context.Context, queued uint64) (fsm.Event, error) {
	e, err := w.awaitOutcome(ctx, queued)
	if err != nil && !errors.Is(err, ErrWaitTimeout) {
		err = afterProposal(err)
	}
	return e, err
}

// queued is the log index of the entry that queued the request. The wait registered
// before proposing, so events of entries applied between the registration and that entry
// may reach it: they are about an earlier wait or grant of the same lease and name (after
// a restart, a node replays its log, and a worker that took and released this lock with
// this lease before appears granted again), and answering with one would hand the caller
// a grant it already released. Only an event after the queueing entry is this wait's.
func (w *queuedWait) awaitOutcome(ctx context.Context, queued uint64) (fsm.Event, error) {
	n := w.n
	backstop := time.NewTimer(w.holder.Wait + 2*n.cfg.ElectionTimeout + n.cfg.TickInterval)
	defer backstop.Stop()
	// A token deleted while its request waits: from protocol version 4 the deletion's
	// entry took the lease out of the queue (the wait's end arrives as an event); before,
	// the request leaves the queue here.
	gone, stopGone := n.tokenGone(tokenCaller(ctx))
	defer stopGone()
	var keepalive <-chan time.Time
	if w.holder.NewLease {
		t := time.NewTicker(w.holder.TTL / 3)
		defer t.Stop()
		keepalive = t.C
	}
	for {
		select {
		case e := <-w.events:
			if e.Index <= queued {
				continue
			}
			if e.Kind == fsm.EventGranted {
				return e, nil
			}
			w.cleanupImplicitLease()
			if acc := tokenCaller(ctx); acc != "" {
				if _, ok := n.fsm.ACLToken(acc); !ok {
					return fsm.Event{}, ErrTokenRevoked
				}
			}
			return fsm.Event{}, ErrWaitTimeout
		case <-keepalive:
			if _, err := n.leases.KeepAlive(ctx, w.holder.Lease); err != nil {
				n.log.Debug("keepalive for a waiting request failed", "error", err)
			}
		case <-backstop.C:
			return w.abandon(ErrWaitTimeout)
		case <-gone:
			return w.abandon(ErrTokenRevoked)
		case <-ctx.Done():
			return w.abandon(ctx.Err())
		}
	}
}

// abandon takes the lease out of the queue. A grant that arrived meanwhile is kept when
// the wait merely ended (the caller still listens), and given back when the caller is
// gone, so that the next waiter does not wait a TTL.
//
// When another request for the same lease and name is still waiting (a client re-issuing
// a long wait in chunks), the lease stays queued: that request now owns the wait.
func (w *queuedWait) abandon(cause error) (fsm.Event, error) {
	n := w.n
	if n.registry.waiting(w.space, w.name, w.holder.Lease) > 1 {
		return fsm.Event{}, cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	r, err := n.prop.propose(ctx, &fsm.Command{Type: w.dequeue, Name: w.name, Lease: w.holder.Lease})
	if err != nil {
		return fsm.Event{}, err
	}
	if r.Status == fsm.StatusOK { // granted just before the wait ended
		e := fsm.Event{Kind: fsm.EventGranted, Space: w.space, Name: w.name, Lease: w.holder.Lease, Token: r.Token, Owner: r.Owner, Value: r.Value, Index: r.Modify}
		if errors.Is(cause, ErrWaitTimeout) {
			return e, nil
		}
		if err := w.release(ctx, w.name, w.holder.Lease, r.Token); err != nil {
			n.log.Warn("giving back a grant to an abandoned wait failed", "space", w.space, "name", w.name, "error", err)
		}
	}
	w.cleanupImplicitLease()
	return fsm.Event{}, cause
}

// cleanupImplicitLease revokes a lease the request created itself when its wait fails:
// the caller never learned its ID, so it could never be used.
func (w *queuedWait) cleanupImplicitLease() {
	if !w.holder.NewLease {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.n.cfg.ApplyTimeout)
	defer cancel()
	if _, err := w.n.leases.Revoke(ctx, w.holder.Lease); err != nil && !errors.Is(err, ErrLeaseNotFound) {
		w.n.log.Debug("revoking the lease of a failed wait", "error", err)
	}
}

// waitMs turns a wait into the command's milliseconds, at least 1 for any wait.
func waitMs(wait time.Duration) int64 {
	ms := wait.Milliseconds()
	if wait > 0 && ms == 0 {
		ms = 1
	}
	return ms
}
