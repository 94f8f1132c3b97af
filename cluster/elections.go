package cluster

import (
	"context"

	"github.com/raftlock/raftlock/fsm"
)

// Elections is the node's leader elections. Reach it with Node.Elections. A campaign
// works like a lock's acquire; the leader may publish a value, and every change of leader
// or value moves the election's modify index.
type Elections struct{ n *Node }

// CampaignRequest campaigns for an election, or proclaims a new value from the leader's
// lease; the Holder works as in AcquireRequest. A non-zero Token makes it a proclaim
// only: it never campaigns.
type CampaignRequest struct {
	Name  string
	Value string
	Token uint64
	Holder
}

// ElectionGrant is a leadership held by a lease, and the value it published.
type ElectionGrant struct {
	Granted
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
	c, err := req.Holder.versionedCommand(ctx, n, fsm.TypeCampaign, req.Name)
	if err != nil {
		return ElectionGrant{}, err
	}
	c.Value, c.Token = req.Value, req.Token
	w := &queuedWait{n: n, space: fsm.SpaceElection, holder: req.Holder, dequeue: fsm.TypeElectionDequeue, release: el.Resign}
	return acquire(ctx, w, c, n.prop.applyAs(ctx), func(r *fsm.Result) ElectionGrant {
		return ElectionGrant{Granted: granted(req.Name, req.Lease, r), Value: r.Value, ModifyIndex: r.Modify}
	})
}

// Resign gives up the leadership of lease with token; the head candidate is elected in
// the same commit.
func (el *Elections) Resign(ctx context.Context, name string, lease LeaseID, token uint64) error {
	return el.n.prop.releaseGrant(ctx, &fsm.Command{Type: fsm.TypeResign, Name: name, Lease: lease, Token: token})
}

// Status returns the state of election name: who leads and what it published, and its
// first q.Queue candidates in Queue. Every
// change of leader or value moves its modify index, so a blocking query observes each one.
func (el *Elections) Status(ctx context.Context, name string, q Query) (ElectionView, error) {
	view := func(name string) ElectionView { return el.n.fsm.ElectionQueue(name, q.Queue) }
	return statusRead(ctx, el.n, fsm.SpaceElection, name, q, view, func(v ElectionView) (uint64, bool) { return v.ModifyIndex, v.Elected })
}
