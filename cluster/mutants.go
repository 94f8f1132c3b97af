package cluster

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
)

// This file holds what the commit mutants of internal/mutant run instead of waiting for a
// commit. Only hooks of the form `if mutant.Is(...)` call it, so a build without the
// mutants tag drops it with them (test/mutants checks the binary).

// mutantEarlyAnswer is how long a mutant waits for the real commit before it answers
// anyway: long enough for a healthy cluster to commit, so that only a leader that cannot
// reach a majority answers early.
const mutantEarlyAnswer = 50 * time.Millisecond

// mutantAnswerBeforeCommit answers c as if it had been applied, once it is appended to
// the log (raft.Apply has taken it) but perhaps not committed: the real answer when it
// comes quickly, otherwise one made up from the local state.
func (p *proposer) mutantAnswerBeforeCommit(c *fsm.Command, f raft.ApplyFuture) (*fsm.Result, error) {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err == nil {
			return f.Response().(*fsm.Result), nil
		}
	case <-time.After(mutantEarlyAnswer):
	}
	n := p.n
	idx := n.raft.LastIndex()
	r := &fsm.Result{Index: idx}
	switch c.Type {
	case fsm.TypeAcquire:
		v := n.fsm.Lock(c.Name)
		if v.Held && v.Holder != c.Lease {
			r.Status = fsm.StatusLockHeld
			if c.Wait > 0 {
				r.Status = fsm.StatusQueued
			}
			return r, nil
		}
		r.Token, r.TTL, r.Owner = idx, c.TTL, c.Owner
	case fsm.TypeRenew:
		for _, id := range c.Leases {
			l, ok := n.fsm.Lease(id)
			r.Renewed = append(r.Renewed, ok)
			r.RenewedTTL = append(r.RenewedTTL, l.TTL)
		}
	}
	return r, nil
}
