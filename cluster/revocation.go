package cluster

import (
	"context"
)

// Revocation: a deleted ACL token ends what its requests hold open.
//
// At the entry that deletes a token the state machine revokes every lease the token
// created (protocol version 4, fsm/owner.go): its waiting requests leave their queues
// there, and nothing can be granted to them after. The node then answers, at once, every
// request of that token still open here: a waiting acquire, a blocking query (at any
// protocol version) and, through ACL.Revoked, an event stream, with ErrTokenRevoked.

// tokenCaller is the accessor of ctx's caller when it is a token (WithLeaseCreator with
// a non-empty accessor), and "" otherwise (ACLs off, anonymous, or the node itself).
func tokenCaller(ctx context.Context) string {
	s, _ := ctx.Value(creatorKey{}).(string)
	return s
}

// tokenGone returns a channel closed once the token with accessor no longer exists
// (already closed when it does not exist now), and the func that stops watching. A nil
// channel, which never fires, is returned for an empty accessor. The watch is set before
// the look, so a deletion between the two is not missed; a restore wakes the watch, and
// the channel closes only if the token is gone after it.
func (n *Node) tokenGone(accessor string) (<-chan struct{}, func()) {
	if accessor == "" {
		return nil, func() {}
	}
	out := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			ch, stop := n.registry.watchToken(accessor)
			if _, ok := n.fsm.ACLToken(accessor); !ok {
				stop()
				close(out)
				return
			}
			select {
			case <-ch:
				stop()
			case <-ctx.Done():
				stop()
				return
			case <-n.stopping:
				stop()
				return
			}
		}
	}()
	return out, cancel
}

// Revoked returns a channel closed once the token with accessor has been deleted (at
// once when it does not exist), and the func that stops watching, so that a request held
// open for that token (an event stream) ends at the deletion instead of at its next
// check. An empty accessor (anonymous) never fires.
func (a *ACL) Revoked(accessor string) (<-chan struct{}, func()) { return a.n.tokenGone(accessor) }
