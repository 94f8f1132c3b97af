package cluster

import (
	"context"
	"sync/atomic"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/internal/mutant"
)

// proposer is the one way a command reaches raft: stamped with the leader's clock,
// proposed, waited for, and its refused outcomes answered as errors.
type proposer struct {
	n            *Node
	lastProposal atomic.Int64           // cluster time of the latest proposal, for the tick loop
	faults       atomic.Pointer[faults] // nil except in tests (export_test.go)
}

// propose is apply for request handlers: it first waits for this node to be a ready leader.
func (p *proposer) propose(ctx context.Context, c *fsm.Command) (*fsm.Result, error) {
	if err := p.n.leader.waitReady(ctx); err != nil {
		return nil, err
	}
	if c.Creator == "" {
		c.Creator = p.n.callerOf(ctx, c)
	}
	if p.n.cfg.Budget != nil {
		return p.applyTraced(c, budget.FromContext(ctx))
	}
	return p.apply(c)
}

// versionReady refuses a command of a protocol version the cluster has not activated.
// Only the leader decides (a follower's view may lag, and it forwards anyway): elsewhere
// it answers what waitReady does, so the request is forwarded.
func (p *proposer) versionReady(ctx context.Context, t fsm.Type) error {
	if err := p.n.leader.waitReady(ctx); err != nil {
		return err
	}
	if need := t.Since(); p.n.fsm.Version() < need {
		return &InactiveError{Need: need, Lagging: p.n.members.below(need)}
	}
	return nil
}

// apply stamps c with the leader's clock, proposes it and waits for it to be applied.
func (p *proposer) apply(c *fsm.Command) (*fsm.Result, error) { return p.applyTraced(c, nil) }

// applyTraced is apply that also stamps tr (nil: none) with the entry's index. Its errors
// are raft's (raftError) and the outcomes that refuse an entry whatever its command
// (refusedEntry); the result is returned with the latter.
func (p *proposer) applyTraced(c *fsm.Command, tr *budget.Trace) (*fsm.Result, error) {
	n := p.n
	now, ok := n.leader.clock.Now()
	if !ok {
		return nil, notLeader(n.raft)
	}
	if f := p.faults.Load(); f != nil {
		if err := f.apply(c); err != nil {
			return nil, err
		}
	}
	c.Now = now
	p.lastProposal.Store(now)
	f := n.raft.Apply(c.Encode(nil), n.cfg.ApplyTimeout)
	if mutant.Is("grant-before-commit") && c.Type == fsm.TypeAcquire || mutant.Is("keepalive-before-commit") && c.Type == fsm.TypeRenew || mutant.Is("release-before-commit") && c.Type == fsm.TypeRelease {
		return p.mutantAnswerBeforeCommit(c, f)
	}
	if err := n.wait(f); err != nil {
		return nil, raftError(n.raft, err, true)
	}
	if tr != nil {
		tr.Proposed(f.Index())
	}
	r := f.Response().(*fsm.Result)
	if refusedEntry(r.Status) {
		return r, outcomeError(c.Type, r, n.fsm.Limits)
	}
	return r, nil
}

// applyAs is apply for the requests of ctx's caller that waited for a ready leader
// already (versionReady): it stamps the caller, which apply does not.
func (p *proposer) applyAs(ctx context.Context) func(*fsm.Command) (*fsm.Result, error) {
	return func(c *fsm.Command) (*fsm.Result, error) {
		if c.Creator == "" {
			c.Creator = p.n.callerOf(ctx, c)
		}
		return p.apply(c)
	}
}

// releaseGrant proposes the release of a semaphore permit or an election's leadership,
// both of protocol version 2, and answers its outcome.
func (p *proposer) releaseGrant(ctx context.Context, c *fsm.Command) error {
	if err := p.versionReady(ctx, c.Type); err != nil {
		return err
	}
	r, err := p.applyAs(ctx)(c)
	if err != nil {
		return err
	}
	return outcomeError(c.Type, r, p.n.fsm.Limits)
}
