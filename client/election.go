package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/api"
)

// ElectionLeader is an election's state as Leader and Observe report it: whether a lease
// leads (Elected), its Owner label, the Value it published, the Token of its leadership,
// the ModifyIndex of the last change and the number of Candidates waiting.
type ElectionLeader = api.ElectionStatus

// Election is a candidacy in a leader election: Campaign waits in the election's FIFO
// queue of candidates until the lease leads, Proclaim publishes a new value, Resign hands
// leadership to the next candidate (in the same commit), and Leader and Observe tell
// anyone who leads and what it published. The leadership's token fences the leader's
// writes exactly as a lock's does; a proclaim keeps it.
//
// An Election has the options, the lease handling, Lost and SafeUntil of Mutex: when
// Lost is closed the lease is gone or in doubt, and the leader must stop acting as one.
type Election struct {
	hold
	value string // the value published while leading
}

// NewElection returns a candidacy in election name with lease.
func NewElection(lease *Lease, name string, opts ...MutexOption) *Election {
	return newElection(lease.c, lease, name, opts)
}

// NewElection returns a candidacy in election name that creates its own lease
// (WithLeaseTTL) for each leadership and revokes it on Resign.
func (c *Client) NewElection(name string, opts ...MutexOption) *Election {
	return newElection(c, nil, name, opts)
}

func newElection(c *Client, given *Lease, name string, opts []MutexOption) *Election {
	return newHold[Election](c, given, name, "election", opts, c.releaser(fmt.Sprintf("resign %q", name), electionsRoute, name))
}

// Campaign campaigns with value and returns once the lease leads, waiting in the queue
// of candidates for as long as ctx allows (as Mutex.Lock waits for a lock). The value is
// published when the lease is elected. Campaigning while leading proclaims value.
func (e *Election) Campaign(ctx context.Context, value string) error {
	return e.campaign(ctx, value, true)
}

// TryCampaign leads with value if nobody leads, and returns ErrElectionHeld at once if
// another lease does.
func (e *Election) TryCampaign(ctx context.Context, value string) error {
	return e.campaign(ctx, value, false)
}

func (e *Election) campaign(ctx context.Context, value string, wait bool) error {
	e.op.Lock()
	defer e.op.Unlock()
	op := fmt.Sprintf("campaign %q", e.name)
	if err := invalid(op, api.ValidateElectionValue(value)); err != nil {
		return err
	}
	if _, _, held := e.current(); held {
		if e.Lease().lost() == nil {
			return e.proclaim(ctx, value)
		}
	}
	err := e.take(ctx, op, "", wait, func(ctx context.Context, opts AcquireOptions) (grant, result, error) {
		return e.send(ctx, op, opts, value, 0)
	})
	if err == nil {
		e.mu.Lock()
		e.value = value
		e.mu.Unlock()
	}
	return err
}

// send sends one PUT /v1/elections/{name}: a campaign, or with token a proclaim.
func (e *Election) send(ctx context.Context, op string, opts AcquireOptions, value string, token uint64) (grant, result, error) {
	var out api.ElectionGrant
	res, err := e.c.acquireAt(ctx, op, electionsRoute, e.name, opts, func(r api.AcquireRequest) any {
		return api.CampaignRequest{Value: value, LeaseID: r.LeaseID, TTLMs: r.TTLMs, WaitMs: r.WaitMs, Owner: r.Owner, RequestID: r.RequestID, Token: token}
	}, &out)
	return grant{token: out.Token, leaseID: out.LeaseID, ttlMs: out.TTLMs}, res, err
}

// Proclaim publishes value as the leader's, keeping the leadership and its token. It
// returns ErrNotLocked when the Election does not lead, and ErrNotHolder when it has lost
// the leadership meanwhile (its lease expired or was revoked, or it resigned elsewhere).
func (e *Election) Proclaim(ctx context.Context, value string) error {
	e.op.Lock()
	defer e.op.Unlock()
	if err := invalid(fmt.Sprintf("proclaim %q", e.name), api.ValidateElectionValue(value)); err != nil {
		return err
	}
	return e.proclaim(ctx, value)
}

func (e *Election) proclaim(ctx context.Context, value string) error {
	op := fmt.Sprintf("proclaim %q", e.name)
	lease, token, held := e.current()
	if !held {
		return wrap(ErrNotLocked, nil, "%s: not the leader", op)
	}
	if _, _, err := e.send(ctx, op, AcquireOptions{LeaseID: lease.ID(), Owner: e.o.owner}, value, token); err != nil {
		return err
	}
	e.mu.Lock()
	e.value = value
	e.mu.Unlock()
	return nil
}

// Resign gives up the leadership with the lease and token of the hold (the next
// candidate leads, in the same commit); one made by Client.NewElection then revokes its
// lease. It returns ErrNotLocked when the Election does not lead.
func (e *Election) Resign(ctx context.Context) error {
	return e.giveBack(ctx, fmt.Sprintf("resign %q", e.name))
}

// Value returns the value this Election published while it leads, "" when it does not.
func (e *Election) Value() string { return e.whileHeld(&e.value) }

// Leader reads who leads the election and what it published (linearizable). Nobody
// leading is not an error: Elected is then false.
func (e *Election) Leader(ctx context.Context) (ElectionLeader, error) {
	return e.c.ElectionStatus(ctx, e.name, StatusOptions{})
}

// observeWait is the server-side wait of each of Observe's blocking queries.
const observeWait = 60 * time.Second

// Observe follows the election with blocking queries and sends its state on the
// returned channel: first the current state, then each state whose ModifyIndex is
// higher than the last one sent (a new leader, a proclaimed value, a resignation or an
// expiry). Changes that come faster than a read returns are coalesced: the newest state
// is always sent. Failed reads are retried with the client's backoff. The channel is
// closed when ctx ends, or when a read fails in a way asking again cannot fix (an invalid
// name, a token refused: ErrInvalid, ErrUnauthenticated, ErrPermissionDenied; Leader
// returns the same error).
func (e *Election) Observe(ctx context.Context) <-chan ElectionLeader {
	ch := make(chan ElectionLeader)
	go func() {
		defer close(ch)
		var last uint64
		first := true
		backoff := e.c.minBackoff
		for ctx.Err() == nil {
			opts := StatusOptions{}
			if !first {
				opts = StatusOptions{WaitIndex: last, Wait: observeWait}
			}
			st, err := e.c.ElectionStatus(ctx, e.name, opts)
			if err != nil {
				if errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrPermissionDenied) {
					e.c.log.Warn("observe: the election cannot be read; stopping", "election", e.name, "error", err)
					return // asking again cannot succeed
				}
				if ctx.Err() == nil {
					e.c.log.Debug("observe: reading the election failed; retrying", "election", e.name, "error", err)
					sleep(ctx, backoff)
					backoff = min(2*backoff, e.c.maxBackoff)
				}
				continue
			}
			backoff = e.c.minBackoff
			if !first && st.ModifyIndex <= last {
				continue // the wait ended without a change
			}
			first, last = false, st.ModifyIndex
			select {
			case ch <- st:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// ElectionStatus reads election name: whether a lease leads, its owner, value and token,
// and the number of candidates. opts make it a blocking query or a stale read, as for
// Status.
func (c *Client) ElectionStatus(ctx context.Context, name string, opts StatusOptions) (api.ElectionStatus, error) {
	return statusAt[api.ElectionStatus](ctx, c, fmt.Sprintf("election status %q", name), electionsRoute, name, opts)
}
