package transport

import (
	"context"

	"github.com/raftlock/raftlock/cluster"
)

// The lease gate: the one place that decides, before anything is proposed, whether a
// request may act on the leases it names.
//
// A lease is bound to the ACL identity that created it (protocol version 3), and a lease
// of another identity answers 404 lease_not_found, as a lease that does not exist does, so
// that a leaked ID is useless and its existence is not revealed (docs/SECURITY.md, "Lease
// ownership"). The answer alone does not keep that promise: the refusal of a foreign lease
// must also take the path, and so the time, of the refusal of an unknown one. Both are
// therefore refused here, by one rule, on the node that can decide both: the leader.
//
//   - A request whose leases this node's applied state shows as the caller's own (or
//     that a request_id's acquire may create) goes on at once: the state machine is the
//     safety check (fsm/owner.go, from version 4), and it decides in log order.
//   - Any other request (a lease of another identity, or none at all) first passes
//     cluster.Leases.ReadBarrier, the barrier of a linearizable read (a heartbeat round,
//     no log entry), and is then judged again from the applied state: refused (404) when
//     a lease is still missing or another identity's, on with it otherwise. On a follower
//     the barrier answers cluster.ErrNotLeader, so that request, foreign or unknown alike,
//     is forwarded to the leader, which decides as above. A follower could not tell an
//     unknown lease from one it has not applied yet anyway.
//
// Why refusing a missing lease here is safe: after the barrier, this node is a leader
// that was confirmed to lead after the request arrived, and it has applied every entry
// committed before then. Every create answered to anyone (a lease's ID is told only in
// the answer of the entry that creates it, after that entry is applied on the leader that
// proposed it) was committed before it was answered, so it is in this node's applied
// state, unless a later entry ended the lease. A create that is not committed yet (a
// proposal in flight) was answered to nobody: the request is ordered before it, and "not
// found" is what a log entry proposed now would have answered too. The barrier matters:
//
//   - a follower may apply a create before the leader's state machine does, and forward
//     a request with that lease at once: the leader's barrier waits for the create's
//     commit index, and the request goes on;
//   - a leader that has lost its office without knowing it yet (cut off from a majority
//     that elected another, which created the lease) fails the barrier and answers
//     nothing false; without the barrier it would answer a live lease "not found".
//
// A request_id's implicit lease is never refused for being missing: the acquire creates
// it, and a retry of the same request names the same lease (a create proposed twice is
// applied once), so a retry still works whether its first attempt's create is in
// flight, applied, or lost. Only its being another identity's lease (possible at
// version 3, where the implicit lease does not depend on the caller) refuses it.
//
// The check is for privacy and for keeping made-up IDs out of the log; it is never the
// safety check: two requests may pass it at once, and a lease may end right after it.
// Those are decided by the state machine, whose refusals answer the same 404.

// leaseUse is a lease a call acts on: one it names (a lease_id), which must exist, or the
// implicit lease of its request_id, which the call creates when it does not exist.
type leaseUse struct {
	id     cluster.LeaseID
	create bool
}

// leaseGate decides, on a node, whether a caller may act on the leases a call names.
type leaseGate struct {
	leases LeaseService
	acl    bool // Config.ACL: leases are bound to their creator
}

// admit is the gate of a call that needs every lease it names: nil to go on, or
// cluster.ErrLeaseNotFound, or the error of the barrier (cluster.ErrNotLeader on a
// follower: forward the call). stale judges from this node's state as it is, without the
// barrier, for a call that reads that state as it is anyway (a stale lookup).
func (g leaseGate) admit(ctx context.Context, id cluster.ACLIdentity, uses []leaseUse, stale bool) error {
	ok, err := g.check(ctx, id, uses, stale)
	if err != nil {
		return err
	}
	for _, o := range ok {
		if !o {
			return cluster.ErrLeaseNotFound
		}
	}
	return nil
}

// check returns, per use, whether the caller id may act on it: at once when every one
// may, from this node's applied state; otherwise after the read barrier (see above).
func (g leaseGate) check(ctx context.Context, id cluster.ACLIdentity, uses []leaseUse, stale bool) ([]bool, error) {
	ok := make([]bool, len(uses))
	all := true
	for i, u := range uses {
		ok[i] = g.usable(id, u)
		all = all && ok[i]
	}
	if all || stale {
		return ok, nil
	}
	if err := g.leases.ReadBarrier(ctx); err != nil {
		return nil, err
	}
	for i, u := range uses {
		ok[i] = g.usable(id, u)
	}
	return ok, nil
}

// usable reports whether caller id may act on u by this node's applied state: the lease
// exists (or u creates it) and, with ACLs on, id may use it. An admin on the empty prefix
// may use every lease (an operator cleaning up), and a lease that recorded no creator
// (made before version 3, or with ACLs off) is anyone's with lock rights. A caller
// without a token is the anonymous identity, whose leases record cluster.CallerAnonymous
// from version 4 on.
func (g leaseGate) usable(id cluster.ACLIdentity, u leaseUse) bool {
	creator, exists := g.leases.Creator(u.id)
	switch {
	case !exists:
		return u.create
	case !g.acl || id.Admin() || creator == "":
		return true
	}
	caller := id.Accessor
	if caller == "" {
		caller = cluster.CallerAnonymous
	}
	return creator == caller
}

// leaseUses lists the leases call c acts on: those it names, and the implicit lease of
// its request_id for ctx's caller (cluster.Leases.ImplicitLease), which depends on the
// caller and the protocol version and so is found at each attempt.
func (g leaseGate) leaseUses(ctx context.Context, c call) []leaseUse {
	uses := make([]leaseUse, 0, len(c.leases)+1)
	for _, l := range c.leases {
		uses = append(uses, leaseUse{id: l})
	}
	if c.requestID != "" {
		uses = append(uses, leaseUse{id: g.leases.ImplicitLease(ctx, c.requestID), create: true})
	}
	return uses
}
