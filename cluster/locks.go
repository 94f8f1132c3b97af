package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
)

// Grant is a lock held by a lease.
type Grant struct {
	Name  string
	Token uint64
	Lease fsm.LeaseID
	TTL   int64
	Owner string
	// Shared reports a grant in shared mode.
	Shared bool
}

// AcquireRequest asks for a lock. With NewLease the node creates the lease with TTL in the
// same entry as the acquire: its ID is derived from RequestID when one is given (so that a
// retried request acts on the same lease), and drawn at random otherwise.
type AcquireRequest struct {
	Name      string
	Lease     fsm.LeaseID
	NewLease  bool
	RequestID string
	TTL       int64 // milliseconds, for NewLease
	Wait      time.Duration
	Owner     string
	// Shared asks for the lock in shared mode (protocol version 2).
	Shared bool
}

// requestLeaseID derives the implicit lease of an acquire from its client-chosen request ID.
// Every retry of the request therefore names the same lease, and the state machine's
// idempotent acquire (same lease: same grant, same queue place; an existing lease is not
// created twice) turns the retry into a repeat of the first attempt. The hash is domain
// separated and one-way, so the lease ID is as hard to guess as the request ID, which the
// API requires to be at least 16 random characters.
func requestLeaseID(requestID string) fsm.LeaseID {
	sum := sha256.Sum256([]byte("raftlock implicit lease v1\x00" + requestID))
	var id fsm.LeaseID
	copy(id[:], sum[:len(id)])
	return id
}

// afterProposal maps an error met once a command may already have been proposed. Errors
// that mean "nothing was applied" before a proposal (not the leader, no leader, shutting
// down, the caller gone) no longer do: the command may be committed by this or a later
// leader, so the answer is ErrUnknownOutcome and the request is never forwarded again.
func afterProposal(err error) error {
	if err == nil || errors.Is(err, ErrUnknownOutcome) {
		return err
	}
	if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrShutdown) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%v)", ErrUnknownOutcome, err)
	}
	return err
}

// newLeaseID draws 128 random bits: a lease ID is the bearer secret that authorizes
// keepalive, release and revoke, so it must not be guessable.
func newLeaseID() fsm.LeaseID {
	var id fsm.LeaseID
	if _, err := rand.Read(id[:]); err != nil {
		panic(fmt.Sprintf("cluster: crypto/rand failed: %v", err)) // never happens on Linux
	}
	return id
}

// CreateLease creates a lease with ttl milliseconds.
func (n *Node) CreateLease(ctx context.Context, ttl int64) (fsm.LeaseID, error) {
	id := newLeaseID()
	if _, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeCreateLease, Lease: id, TTL: ttl}); err != nil {
		return id, err
	}
	return id, nil
}

// KeepAlive renews a lease through the leader's Renew batch and returns its TTL once the
// batch is applied. It never waits on a term that has ended: a keepalive that no batch took
// before the term ended (or before ctx ended) answers ErrNoLeader, since it was certainly
// not proposed; one that was taken answers with its batch's outcome.
func (n *Node) KeepAlive(ctx context.Context, id fsm.LeaseID) (int64, error) {
	ttls, found, err := n.renew(ctx, []fsm.LeaseID{id})
	if err != nil {
		return 0, err
	}
	if !found[0] {
		return 0, ErrLeaseNotFound
	}
	return ttls[0], nil
}

// KeepAliveMany renews up to MaxKeepAliveBatch leases in one request: all of them go into
// the same Renew entry of the leader's batch, and the answer comes once that entry is
// applied. It returns, per lease in order, its TTL in milliseconds and whether it existed
// (false: it never did, expired, or was revoked; nothing is created). Errors are
// KeepAlive's and concern the whole request: on ErrNoLeader nothing was renewed; on
// ErrUnknownOutcome all or none of the leases were.
func (n *Node) KeepAliveMany(ctx context.Context, ids []fsm.LeaseID) (ttls []int64, found []bool, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if len(ids) > MaxKeepAliveBatch {
		return nil, nil, fmt.Errorf("%w: %d leases in one keepalive, at most %d", ErrInvalidCommand, len(ids), MaxKeepAliveBatch)
	}
	return n.renew(ctx, ids)
}

// renew queues ids as one request into the renew loop and waits for its batch's outcome.
func (n *Node) renew(ctx context.Context, ids []fsm.LeaseID) (ttls []int64, found []bool, err error) {
	if err := n.waitReady(ctx); err != nil {
		return nil, nil, err
	}
	term := n.term()
	if term == nil {
		return nil, nil, n.notLeader()
	}
	req := &renewReq{ids: ids, resp: make(chan renewResp, 1)}
	t := time.NewTimer(n.cfg.RenewWindow + 2*n.cfg.ApplyTimeout)
	defer t.Stop()
	select {
	case n.renewCh <- req:
	case <-term:
		return nil, nil, ErrNoLeader
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
	case <-t.C:
		return nil, nil, ErrNoLeader
	}
	for {
		select {
		case r := <-req.resp:
			return r.ttls, r.found, r.err
		case <-term:
			if req.abandon() {
				return nil, nil, ErrNoLeader
			}
			term = nil // taken into a batch: its proposal answers, one way or the other
		case <-ctx.Done():
			if req.abandon() {
				return nil, nil, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
			}
			return nil, nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, ctx.Err())
		case <-t.C:
			if req.abandon() {
				return nil, nil, ErrNoLeader
			}
			return nil, nil, ErrUnknownOutcome
		}
	}
}

// Revoke deletes a lease and releases its locks, handing each to its next waiter. It
// returns the released lock names.
func (n *Node) Revoke(ctx context.Context, id fsm.LeaseID) ([]string, error) {
	r, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeRevoke, Lease: id})
	if err != nil {
		return nil, err
	}
	if r.Status == fsm.StatusLeaseNotFound {
		return nil, ErrLeaseNotFound
	}
	return r.Released, nil
}

// Release releases lock name held by lease with token.
func (n *Node) Release(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error {
	r, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeRelease, Name: name, Lease: lease, Token: token})
	if err != nil {
		return err
	}
	switch r.Status {
	case fsm.StatusLeaseNotFound:
		return ErrLeaseNotFound
	case fsm.StatusNotHolder:
		return ErrNotHolder
	}
	return nil
}

// Acquire takes a lock. If it is held and req.Wait > 0, the lease waits in the lock's FIFO
// queue and Acquire returns when the commit that grants the lock (or ends the wait) is
// applied. If ctx ends first, the lease leaves the queue (and, if it was granted the lock
// meanwhile, releases it) before Acquire returns.
func (n *Node) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	if req.NewLease {
		if req.RequestID != "" {
			req.Lease = requestLeaseID(req.RequestID)
		} else {
			req.Lease = newLeaseID()
		}
	}
	typ := fsm.TypeAcquire
	if req.Shared {
		typ = fsm.TypeAcquireShared
		if err := n.versionReady(ctx, typ); err != nil {
			return Grant{}, err
		}
	}
	if mutant.Is("grant-without-commit") && !n.IsLeader() && !n.fsm.Lock(req.Name).Held {
		return Grant{Name: req.Name, Lease: req.Lease, TTL: req.TTL, Token: n.fsm.AppliedIndex() + 1, Owner: req.Owner}, nil
	}
	var events <-chan fsm.Event
	if req.Wait > 0 {
		// Register before proposing: the grant may be applied before Apply returns to us.
		ch, cancel := n.events.waitFor(req.Name, req.Lease)
		defer cancel()
		events = ch
	}
	waitMs := req.Wait.Milliseconds()
	if req.Wait > 0 && waitMs == 0 {
		waitMs = 1
	}
	c := &fsm.Command{Type: typ, Name: req.Name, Lease: req.Lease, NewLease: req.NewLease, TTL: req.TTL, Wait: waitMs, Owner: req.Owner}
	r, err := n.propose(ctx, c)
	if err != nil {
		return Grant{}, err
	}
	g := Grant{Name: req.Name, Lease: req.Lease, TTL: r.TTL, Token: r.Token, Owner: r.Owner, Shared: req.Shared}
	switch r.Status {
	case fsm.StatusOK:
		return g, nil
	case fsm.StatusLockHeld:
		return Grant{}, ErrLockHeld
	case fsm.StatusModeConflict:
		return Grant{}, ErrModeConflict
	case fsm.StatusLeaseNotFound:
		return Grant{}, ErrLeaseNotFound
	case fsm.StatusQueued:
		g, err := n.awaitGrant(ctx, req, g, events)
		if errors.Is(err, ErrWaitTimeout) {
			return g, err
		}
		return g, afterProposal(err)
	}
	return Grant{}, fmt.Errorf("cluster: acquire: unexpected status %s", r.Status)
}

// awaitGrant waits for the state machine to grant the lock or end the wait. The state
// machine ends the wait at its deadline in cluster time; the local timer, a little later,
// only covers a leader that is cut off and no longer sees commits.
func (n *Node) awaitGrant(ctx context.Context, req AcquireRequest, g Grant, events <-chan fsm.Event) (Grant, error) {
	backstop := time.NewTimer(req.Wait + 2*n.cfg.ElectionTimeout + n.cfg.TickInterval)
	defer backstop.Stop()
	var keepalive <-chan time.Time
	if req.NewLease {
		// Nobody else knows this lease yet, so the waiting request keeps it alive.
		t := time.NewTicker(time.Duration(req.TTL) * time.Millisecond / 3)
		defer t.Stop()
		keepalive = t.C
	}
	for {
		select {
		case e := <-events:
			if e.Kind == fsm.EventGranted {
				g.Token, g.Owner = e.Token, e.Owner
				return g, nil
			}
			n.cleanupImplicitLease(req)
			return Grant{}, ErrWaitTimeout
		case <-keepalive:
			if _, err := n.KeepAlive(ctx, req.Lease); err != nil {
				n.log.Debug("keepalive for a waiting acquire failed", "error", err)
			}
		case <-backstop.C:
			return n.abandonWait(req, ErrWaitTimeout)
		case <-ctx.Done():
			return n.abandonWait(req, ctx.Err())
		}
	}
}

// abandonWait takes the lease out of the queue. If the lock was granted meanwhile and
// the caller is gone, it is released so that the next waiter does not wait a TTL.
//
// When another request for the same lease and lock is still waiting (a client re-issuing a
// long wait in chunks), the lease stays queued: that request now owns the wait.
func (n *Node) abandonWait(req AcquireRequest, cause error) (Grant, error) {
	if n.events.waiting(req.Name, req.Lease) > 1 {
		return Grant{}, cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	r, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeDequeue, Name: req.Name, Lease: req.Lease})
	if err != nil {
		return Grant{}, err
	}
	if r.Status == fsm.StatusOK { // granted just before the wait ended
		g := Grant{Name: req.Name, Lease: req.Lease, TTL: req.TTL, Token: r.Token, Owner: r.Owner, Shared: req.Shared}
		if cause == ErrWaitTimeout {
			return g, nil
		}
		if err := n.Release(ctx, req.Name, req.Lease, r.Token); err != nil {
			n.log.Warn("releasing a lock granted to an abandoned wait failed", "lock", req.Name, "error", err)
		}
	}
	n.cleanupImplicitLease(req)
	return Grant{}, cause
}

// cleanupImplicitLease revokes a lease the acquire created itself when the wait fails:
// the caller never learned its ID, so it could never be used.
func (n *Node) cleanupImplicitLease(req AcquireRequest) {
	if !req.NewLease {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	if _, err := n.Revoke(ctx, req.Lease); err != nil && err != ErrLeaseNotFound {
		n.log.Debug("revoking the lease of a failed wait", "error", err)
	}
}
