package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/verify/checker"
)

// holders copies a status answer's grants into the record.
func holders(in []api.Holder) []checker.Holder {
	var out []checker.Holder
	for _, h := range in {
		out = append(out, checker.Holder{Owner: h.Owner, Token: h.Token})
	}
	return out
}

// decode reads an OK answer into v; an answer that is not the API's JSON makes the
// operation ambiguous.
func decode(r *result, what string, v any) {
	if r.outcome != checker.OutOK {
		return
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		r.outcome, r.err = checker.OutAmbiguous, fmt.Sprintf("bad %s answer %q", what, r.body)
	}
}

// AcquirePermit takes a permit of semaphore name (of limit permits) with lease, at once
// or not at all.
func (c *Client) AcquirePermit(ctx context.Context, name, lease, owner string, limit int64) Op {
	n := c.node()
	op := Op{Kind: checker.KindSemAcquire, Node: n, Lock: name, Lease: lease, Owner: owner, Limit: limit, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPut, "/v1/semaphores/"+name, api.SemaphoreAcquireRequest{Limit: limit, LeaseID: lease, Owner: owner}, 0, 0)
	var g api.SemaphoreGrant
	decode(&r, "permit", &g)
	op.Token = g.Token
	return c.record(op, r)
}

// ReleasePermit gives back the permit of semaphore name held by lease with token.
func (c *Client) ReleasePermit(ctx context.Context, name, lease, owner string, token uint64) Op {
	return c.giveBack(ctx, checker.KindSemRelease, "/v1/semaphores/", name, lease, owner, token)
}

// giveBack sends DELETE route+name with lease and token (a permit's release, a
// resignation).
func (c *Client) giveBack(ctx context.Context, kind string, route, name, lease, owner string, token uint64) Op {
	n := c.node()
	op := Op{Kind: kind, Node: n, Lock: name, Lease: lease, Owner: owner, Token: token, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodDelete, route+name, api.ReleaseRequest{LeaseID: lease, Token: token}, 0, 0)
	return c.record(op, r)
}

// SemaphoreStatus reads semaphore name (linearizable).
func (c *Client) SemaphoreStatus(ctx context.Context, name string) Op {
	var s api.SemaphoreStatus
	return c.read(ctx, checker.KindSemStatus, "/v1/semaphores/", name, &s, func(op *Op) {
		op.Limit, op.Holders = s.Limit, holders(s.Permits)
	})
}

// read sends GET route+name, decodes an OK answer into out, and lets fill copy it into
// the record.
func (c *Client) read(ctx context.Context, kind string, route, name string, out any, fill func(*Op)) Op {
	n := c.node()
	op := Op{Kind: kind, Node: n, Lock: name, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodGet, route+name, nil, 0, 0)
	decode(&r, kind, out)
	fill(&op)
	return c.record(op, r)
}

// Campaign campaigns in election name with lease and value, at once or not at all; with
// token it is a proclaim by the leader.
func (c *Client) Campaign(ctx context.Context, name, lease, owner, value string, token uint64) Op {
	n := c.node()
	kind := checker.KindCampaign
	if token != 0 {
		kind = checker.KindProclaim
	}
	op := Op{Kind: kind, Node: n, Lock: name, Lease: lease, Owner: owner, Value: value, Token: token, Call: c.Rec.Clock.Now()}
	r := c.send(ctx, c.Endpoints[n], http.MethodPut, "/v1/elections/"+name, api.CampaignRequest{Value: value, LeaseID: lease, Owner: owner, Token: token}, 0, 0)
	var g api.ElectionGrant
	decode(&r, "election", &g)
	if r.outcome == checker.OutOK {
		// The record keeps what was asked (the value, a proclaim's token); the answer must
		// carry the same, and anything else is written down for the counterexample.
		if kind == checker.KindCampaign {
			op.Token = g.Token
		}
		if g.Value != value || (kind == checker.KindProclaim && g.Token != token) {
			r.err = fmt.Sprintf("answered value %q token %d", g.Value, g.Token)
		}
	}
	return c.record(op, r)
}

// Resign gives up the leadership of election name held by lease with token.
func (c *Client) Resign(ctx context.Context, name, lease, owner string, token uint64) Op {
	return c.giveBack(ctx, checker.KindResign, "/v1/elections/", name, lease, owner, token)
}

// ElectionStatus reads election name (linearizable).
func (c *Client) ElectionStatus(ctx context.Context, name string) Op {
	var s api.ElectionStatus
	return c.read(ctx, checker.KindElectStatus, "/v1/elections/", name, &s, func(op *Op) {
		op.Elected, op.StatusOwner, op.Value, op.Token = s.Elected, s.Owner, s.Value, s.Token
	})
}
