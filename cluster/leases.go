package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Leases is the node's lease operations. Reach it with Node.Leases.
type Leases struct{ n *Node }

// Create creates a lease with ttl.
func (l *Leases) Create(ctx context.Context, ttl time.Duration) (LeaseID, error) {
	id := newLeaseID()
	if _, err := l.n.prop.propose(ctx, &fsm.Command{Type: fsm.TypeCreateLease, Lease: id, TTL: ms(ttl)}); err != nil {
		return id, err
	}
	return id, nil
}

// KeepAlive renews a lease through the leader's Renew batch and returns its TTL once the
// batch is applied. It never waits on a term that has ended: a keepalive that no batch took
// before the term ended (or before ctx ended) answers ErrNoLeader, since it was certainly
// not proposed; one that was taken answers with its batch's outcome.
func (l *Leases) KeepAlive(ctx context.Context, id LeaseID) (time.Duration, error) {
	ttls, found, err := l.n.renewer.renew(ctx, []fsm.LeaseID{id})
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
// applied. It returns, per lease in order, its TTL and whether it existed (false: it never
// did, expired, or was revoked; nothing is created). Errors are KeepAlive's and concern
// the whole request: on ErrNoLeader nothing was renewed; on ErrUnknownOutcome all or none
// of the leases were.
func (l *Leases) KeepAliveMany(ctx context.Context, ids []LeaseID) (ttls []time.Duration, found []bool, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	if len(ids) > MaxKeepAliveBatch {
		return nil, nil, fmt.Errorf("%w: %d leases in one keepalive, at most %d", ErrInvalidCommand, len(ids), MaxKeepAliveBatch)
	}
	return l.n.renewer.renew(ctx, ids)
}

// Revoke deletes a lease and releases its locks, handing each to its next waiter. It
// returns the released lock names.
func (l *Leases) Revoke(ctx context.Context, id LeaseID) ([]string, error) {
	c := &fsm.Command{Type: fsm.TypeRevoke, Lease: id}
	r, err := l.n.prop.propose(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := outcomeError(c.Type, r, l.n.fsm.Limits); err != nil {
		return nil, err
	}
	return r.Released, nil
}

// Lookup returns a lease's state; linearizable unless stale.
func (l *Leases) Lookup(ctx context.Context, id LeaseID, stale bool) (LeaseView, error) {
	if err := l.n.readBarrier(ctx, stale); err != nil {
		return LeaseView{}, err
	}
	v, ok := l.n.fsm.Lease(id)
	if !ok {
		return LeaseView{}, ErrLeaseNotFound
	}
	return LeaseView{TTL: dur(v.TTL), Locks: v.Locks}, nil
}

// newLeaseID draws 128 random bits: a lease ID is the bearer secret that authorizes
// keepalive, release and revoke, so it must not be guessable.
func newLeaseID() LeaseID {
	var id LeaseID
	if _, err := rand.Read(id[:]); err != nil {
		panic(fmt.Sprintf("cluster: crypto/rand failed: %v", err)) // never happens on Linux
	}
	return id
}

// requestLeaseID derives the implicit lease of an acquire from its client-chosen request ID.
// Every retry of the request therefore names the same lease, and the state machine's
// idempotent acquire (same lease: same grant, same queue place; an existing lease is not
// created twice) turns the retry into a repeat of the first attempt. The hash is domain
// separated and one-way, so the lease ID is as hard to guess as the request ID, which the
// API requires to be at least 16 random characters.
func requestLeaseID(requestID string) LeaseID {
	sum := sha256.Sum256([]byte("raftlock implicit lease v1\x00" + requestID))
	var id LeaseID
	copy(id[:], sum[:len(id)])
	return id
}

// callerLeaseID derives the implicit lease of caller's requestID from protocol version 4
// on: the caller is part of the hash, so that two identities sending the same request ID
// name two leases, and nobody can squat or share another's (the state machine refuses a
// lease of another identity besides; fsm/owner.go).
func callerLeaseID(caller, requestID string) LeaseID {
	sum := sha256.Sum256([]byte("raftlock implicit lease v2\x00" + caller + "\x00" + requestID))
	var id LeaseID
	copy(id[:], sum[:len(id)])
	return id
}

// leaseOf fills in the lease of a request: derived from the request ID (and from the
// caller, with ACLs on from version 4), or drawn.
func (n *Node) leaseOf(ctx context.Context, newLease bool, requestID string, lease LeaseID) LeaseID {
	if !newLease {
		return lease
	}
	n.leaseIDs.Add(1)
	if requestID != "" {
		return implicitLease(ctx, n.fsm.Version(), requestID)
	}
	return newLeaseID()
}

// implicitLease is the lease a request with requestID and no lease acts on, for ctx's
// caller at protocol version v.
func implicitLease(ctx context.Context, v uint64, requestID string) LeaseID {
	if caller := leaseCaller(ctx, v); caller != "" {
		return callerLeaseID(caller, requestID)
	}
	return requestLeaseID(requestID)
}

// creatorKey is the context key of WithLeaseCreator.
type creatorKey struct{}

// WithLeaseCreator returns ctx carrying the ACL accessor of the caller, which a lease
// created with ctx records as its creator (from protocol version 3 on), so that the API
// lets only that identity use it (Leases.Creator).
func WithLeaseCreator(ctx context.Context, accessor string) context.Context {
	return context.WithValue(ctx, creatorKey{}, accessor)
}

// callerOf is the caller command c carries when proposed with ctx: the creator of a lease
// it creates from version 3 on (ctx's accessor), and from version 4 on the caller of
// every command that uses a lease (leaseCaller). Before, it is "", so that an older
// cluster writes exactly the entries it wrote before.
func (n *Node) callerOf(ctx context.Context, c *fsm.Command) string {
	switch v := n.fsm.Version(); {
	case v >= 4 && c.UsesLease():
		return leaseCaller(ctx, v)
	case v == 3 && c.CreatesLease():
		s, _ := ctx.Value(creatorKey{}).(string)
		return s
	}
	return ""
}

// leaseCaller is ctx's caller from version 4 on: the accessor WithLeaseCreator set,
// fsm.CallerAnonymous when it set none (ACLs on, no token), and "" without it (ACLs off,
// or the node's own request), which the state machine lets use any lease.
func leaseCaller(ctx context.Context, v uint64) string {
	if v < 4 {
		return ""
	}
	s, ok := ctx.Value(creatorKey{}).(string)
	if ok && s == "" {
		return fsm.CallerAnonymous
	}
	return s
}

// Creator returns the ACL accessor that created lease id ("" when none was recorded) and
// whether the lease exists, from this node's applied state: a lease's creator never
// changes, so a lagging node is wrong only about a lease it has not seen yet.
func (l *Leases) Creator(id LeaseID) (string, bool) {
	return l.n.fsm.LeaseCreator(id)
}

// ReadBarrier makes the Creator answers that follow linearizable, as a lease lookup's
// read is (Node.ReadBarrier: a heartbeat round that confirms this node leads, and a wait
// until it has applied every entry committed before; no log entry). On a follower it
// returns ErrNotLeader. The API passes it before it answers a lease "not found" from the
// applied state, without proposing anything (transport/leasegate.go).
func (l *Leases) ReadBarrier(ctx context.Context) error { return l.n.ReadBarrier(ctx) }

// ImplicitLease returns the lease an acquire with requestID and no lease_id acts on for
// ctx's caller (see implicitLease), so that the API can check whose it is before the
// acquire.
func (l *Leases) ImplicitLease(ctx context.Context, requestID string) LeaseID {
	return implicitLease(ctx, l.n.fsm.Version(), requestID)
}
