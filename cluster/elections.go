package cluster

import (
	"context"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Elections is the node's leader elections. Reach it with Node.Elections. A campaign
// works like a lock's acquire; the leader may publish a value, and every change of leader
// or value moves the election's modify index.
type Elections struct{ n *Node }

// CampaignRequest campaigns for an election, or proclaims a new value from the leader's
// lease; the lease fields work as in AcquireRequest. A non-zero Token makes it a proclaim
// only: it never campaigns.
type CampaignRequest struct {
	Name      string
	Value     string
	Token     uint64
	Lease     LeaseID
	NewLease  bool
	RequestID string
	TTL       time.Duration // for NewLease
	Wait      time.Duration
	Owner     string
}

// ElectionGrant is a leadership held by a lease.
type ElectionGrant struct {
	Name        string
	Token       uint64
	Lease       LeaseID
	TTL         time.Duration
	Owner       string
	Value       string
	ModifyIndex uint64
}

// Campaign campaigns for election req.Name: the lease leads at once when nobody does;
// from the leader's lease it proclaims req.Value (the token is kept); otherwise, with
// req.Wait > 0, the lease waits as a candidate and the call returns when the commit that
// elects it (or ends the wait) is applied. If ctx ends first, the candidate leaves the
// queue (and resigns a leadership won meanwhile) before it returns.
func (el *Elections) Campaign(ctx context.Context, req CampaignRequest) (ElectionGrant, error) {
	n := el.n
	req.Lease = n.leaseOf(ctx, req.NewLease, req.RequestID, req.Lease)
	if err := n.prop.versionReady(ctx, fsm.TypeCampaign); err != nil {
		return ElectionGrant{}, err
	}
	c := &fsm.Command{Type: fsm.TypeCampaign, Name: req.Name, Value: req.Value, Token: req.Token, Lease: req.Lease, NewLease: req.NewLease, TTL: ms(req.TTL), Wait: waitMs(req.Wait), Owner: req.Owner}
	c.Creator = n.callerOf(ctx, c) // proposed through apply, which does not stamp it
	w := &queuedWait{n: n, space: fsm.SpaceElection, ttl: req.TTL, wait: req.Wait, dequeue: fsm.TypeElectionDequeue, release: el.Resign}
	return acquire(ctx, w, c, n.prop.apply, func(r *fsm.Result) ElectionGrant {
		return ElectionGrant{Name: req.Name, Lease: req.Lease, TTL: dur(r.TTL), Token: r.Token, Owner: r.Owner, Value: r.Value, ModifyIndex: r.Modify}
	})
}

// Resign gives up the leadership of lease with token; the head candidate is elected in
// the same commit.
func (el *Elections) Resign(ctx context.Context, name string, lease LeaseID, token uint64) error {
	return el.n.prop.releaseGrant(ctx, &fsm.Command{Type: fsm.TypeResign, Name: name, Lease: lease, Token: token})
}

// Status returns the state of election name: who leads and what it published. Every
// change of leader or value moves its modify index, so a blocking query observes each one.
func (el *Elections) Status(ctx context.Context, name string, q Query) (ElectionView, error) {
	return statusRead(ctx, el.n, fsm.SpaceElection, name, q, el.n.fsm.Election, func(v ElectionView) (uint64, bool) { return v.ModifyIndex, v.Elected })
}
