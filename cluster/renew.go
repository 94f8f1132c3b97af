package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// renewReq is one keepalive waiting to be batched.
type renewReq struct {
	id   fsm.LeaseID
	resp chan renewResp
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

type renewResp struct {
	ttl int64
	err error
}

// maxRenewBatch caps one Renew entry (16 bytes a lease) well below raft's entry limits.
const maxRenewBatch = 65536

// renewLoop gathers keepalives for RenewWindow after the first one arrives and proposes
// them as one Renew entry; each keepalive is answered only after that entry is applied, so
// an answered keepalive survives any failover.
func (n *Node) renewLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var batch []*renewReq
		select {
		case <-ctx.Done():
			n.failRenews(nil)
			return
		case r := <-n.renewCh:
			if !r.take() {
				continue
			}
			batch = append(batch, r)
		}
		timer.Reset(n.cfg.RenewWindow)
	gather:
		for len(batch) < maxRenewBatch {
			select {
			case r := <-n.renewCh:
				if r.take() {
					batch = append(batch, r)
				}
			case <-timer.C:
				break gather
			case <-ctx.Done():
				n.failRenews(batch)
				return
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		go n.proposeRenew(batch)
	}
}

func (n *Node) proposeRenew(batch []*renewReq) {
	c := &fsm.Command{Type: fsm.TypeRenew, Leases: make([]fsm.LeaseID, len(batch))}
	for i, r := range batch {
		c.Leases[i] = r.id
	}
	res, err := n.apply(c)
	for i, r := range batch {
		switch {
		case err != nil:
			r.resp <- renewResp{err: err}
		case !res.Renewed[i]:
			r.resp <- renewResp{err: ErrLeaseNotFound}
		default:
			r.resp <- renewResp{ttl: res.RenewedTTL[i]}
		}
	}
}

// failRenews answers queued keepalives when leadership ends; clients retry on the new
// leader. Nothing was proposed for them, so nothing is lost.
func (n *Node) failRenews(batch []*renewReq) {
	for _, r := range batch {
		r.resp <- renewResp{err: ErrNoLeader}
	}
	for {
		select {
		case r := <-n.renewCh:
			if r.take() {
				r.resp <- renewResp{err: ErrNoLeader}
			}
		default:
			return
		}
	}
}
