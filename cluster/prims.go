package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// The coordination primitives beside the exclusive lock (issue 14): shared locks go
// through Acquire (AcquireRequest.Shared); semaphores and elections have their own
// methods here. They work like Acquire: an implicit lease from a request ID, waiting
// requests answered by the commit that grants them, abandoned waits dequeued, and status
// reads that are linearizable or blocking queries on the modify index.

// Errors of the primitives. Transport maps each to a 409 (ErrPrimsInactive to 503).
var (
	// ErrModeConflict: the lease holds or waits for the lock in the other mode.
	ErrModeConflict = errors.New("cluster: the lease holds or waits for the lock in the other mode")
	// ErrSemaphoreFull: every permit is held and the request did not wait.
	ErrSemaphoreFull = errors.New("cluster: semaphore full")
	// ErrLimitConflict: the semaphore is in use with another limit. The error is a
	// *LimitConflictError giving the limit in force.
	ErrLimitConflict = errors.New("cluster: semaphore in use with another limit")
	// ErrElectionHeld: another lease leads the election and the request did not wait.
	ErrElectionHeld = errors.New("cluster: another lease leads the election")
	// ErrPrimsInactive: the cluster's active protocol version predates the primitive (a
	// member runs an older release); nothing was proposed.
	ErrPrimsInactive = errors.New("cluster: shared locks, semaphores and elections need protocol version 2 on every member")
)

// LimitConflictError is the ErrLimitConflict of one request.
type LimitConflictError struct {
	// Limit is the semaphore's limit in force.
	Limit uint64
}

func (e *LimitConflictError) Error() string {
	return "cluster: semaphore in use with limit " + strconv.FormatUint(e.Limit, 10)
}

// Is makes errors.Is(err, ErrLimitConflict) hold.
func (e *LimitConflictError) Is(target error) bool { return target == ErrLimitConflict }

// versionReady refuses a command of a protocol version the cluster has not activated.
// Only the leader decides (a follower's view may lag, and it forwards anyway): elsewhere
// it answers what waitReady does, so the request is forwarded.
func (n *Node) versionReady(ctx context.Context, t fsm.Type) error {
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	if n.fsm.Version() < t.Since() {
		return ErrPrimsInactive
	}
	return nil
}

// SemaphoreRequest asks for one permit of a semaphore; the lease fields work as in
// AcquireRequest.
type SemaphoreRequest struct {
	Name      string
	Limit     uint64
	Lease     fsm.LeaseID
	NewLease  bool
	RequestID string
	TTL       int64 // milliseconds, for NewLease
	Wait      time.Duration
	Owner     string
}

// SemaphoreGrant is a permit held by a lease.
type SemaphoreGrant struct {
	Name  string
	Token uint64
	Lease fsm.LeaseID
	TTL   int64
	Owner string
	Limit uint64
}

// CampaignRequest campaigns for an election, or proclaims a new value from the leader's
// lease; the lease fields work as in AcquireRequest. A non-zero Token makes it a proclaim
// only: it never campaigns.
type CampaignRequest struct {
	Name      string
	Value     string
	Token     uint64
	Lease     fsm.LeaseID
	NewLease  bool
	RequestID string
	TTL       int64 // milliseconds, for NewLease
	Wait      time.Duration
	Owner     string
}

// ElectionGrant is a leadership held by a lease.
type ElectionGrant struct {
	Name        string
	Token       uint64
	Lease       fsm.LeaseID
	TTL         int64
	Owner       string
	Value       string
	ModifyIndex uint64
}

// primWait describes a queued request for awaitPrim.
type primWait struct {
	space    fsm.Space
	name     string
	lease    fsm.LeaseID
	newLease bool
	ttl      int64
	wait     time.Duration
	dequeue  fsm.Type
	// release gives back a grant that arrived after the caller went away.
	release func(ctx context.Context, token uint64) error
}

// leaseOf fills in the lease of a request: derived from the request ID, or drawn.
func leaseOf(newLease bool, requestID string, lease fsm.LeaseID) fsm.LeaseID {
	switch {
	case !newLease:
		return lease
	case requestID != "":
		return requestLeaseID(requestID)
	}
	return newLeaseID()
}

// waitMs turns a wait into the command's milliseconds, at least 1 for any wait.
func waitMs(wait time.Duration) int64 {
	ms := wait.Milliseconds()
	if wait > 0 && ms == 0 {
		ms = 1
	}
	return ms
}

// SemaphoreAcquire takes a permit. If none is free and req.Wait > 0, the lease waits in
// the semaphore's FIFO queue and the call returns when the commit that grants the permit
// (or ends the wait) is applied. If ctx ends first, the lease leaves the queue (and gives
// back a permit granted meanwhile) before it returns.
func (n *Node) SemaphoreAcquire(ctx context.Context, req SemaphoreRequest) (SemaphoreGrant, error) {
	req.Lease = leaseOf(req.NewLease, req.RequestID, req.Lease)
	if err := n.versionReady(ctx, fsm.TypeSemAcquire); err != nil {
		return SemaphoreGrant{}, err
	}
	var events <-chan fsm.Event
	if req.Wait > 0 {
		ch, cancel := n.events.waitForIn(fsm.SpaceSemaphore, req.Name, req.Lease)
		defer cancel()
		events = ch
	}
	c := &fsm.Command{Type: fsm.TypeSemAcquire, Name: req.Name, Limit: req.Limit, Lease: req.Lease, NewLease: req.NewLease, TTL: req.TTL, Wait: waitMs(req.Wait), Owner: req.Owner}
	r, err := n.apply(c)
	if err != nil {
		return SemaphoreGrant{}, err
	}
	g := SemaphoreGrant{Name: req.Name, Lease: req.Lease, TTL: r.TTL, Token: r.Token, Owner: r.Owner, Limit: req.Limit}
	switch r.Status {
	case fsm.StatusOK:
		return g, nil
	case fsm.StatusSemaphoreFull:
		return SemaphoreGrant{}, ErrSemaphoreFull
	case fsm.StatusLimitConflict:
		return SemaphoreGrant{}, &LimitConflictError{Limit: r.Limit}
	case fsm.StatusLeaseNotFound:
		return SemaphoreGrant{}, ErrLeaseNotFound
	case fsm.StatusQueued:
		w := primWait{space: fsm.SpaceSemaphore, name: req.Name, lease: req.Lease, newLease: req.NewLease, ttl: req.TTL, wait: req.Wait, dequeue: fsm.TypeSemDequeue,
			release: func(ctx context.Context, token uint64) error {
				return n.SemaphoreRelease(ctx, req.Name, req.Lease, token)
			}}
		e, err := n.awaitPrim(ctx, w, events)
		if err != nil {
			if errors.Is(err, ErrWaitTimeout) {
				return SemaphoreGrant{}, err
			}
			return SemaphoreGrant{}, afterProposal(err)
		}
		g.Token, g.Owner = e.Token, e.Owner
		return g, nil
	}
	return SemaphoreGrant{}, fmt.Errorf("cluster: semaphore acquire: unexpected status %s", r.Status)
}

// SemaphoreRelease gives back the permit of lease with token; the head waiter is granted
// it in the same commit.
func (n *Node) SemaphoreRelease(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error {
	if err := n.versionReady(ctx, fsm.TypeSemRelease); err != nil {
		return err
	}
	r, err := n.apply(&fsm.Command{Type: fsm.TypeSemRelease, Name: name, Lease: lease, Token: token})
	if err != nil {
		return err
	}
	return releaseErr(r.Status)
}

func releaseErr(s fsm.Status) error {
	switch s {
	case fsm.StatusLeaseNotFound:
		return ErrLeaseNotFound
	case fsm.StatusNotHolder:
		return ErrNotHolder
	}
	return nil
}

// Campaign campaigns for election req.Name: the lease leads at once when nobody does;
// from the leader's lease it proclaims req.Value (the token is kept); otherwise, with
// req.Wait > 0, the lease waits as a candidate and the call returns when the commit that
// elects it (or ends the wait) is applied. If ctx ends first, the candidate leaves the
// queue (and resigns a leadership won meanwhile) before it returns.
func (n *Node) Campaign(ctx context.Context, req CampaignRequest) (ElectionGrant, error) {
	req.Lease = leaseOf(req.NewLease, req.RequestID, req.Lease)
	if err := n.versionReady(ctx, fsm.TypeCampaign); err != nil {
		return ElectionGrant{}, err
	}
	var events <-chan fsm.Event
	if req.Wait > 0 && req.Token == 0 {
		ch, cancel := n.events.waitForIn(fsm.SpaceElection, req.Name, req.Lease)
		defer cancel()
		events = ch
	}
	c := &fsm.Command{Type: fsm.TypeCampaign, Name: req.Name, Value: req.Value, Token: req.Token, Lease: req.Lease, NewLease: req.NewLease, TTL: req.TTL, Wait: waitMs(req.Wait), Owner: req.Owner}
	r, err := n.apply(c)
	if err != nil {
		return ElectionGrant{}, err
	}
	g := ElectionGrant{Name: req.Name, Lease: req.Lease, TTL: r.TTL, Token: r.Token, Owner: r.Owner, Value: r.Value, ModifyIndex: r.Modify}
	switch r.Status {
	case fsm.StatusOK:
		return g, nil
	case fsm.StatusElectionHeld:
		return ElectionGrant{}, ErrElectionHeld
	case fsm.StatusNotHolder:
		return ElectionGrant{}, ErrNotHolder
	case fsm.StatusLeaseNotFound:
		return ElectionGrant{}, ErrLeaseNotFound
	case fsm.StatusQueued:
		w := primWait{space: fsm.SpaceElection, name: req.Name, lease: req.Lease, newLease: req.NewLease, ttl: req.TTL, wait: req.Wait, dequeue: fsm.TypeElectionDequeue,
			release: func(ctx context.Context, token uint64) error {
				return n.Resign(ctx, req.Name, req.Lease, token)
			}}
		e, err := n.awaitPrim(ctx, w, events)
		if err != nil {
			if errors.Is(err, ErrWaitTimeout) {
				return ElectionGrant{}, err
			}
			return ElectionGrant{}, afterProposal(err)
		}
		g.Token, g.Owner, g.Value, g.ModifyIndex = e.Token, e.Owner, e.Value, e.Index
		return g, nil
	}
	return ElectionGrant{}, fmt.Errorf("cluster: campaign: unexpected status %s", r.Status)
}

// Resign gives up the leadership of lease with token; the head candidate is elected in
// the same commit.
func (n *Node) Resign(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error {
	if err := n.versionReady(ctx, fsm.TypeResign); err != nil {
		return err
	}
	r, err := n.apply(&fsm.Command{Type: fsm.TypeResign, Name: name, Lease: lease, Token: token})
	if err != nil {
		return err
	}
	return releaseErr(r.Status)
}

// awaitPrim waits for the state machine to grant a queued request or end its wait, as
// awaitGrant does for locks. The event's Token, Owner, Value and Index describe the
// grant.
func (n *Node) awaitPrim(ctx context.Context, w primWait, events <-chan fsm.Event) (fsm.Event, error) {
	backstop := time.NewTimer(w.wait + 2*n.cfg.ElectionTimeout + n.cfg.TickInterval)
	defer backstop.Stop()
	var keepalive <-chan time.Time
	if w.newLease {
		// Nobody else knows this lease yet, so the waiting request keeps it alive.
		t := time.NewTicker(time.Duration(w.ttl) * time.Millisecond / 3)
		defer t.Stop()
		keepalive = t.C
	}
	for {
		select {
		case e := <-events:
			if e.Kind == fsm.EventGranted {
				return e, nil
			}
			n.revokeImplicit(w.newLease, w.lease)
			return fsm.Event{}, ErrWaitTimeout
		case <-keepalive:
			if _, err := n.KeepAlive(ctx, w.lease); err != nil {
				n.log.Debug("keepalive for a waiting request failed", "error", err)
			}
		case <-backstop.C:
			return n.abandonPrim(w, ErrWaitTimeout)
		case <-ctx.Done():
			return n.abandonPrim(w, ctx.Err())
		}
	}
}

// abandonPrim takes the lease out of the queue. A grant that arrived meanwhile is kept
// when the wait merely ended (the caller still listens), and given back when the caller
// is gone. When another request of the same lease waits for the same name, it owns the
// wait and nothing is done.
func (n *Node) abandonPrim(w primWait, cause error) (fsm.Event, error) {
	if n.events.waitingIn(w.space, w.name, w.lease) > 1 {
		return fsm.Event{}, cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ApplyTimeout)
	defer cancel()
	r, err := n.propose(ctx, &fsm.Command{Type: w.dequeue, Name: w.name, Lease: w.lease})
	if err != nil {
		return fsm.Event{}, err
	}
	if r.Status == fsm.StatusOK { // granted just before the wait ended
		e := fsm.Event{Kind: fsm.EventGranted, Space: w.space, Name: w.name, Lease: w.lease, Token: r.Token, Owner: r.Owner, Value: r.Value, Index: r.Modify}
		if cause == ErrWaitTimeout {
			return e, nil
		}
		if err := w.release(ctx, r.Token); err != nil {
			n.log.Warn("giving back a grant to an abandoned wait failed", "space", w.space, "name", w.name, "error", err)
		}
	}
	n.revokeImplicit(w.newLease, w.lease)
	return fsm.Event{}, cause
}

// revokeImplicit revokes a lease the request created itself when its wait fails: the
// caller never learned its ID, so it could never be used.
func (n *Node) revokeImplicit(newLease bool, lease fsm.LeaseID) {
	if newLease {
		n.cleanupImplicitLease(AcquireRequest{NewLease: true, Lease: lease})
	}
}

// SemaphoreStatus returns the state of semaphore name, as LockStatus does for a lock:
// linearizable unless stale, and a blocking query on its modify index with wait > 0.
func (n *Node) SemaphoreStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.SemaphoreView, error) {
	read := func() (uint64, bool) {
		v := n.fsm.Semaphore(name)
		return v.ModifyIndex, v.Limit != 0
	}
	if err := n.blockingRead(ctx, fsm.SpaceSemaphore, name, stale, waitIndex, wait, read); err != nil {
		return fsm.SemaphoreView{}, err
	}
	return n.fsm.Semaphore(name), nil
}

// ElectionStatus returns the state of election name: who leads and what it published.
// Every change of leader or value moves its modify index, so a blocking query observes
// each one.
func (n *Node) ElectionStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.ElectionView, error) {
	read := func() (uint64, bool) {
		v := n.fsm.Election(name)
		return v.ModifyIndex, v.Elected
	}
	if err := n.blockingRead(ctx, fsm.SpaceElection, name, stale, waitIndex, wait, read); err != nil {
		return fsm.ElectionView{}, err
	}
	return n.fsm.Election(name), nil
}

// blockingRead makes the read that follows linearizable (unless stale), and with wait > 0
// returns as soon as read's modify index exceeds waitIndex, or after wait. read returns
// the modify index and whether the name is in use (a name not in use is also woken when
// any name of its namespace is freed, which moves its modify index).
func (n *Node) blockingRead(ctx context.Context, space fsm.Space, name string, stale bool, waitIndex uint64, wait time.Duration, read func() (uint64, bool)) error {
	if !stale {
		if err := n.ReadBarrier(ctx); err != nil {
			return err
		}
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		modify, inUse := read()
		if modify > waitIndex {
			return nil
		}
		// Watch, then look again: a change between the two reads is not missed.
		ch, cancel := n.events.watchIn(space, name, !inUse)
		modify2, inUse2 := read()
		if modify2 > waitIndex || inUse2 != inUse {
			cancel()
			continue
		}
		select {
		case <-ch:
		case <-t.C:
			cancel()
			return nil
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		case <-n.stopping:
			cancel()
			return ErrShutdown
		}
	}
}
