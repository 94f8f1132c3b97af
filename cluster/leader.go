package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/internal/mutant"
)

// leadershipLoop follows raft's leadership notifications and starts or stops the
// leader-only machinery.
func (n *Node) leadershipLoop() {
	defer close(n.loopDone)
	for {
		select {
		case <-n.stopping:
			return
		case isLeader := <-n.notifyCh:
			if isLeader {
				n.startLeading()
			} else {
				n.stopLeading()
			}
		}
	}
}

func (n *Node) startLeading() {
	n.stopLeading()
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	n.leaderCtx = cancel
	n.termDone = ctx.Done()
	n.leaderWG.Add(1)
	go func() {
		defer n.leaderWG.Done()
		n.lead(ctx)
	}()
}

// stopLeading stops the clock first, so that nothing more is stamped in a term this node
// no longer leads, then waits for the leader goroutines.
//
// The term's context is cancelled while leaderMu is held: lead marks the node ready only
// under leaderMu after checking that context, so once stopLeading has released the lock no
// deposed term can mark this node ready.
func (n *Node) stopLeading() {
	n.leaderMu.Lock()
	cancel := n.leaderCtx
	n.leaderCtx = nil
	n.termDone = nil
	if cancel != nil {
		cancel()
	}
	if n.ready.Load() {
		n.ready.Store(false)
		n.readyCh = make(chan struct{})
	}
	n.leaderMu.Unlock()
	n.clock.Stop()
	if cancel != nil {
		n.leaderWG.Wait()
		n.log.Info("stepped down")
	}
}

// lead runs for one leadership term.
func (n *Node) lead(ctx context.Context) {
	start := time.Now()
	// Apply everything committed before this term: only then is fsm.Time the newest
	// cluster time in the log, the base that this term's clock counts from.
	for !mutant.Is("no-barrier") {
		err := n.wait(n.raft.Barrier(n.cfg.ApplyTimeout))
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
			return
		}
		// A leadership transfer in progress (a node handing over before it stops) refuses
		// the barrier at once: wait a little rather than spin and flood the log.
		if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			n.log.Debug("barrier refused while leadership is being transferred; retrying", "error", err)
		} else {
			n.log.Warn("barrier failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	base := n.fsm.Time()
	if mutant.Is("clock-wall-base") {
		base = time.Now().UnixMilli()
	}
	n.clock.Start(base)
	// A Tick of this term makes the first entry the state machine sees in the term, so a
	// read that waits for the commit index is never stranded behind a no-op.
	if err := n.applyDuty(ctx, &fsm.Command{Type: fsm.TypeTick}); err != nil {
		return
	}
	n.leaderMu.Lock()
	if ctx.Err() != nil {
		n.leaderMu.Unlock()
		return
	}
	n.ready.Store(true)
	close(n.readyCh)
	n.leaderMu.Unlock()
	n.log.Info("leading", "cluster_time_ms", base, "ready_after", time.Since(start).Round(time.Millisecond))

	if self, ok := n.fsm.Node(n.cfg.ID); !ok || self.HTTPAddr != n.cfg.HTTPAddr || self.RaftAddr != n.RaftAddr() {
		if _, err := n.apply(&fsm.Command{Type: fsm.TypeRegisterNode, Node: n.selfInfo()}); err != nil {
			n.log.Warn("registering this node failed", "error", err)
		}
	}
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		n.renewLoop(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		n.upgradeLoop(ctx)
	}()
	n.tickLoop(ctx)
	<-done
	<-done
}

func (n *Node) selfInfo() fsm.NodeInfo {
	return fsm.NodeInfo{ID: n.cfg.ID, RaftAddr: n.RaftAddr(), HTTPAddr: n.cfg.HTTPAddr}
}

// tickLoop proposes a Tick at the earliest pending deadline, and at least every
// TickInterval while leases exist, so that expiry happens on time and a failover lengthens
// a lease by at most TickInterval plus the election. An idle cluster writes nothing.
func (n *Node) tickLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now, ok := n.clock.Now()
		if !ok {
			return
		}
		wait, pending := time.Hour, false
		if next, has := n.fsm.NextDeadline(); has {
			pending = true
			wait = time.Duration(next-now) * time.Millisecond
			if n.fsm.LeaseCount() > 0 {
				idle := time.Duration(n.lastProposal.Load()-now)*time.Millisecond + n.cfg.TickInterval
				wait = min(wait, idle)
			}
		}
		if pending && wait <= 0 {
			if err := n.applyDuty(ctx, &fsm.Command{Type: fsm.TypeTick}); err != nil {
				return
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-n.kick:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// applyDuty applies a command the leader owes the cluster (a tick). A failure is retried
// with backoff for as long as this node still leads; a leader that cannot get its clock's
// entries committed for DutyTimeout hands leadership to another voter rather than sit on
// the cluster with expiries stalled. It returns nil once the command is applied, or the
// error that ended the term's duties.
func (n *Node) applyDuty(ctx context.Context, c *fsm.Command) error {
	backoff := 20 * time.Millisecond
	var first time.Time
	for attempt := 1; ; attempt++ {
		cmd := *c
		_, err := n.apply(&cmd)
		if err == nil {
			if attempt > 1 {
				n.log.Info("leader duty recovered", "command", c.Type, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil || n.raft.State() != raft.Leader || errors.Is(err, ErrShutdown) {
			return err
		}
		if first.IsZero() {
			first = time.Now()
		}
		if time.Since(first) >= n.cfg.DutyTimeout {
			n.log.Error("cannot commit the leader's clock entries; handing leadership over", "command", c.Type, "failing_for", time.Since(first).Round(time.Millisecond), "error", err)
			if terr := n.raft.LeadershipTransfer().Error(); terr != nil {
				n.log.Error("leadership transfer failed; stepping down is left to raft", "error", terr)
			}
			return err
		}
		n.log.Warn("leader duty failed; retrying while this node leads", "command", c.Type, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// waitReady waits until this node is a ready leader, for at most the election timeout
// plus ApplyTimeout, or returns ErrNotLeader at once when another node leads.
func (n *Node) waitReady(ctx context.Context) error {
	if err := n.storage.check(); err != nil {
		return err // not even forwarded: this node is not healthy enough to take part
	}
	if n.ready.Load() {
		return nil
	}
	if n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	n.leaderMu.Lock()
	ch := n.readyCh
	n.leaderMu.Unlock()
	t := time.NewTimer(n.cfg.ApplyTimeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return ErrNoLeader
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
	case <-n.stopping:
		return ErrShutdown
	}
}

// term returns a channel closed when this node's current leadership term ends, or nil
// when it does not lead.
func (n *Node) term() <-chan struct{} {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.termDone
}

// notLeader says whether another node is known to lead.
func (n *Node) notLeader() error {
	if addr, _ := n.raft.LeaderWithID(); addr == "" {
		return ErrNoLeader
	}
	return ErrNotLeader
}

// apply stamps c with the leader's clock, proposes it and waits for it to be applied.
func (n *Node) apply(c *fsm.Command) (*fsm.Result, error) { return n.applyTraced(c, nil) }

// applyTraced is apply that also stamps tr (nil: none) with the entry's index.
func (n *Node) applyTraced(c *fsm.Command, tr *budget.Trace) (*fsm.Result, error) {
	now, ok := n.clock.Now()
	if !ok {
		return nil, n.notLeader()
	}
	if f := n.faults.Load(); f != nil {
		if err := f.apply(c); err != nil {
			return nil, err
		}
	}
	c.Now = now
	n.lastProposal.Store(now)
	f := n.raft.Apply(c.Encode(nil), n.cfg.ApplyTimeout)
	if mutant.Is("grant-before-commit") && c.Type == fsm.TypeAcquire || mutant.Is("keepalive-before-commit") && c.Type == fsm.TypeRenew || mutant.Is("release-before-commit") && c.Type == fsm.TypeRelease {
		return n.mutantAnswerBeforeCommit(c, f)
	}
	if err := n.wait(f); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			// raft refuses a command on a non-leader before appending it.
			return nil, n.notLeader()
		case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			// Refused before it was appended: certainly not applied.
			return nil, ErrNoLeader
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
			// Appended perhaps, and perhaps replicated: a later leader may commit it.
			return nil, fmt.Errorf("%w (%v)", ErrUnknownOutcome, err)
		}
		return nil, fmt.Errorf("%w (%v)", ErrUnknownOutcome, err)
	}
	if tr != nil {
		tr.Proposed(f.Index())
	}
	r := f.Response().(*fsm.Result)
	switch r.Status {
	case fsm.StatusInvalid:
		return r, errors.Join(ErrInvalidCommand, r.Err)
	case fsm.StatusHalted:
		return r, errors.Join(ErrHalted, r.Err)
	case fsm.StatusQuotaExceeded:
		return r, n.quotaError(r.Quota)
	}
	return r, nil
}

// wait waits for a raft future, or for this node to shut down: raft does not answer
// futures still queued when it shuts down.
func (n *Node) wait(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.stopping:
		return raft.ErrRaftShutdown
	}
}

// propose is apply for request handlers: it first waits for this node to be a ready leader.
func (n *Node) propose(ctx context.Context, c *fsm.Command) (*fsm.Result, error) {
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	if n.cfg.Budget != nil {
		return n.applyTraced(c, budget.FromContext(ctx))
	}
	return n.apply(c)
}
