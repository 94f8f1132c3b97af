package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
)

// keepaliver renews all the leases of one Client with as few requests as it can: one
// loop per client wakes when the earliest lease is due and sends one batch keepalive
// (POST /v1/leases/keepalive with lease_ids) for every lease due within half its interval
// from then. Renewing a lease early only moves its SafeUntil forward, and the leases a
// batch renewed fall due together again, so a client with many leases sends about one
// request per keepalive interval instead of one per lease.
//
// Each Lease keeps its own timing contract: SafeUntil moves to the send time of the
// attempt that renewed it plus TTL minus the drift margin (Lease.observe), its watchdog
// declares it lost when that passes, and a batch answer that lists it as not found loses
// it at once.
type keepaliver struct {
	mu      sync.Mutex
	leases  map[*Lease]*kaState
	running bool          // the loop is running; it stops when no lease is left
	wake    chan struct{} // capacity 1: something changed, re-plan
	// single is set once a server refused the batch form (it is older than batch
	// keepalives): every lease is then renewed with its own request.
	single bool
}

// kaState is a lease's place in the keepalive schedule.
type kaState struct {
	due      time.Time // when it must be renewed next
	inflight bool      // a request renewing it is on its way
}

// add schedules l's first keepalive at due and starts the loop when needed.
func (k *keepaliver) add(c *Client, l *Lease, due time.Time) {
	k.mu.Lock()
	if k.leases == nil {
		k.leases = map[*Lease]*kaState{}
		k.wake = make(chan struct{}, 1)
	}
	k.leases[l] = &kaState{due: due}
	if !k.running {
		k.running = true
		go k.loop(c)
	}
	k.mu.Unlock()
	k.poke()
}

// remove takes l out of the schedule (it was lost or closed).
func (k *keepaliver) remove(l *Lease) {
	k.mu.Lock()
	delete(k.leases, l)
	k.mu.Unlock()
	k.poke()
}

// reschedule sets l's next keepalive at due once a request for it has settled.
func (k *keepaliver) reschedule(l *Lease, due time.Time) {
	k.mu.Lock()
	if st, ok := k.leases[l]; ok {
		st.due, st.inflight = due, false
	}
	k.mu.Unlock()
	k.poke()
}

func (k *keepaliver) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// loop sends the batches. It exits when the client has no lease left; add starts it again.
func (k *keepaliver) loop(c *Client) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		k.mu.Lock()
		if len(k.leases) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		now := time.Now()
		var earliest time.Time
		for _, st := range k.leases {
			if !st.inflight && (earliest.IsZero() || st.due.Before(earliest)) {
				earliest = st.due
			}
		}
		var batch []*Lease
		if !earliest.IsZero() && !earliest.After(now) {
			for l, st := range k.leases {
				if !st.inflight && !st.due.After(now.Add(l.cfg.interval/2)) {
					st.inflight = true
					batch = append(batch, l)
				}
			}
		}
		single := k.single
		k.mu.Unlock()

		if len(batch) > 0 {
			for len(batch) > 0 {
				n := min(len(batch), api.MaxKeepAliveBatch)
				if single {
					for _, l := range batch[:n] {
						go k.sendOne(c, l)
					}
				} else {
					go k.sendBatch(c, batch[:n])
				}
				batch = batch[n:]
			}
			continue
		}
		wait := time.Hour // everything is in flight: a settled request pokes
		if !earliest.IsZero() {
			wait = time.Until(earliest)
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-k.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
	}
}

// timing returns a lease's attempt timeout and retry pause: attempts are short, so that a
// hung node costs a fraction of the TTL, and failures are retried within the interval.
func (l *Lease) timing() (attemptTimeout, retry time.Duration) {
	attemptTimeout = min(l.c.timeout, max(l.cfg.interval/2, 250*time.Millisecond))
	retry = max(min(l.cfg.interval/4, DefaultMaxBackoff), keepAliveRetryMin)
	return attemptTimeout, retry
}

// sendBatch renews batch with one request, retried across endpoints until it is answered
// or the latest SafeUntil among them passes (a lease whose own SafeUntil passed first is
// lost by its watchdog, and a late answer does not revive it).
func (k *keepaliver) sendBatch(c *Client, batch []*Lease) {
	var deadline time.Time
	attemptTimeout, retry := c.timeout, DefaultMaxBackoff
	ids := make([]string, 0, len(batch))
	byID := make(map[string][]*Lease, len(batch))
	for _, l := range batch {
		if l.lost() != nil {
			k.remove(l)
			continue
		}
		if su := l.SafeUntil(); su.After(deadline) {
			deadline = su
		}
		at, r := l.timing()
		attemptTimeout, retry = min(attemptTimeout, at), min(retry, r)
		if byID[l.id] == nil {
			ids = append(ids, l.id)
		}
		byID[l.id] = append(byID[l.id], l)
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	out, res, err := c.keepAliveMany(ctx, ids, attemptTimeout, retry)
	cancel()
	if err != nil && (errors.Is(err, &api.Error{Code: api.CodeInvalidJSON}) || errors.Is(err, &api.Error{Code: api.CodeNotFound})) {
		// A server older than batch keepalives: it refused lease_ids as an unknown field
		// (or lacks the route). Nothing was applied; renew one lease per request from now on.
		c.log.Debug("the server does not take batch keepalives; renewing each lease on its own")
		k.mu.Lock()
		k.single = true
		k.mu.Unlock()
		for _, ls := range byID {
			for _, l := range ls {
				go k.sendOne(c, l)
			}
		}
		return
	}
	if err != nil {
		for _, ls := range byID {
			for _, l := range ls {
				k.settle(l, res.sent, err)
			}
		}
		return
	}
	for _, r := range out.Leases {
		for _, l := range byID[r.LeaseID] {
			k.settle(l, res.sent, nil)
		}
		delete(byID, r.LeaseID)
	}
	for _, id := range out.NotFound {
		for _, l := range byID[id] {
			k.settle(l, res.sent, wrap(ErrLeaseNotFound, nil, "lease %s not found", redactID(id)))
		}
		delete(byID, id)
	}
	for _, ls := range byID { // the answer left them out: treat as a failed attempt
		for _, l := range ls {
			k.settle(l, res.sent, wrap(ErrServer, nil, "batch keepalive: the answer does not mention lease %s", redactID(l.id)))
		}
	}
}

// sendOne renews l with a request of its own (servers older than batch keepalives).
func (k *keepaliver) sendOne(c *Client, l *Lease) {
	attemptTimeout, retry := l.timing()
	kctx, cancel := context.WithDeadline(l.ctx, l.SafeUntil())
	_, res, err := c.keepAlive(kctx, l.id, attemptTimeout, retry)
	cancel()
	k.settle(l, res.sent, err)
}

// settle applies the outcome of a keepalive sent at sent to l and schedules its next one.
func (k *keepaliver) settle(l *Lease, sent time.Time, err error) {
	switch {
	case err == nil:
		if !l.observe(sent) {
			k.remove(l)
			return
		}
		k.reschedule(l, sent.Add(jittered(l.cfg.interval)))
	case errors.Is(err, ErrLeaseNotFound):
		l.c.log.Warn("lease lost: the cluster no longer knows it", "lease", redactID(l.id))
		l.lose(wrap(ErrLeaseLost, err, "lease %s: the cluster no longer knows it (it expired or was revoked)", redactID(l.id)))
		k.remove(l)
	case l.lost() != nil:
		k.remove(l)
	default:
		_, retry := l.timing()
		l.c.log.Debug("keepalive failed; retrying", "lease", redactID(l.id), "error", err)
		k.reschedule(l, time.Now().Add(jittered(retry)))
	}
}
