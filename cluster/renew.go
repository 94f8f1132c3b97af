package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// renewReq is one keepalive request (of one lease, or of many from a batch keepalive)
// waiting to be batched. All its leases go into the same Renew entry.
type renewReq struct {
	ids  []fsm.LeaseID
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

// renewResp answers a renewReq: per lease in order, whether it existed and its TTL; or
// err for all of them.
type renewResp struct {
	ttls  []int64
	found []bool
	err   error
}

// maxRenewBatch caps one Renew entry (16 bytes a lease) well below raft's entry limits.
// A batch closes once it holds this many leases, so one entry holds at most
// maxRenewBatch + MaxKeepAliveBatch - 1.
const maxRenewBatch = 65536

// MaxKeepAliveBatch is the most leases one KeepAliveMany call may renew.
const MaxKeepAliveBatch = 10_000

// renewLoop gathers keepalives for RenewWindow after the first one arrives and proposes
// them as one Renew entry; each keepalive is answered only after that entry is applied, so
// an answered keepalive survives any failover.
func (n *Node) renewLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var batch []*renewReq
		size := 0
		select {
		case <-ctx.Done():
			n.failRenews(nil)
			return
		case r := <-n.renewCh:
			if !r.take() {
				continue
			}
			batch, size = append(batch, r), len(r.ids)
		}
		timer.Reset(n.cfg.RenewWindow)
	gather:
		for size < maxRenewBatch {
			select {
			case r := <-n.renewCh:
				if r.take() {
					batch, size = append(batch, r), size+len(r.ids)
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
	c := &fsm.Command{Type: fsm.TypeRenew}
	for _, r := range batch {
		c.Leases = append(c.Leases, r.ids...)
	}
	res, err := n.apply(c)
	i := 0
	for _, r := range batch {
		if err != nil {
			r.resp <- renewResp{err: err}
			continue
		}
		out := renewResp{ttls: make([]int64, len(r.ids)), found: make([]bool, len(r.ids))}
		for j := range r.ids {
			out.ttls[j], out.found[j] = res.RenewedTTL[i], res.Renewed[i]
			i++
		}
		r.resp <- out
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
