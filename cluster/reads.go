package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
)

// ReadBarrier makes a following read of the state machine linearizable: it notes the
// commit index, confirms with a heartbeat round that this node still leads, and waits
// until the state machine has applied that index. No log entry is written. On a follower
// it returns ErrNotLeader.
func (n *Node) ReadBarrier(ctx context.Context) error {
	if mutant.Is("follower-local-read") && n.raft.State() != raft.Leader {
		return nil
	}
	if err := n.leader.waitReady(ctx); err != nil {
		return err
	}
	commit := n.raft.CommitIndex()
	if err := n.wait(n.raft.VerifyLeader()); err != nil && !mutant.Is("read-skip-verify-leader") {
		return notLeader(n.raft)
	}
	if mutant.Is("read-skip-applied-wait") {
		return nil
	}
	select {
	case <-n.applied.wait(commit):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stopping:
		return ErrShutdown
	}
}

// readBarrier is ReadBarrier unless stale.
func (n *Node) readBarrier(ctx context.Context, stale bool) error {
	if stale {
		return nil
	}
	return n.ReadBarrier(ctx)
}

// statusRead is the status read of one name of space: view(name), read as blockingRead
// reads, where mark gives a view's modify index and whether the name is in use.
func statusRead[V any](ctx context.Context, n *Node, space fsm.Space, name string, q Query, view func(string) V, mark func(V) (uint64, bool)) (V, error) {
	read := func() (uint64, bool) { return mark(view(name)) }
	if err := n.blockingRead(ctx, space, name, q, read); err != nil {
		var none V
		return none, err
	}
	return view(name), nil
}

// blockingRead makes the read that follows linearizable (unless q.Stale), and with
// q.Wait > 0 returns as soon as read's modify index exceeds q.WaitIndex, or after q.Wait.
// read returns the modify index and whether the name is in use (a name not in use is also
// woken when any name of its namespace is freed, which moves its modify index).
func (n *Node) blockingRead(ctx context.Context, space fsm.Space, name string, q Query, read func() (uint64, bool)) error {
	if err := n.readBarrier(ctx, q.Stale); err != nil {
		return err
	}
	if q.Wait <= 0 {
		return nil
	}
	t := time.NewTimer(q.Wait)
	defer t.Stop()
	// A blocking query of a token answers at once when the token is deleted, and answers
	// nothing read after its deletion: the entry that deleted it may also be the change
	// the query waits for (it revokes the token's leases).
	acc := tokenCaller(ctx)
	gone, stopGone := n.tokenGone(acc)
	defer stopGone()
	waited := false
	for {
		if waited && acc != "" {
			if _, ok := n.fsm.ACLToken(acc); !ok {
				return ErrTokenRevoked
			}
		}
		waited = true
		modify, inUse := read()
		if modify > q.WaitIndex {
			return nil
		}
		// Watch, then look again: a change between the two reads is not missed.
		ch, cancel := n.registry.watch(space, name, !inUse)
		modify2, inUse2 := read()
		if modify2 > q.WaitIndex || inUse2 != inUse {
			cancel()
			continue
		}
		select {
		case <-ch:
		case <-t.C:
			cancel()
			if _, ok := n.fsm.ACLToken(acc); acc != "" && !ok {
				return ErrTokenRevoked
			}
			return nil
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		case <-gone:
			cancel()
			return ErrTokenRevoked
		case <-n.stopping:
			cancel()
			return ErrShutdown
		}
	}
}
