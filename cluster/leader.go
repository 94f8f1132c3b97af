package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
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
	n.leaderWG.Add(1)
	go func() {
		defer n.leaderWG.Done()
		n.lead(ctx)
	}()
}

// stopLeading stops the clock first, so that nothing more is stamped in a term this node
// no longer leads, then waits for the leader goroutines.
func (n *Node) stopLeading() {
	n.leaderMu.Lock()
	cancel := n.leaderCtx
	n.leaderCtx = nil
	if n.ready.Load() {
		n.ready.Store(false)
		n.readyCh = make(chan struct{})
	}
	n.leaderMu.Unlock()
	n.clock.Stop()
	if cancel != nil {
		cancel()
		n.leaderWG.Wait()
		n.log.Info("stepped down")
	}
}

// lead runs for one leadership term.
func (n *Node) lead(ctx context.Context) {
	start := time.Now()
	// Apply everything committed before this term: only then is fsm.Time the newest
	// cluster time in the log, the base that this term's clock counts from.
	for {
		err := n.wait(n.raft.Barrier(n.cfg.ApplyTimeout))
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
			return
		}
		n.log.Warn("barrier failed; retrying", "error", err)
	}
	base := n.fsm.Time()
	n.clock.Start(base)
	// A Tick of this term makes the first entry the state machine sees in the term, so a
	// read that waits for the commit index is never stranded behind a no-op.
	if _, err := n.apply(&fsm.Command{Type: fsm.TypeTick}); err != nil {
		n.log.Warn("first tick of the term failed", "error", err)
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
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.renewLoop(ctx)
	}()
	n.tickLoop(ctx)
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
			if _, err := n.apply(&fsm.Command{Type: fsm.TypeTick}); err != nil {
				if ctx.Err() == nil {
					n.log.Debug("tick failed", "error", err)
				}
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

// waitReady waits until this node is a ready leader, for at most the election timeout
// plus ApplyTimeout, or returns ErrNotLeader at once when another node leads.
func (n *Node) waitReady(ctx context.Context) error {
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
		return ctx.Err()
	case <-n.stopping:
		return ErrShutdown
	}
}

// notLeader says whether another node is known to lead.
func (n *Node) notLeader() error {
	if addr, _ := n.raft.LeaderWithID(); addr == "" {
		return ErrNoLeader
	}
	return ErrNotLeader
}

// apply stamps c with the leader's clock, proposes it and waits for it to be applied.
func (n *Node) apply(c *fsm.Command) (*fsm.Result, error) {
	now, ok := n.clock.Now()
	if !ok {
		return nil, n.notLeader()
	}
	c.Now = now
	n.lastProposal.Store(now)
	f := n.raft.Apply(c.Encode(nil), n.cfg.ApplyTimeout)
	if err := n.wait(f); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader):
			return nil, n.notLeader()
		case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, ErrUnknownOutcome
		case errors.Is(err, raft.ErrRaftShutdown):
			return nil, ErrShutdown
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return nil, ErrNoLeader
		}
		return nil, err
	}
	r := f.Response().(*fsm.Result)
	if r.Status == fsm.StatusInvalid {
		return r, errors.Join(ErrInvalidCommand, r.Err)
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
	return n.apply(c)
}
