package cluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// renewer batches keepalives: the leader's renew loop gathers those that arrive within
// RenewWindow into one Renew entry, and each is answered once that entry is applied.
type renewer struct {
	n  *Node
	ch chan *renewReq
}

// renewReq is one keepalive request (of one lease, or of many from a batch keepalive)
// waiting to be batched. All its leases go into the same Renew entry.
type renewReq struct {
	ids []fsm.LeaseID
	// caller is the caller of every lease of the request (Node.leaseCaller): the state
	// machine renews only the caller's own leases from protocol version 4 on.
	caller string
	resp   chan renewResp
	// state is renewPending until either the renew loop takes the request into a batch
	// (renewTaken) or the caller gives up on it first (renewAbandoned). Whoever moves it
	// first decides: a request the caller abandoned is never proposed, so its caller may
	// answer "not applied"; a taken one may be, so its caller must not.
	state atomic.Int32
}

const (
	renewPending int32 = iota
	renewTaken
	renewAbandoned
)

// abandon withdraws a request that no batch has taken yet and reports whether it did.
func (r *renewReq) abandon() bool { return r.state.CompareAndSwap(renewPending, renewAbandoned) }

// take claims a request for a batch and reports whether its caller still wants it.
func (r *renewReq) take() bool { return r.state.CompareAndSwap(renewPending, renewTaken) }

// renewResp answers a renewReq: per lease in order, whether it existed and its TTL; or
// err for all of them.
type renewResp struct {
	ttls  []time.Duration
	found []bool
	err   error
}

// maxRenewBatch caps one Renew entry (16 bytes a lease) well below raft's entry limits.
// A batch closes once it holds this many leases, so one entry holds at most
// maxRenewBatch + MaxKeepAliveBatch - 1.
const maxRenewBatch = 65536

// MaxKeepAliveBatch is the most leases one KeepAliveMany call may renew.
const MaxKeepAliveBatch = 10_000

// renew queues ids as one request into the renew loop and waits for its batch's outcome.
// It never waits on a term that has ended: a request that no batch took before the term
// ended (or before ctx ended) answers ErrNoLeader, since it was certainly not proposed;
// one that was taken answers with its batch's outcome.
func (rn *renewer) renew(ctx context.Context, ids []fsm.LeaseID) (ttls []time.Duration, found []bool, err error) {
	n := rn.n
	if err := n.leader.waitReady(ctx); err != nil {
		return nil, nil, err
	}
	term := n.leader.term()
	if term == nil {
		return nil, nil, notLeader(n.raft)
	}
	req := &renewReq{ids: ids, caller: leaseCaller(ctx, n.fsm.Version()), resp: make(chan renewResp, 1)}
	t := time.NewTimer(n.cfg.RenewWindow + 2*n.cfg.ApplyTimeout)
	defer t.Stop()
	select {
	case rn.ch <- req:
	case <-term:
		return nil, nil, ErrNoLeader
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
	case <-t.C:
		return nil, nil, ErrNoLeader
	}
	for {
		select {
		case r := <-req.resp:
			return r.ttls, r.found, r.err
		case <-term:
			if req.abandon() {
				return nil, nil, ErrNoLeader
			}
			term = nil // taken into a batch: its proposal answers, one way or the other
		case <-ctx.Done():
			if req.abandon() {
				return nil, nil, fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
			}
			return nil, nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, ctx.Err())
		case <-t.C:
			if req.abandon() {
				return nil, nil, ErrNoLeader
			}
			return nil, nil, ErrUnknownOutcome
		}
	}
}

// loop gathers keepalives for RenewWindow after the first one arrives and proposes
// them as one Renew entry; each keepalive is answered only after that entry is applied, so
// an answered keepalive survives any failover.
func (rn *renewer) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var batch []*renewReq
		size := 0
		select {
		case <-ctx.Done():
			rn.fail(nil)
			return
		case r := <-rn.ch:
			if !r.take() {
				continue
			}
			batch, size = append(batch, r), len(r.ids)
		}
		timer.Reset(rn.n.cfg.RenewWindow)
	gather:
		for size < maxRenewBatch {
			select {
			case r := <-rn.ch:
				if r.take() {
					batch, size = append(batch, r), size+len(r.ids)
				}
			case <-timer.C:
				break gather
			case <-ctx.Done():
				rn.fail(batch)
				return
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		go rn.propose(batch)
	}
}

// propose proposes one batch as a Renew entry and answers each of its requests.
func (rn *renewer) propose(batch []*renewReq) {
	c := &fsm.Command{Type: fsm.TypeRenew}
	withCallers := false
	for _, r := range batch {
		c.Leases = append(c.Leases, r.ids...)
		withCallers = withCallers || r.caller != ""
	}
	if withCallers {
		c.Callers = make([]string, 0, len(c.Leases))
		for _, r := range batch {
			for range r.ids {
				c.Callers = append(c.Callers, r.caller)
			}
		}
	}
	res, err := rn.n.prop.apply(c)
	i := 0
	for _, r := range batch {
		if err != nil {
			r.resp <- renewResp{err: err}
			continue
		}
		out := renewResp{ttls: make([]time.Duration, len(r.ids)), found: make([]bool, len(r.ids))}
		for j := range r.ids {
			out.ttls[j], out.found[j] = dur(res.RenewedTTL[i]), res.Renewed[i]
			i++
		}
		r.resp <- out
	}
}

// fail answers queued keepalives when leadership ends; clients retry on the new
// leader. Nothing was proposed for them, so nothing is lost.
func (rn *renewer) fail(batch []*renewReq) {
	for _, r := range batch {
		r.resp <- renewResp{err: ErrNoLeader}
	}
	for {
		select {
		case r := <-rn.ch:
			if r.take() {
				r.resp <- renewResp{err: ErrNoLeader}
			}
		default:
			return
		}
	}
}
