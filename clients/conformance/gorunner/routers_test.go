package gorunner_test

import (
	"context"
	"fmt"
	"time"

	"github.com/raftlock/raftlock/client"
)

// holdOpts are the options of an acquire-like step (FORMAT.md).
func holdOpts(st map[string]any) []client.MutexOption {
	return []client.MutexOption{client.WithLeaseTTL(msOf(st, "ttl_ms", 10000)), client.WithOwner(str(st, "owner")),
		client.WithMaxHold(msOf(st, "max_hold_ms", 0)), client.WithLockDelay(msOf(st, "lock_delay_ms", 0))}
}

// leaseID is l's ID, "" for none.
func leaseID(l *client.Lease) string {
	if l == nil {
		return ""
	}
	return l.ID()
}

func (r *run) holdNamed(label string) (*hold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.holds[label]
	if !ok {
		return nil, failure{fmt.Errorf("no hold %q", label)}
	}
	return h, nil
}

// tookLease records l, a lease step's lease made on c's cluster, as the step's hold.
func (r *run) tookLease(st map[string]any, c *client.Client, l *client.Lease, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	r.setHold(st, &hold{c: c, lost: l.Done, safe: l.SafeUntil, leaseID: l.ID, release: l.Close, lease: l})
	return nil, nil
}

// givenLease returns the lease of the step's lease field, nil when it has none.
func (r *run) givenLease(st map[string]any) (*client.Lease, error) {
	l := str(st, "lease")
	if l == "" {
		return nil, nil
	}
	h, err := r.holdNamed(l)
	if err != nil || h.lease == nil {
		return nil, failure{fmt.Errorf("no lease %q", l)}
	}
	return h.lease, nil
}

// routerOp runs a step on a client that is a Router (FORMAT.md, "routes").
func (r *run) routerOp(st map[string]any, rt *client.Router) (map[string]any, error) {
	name := str(st, "name")
	ttl := msOf(st, "ttl_ms", 10000)
	ctx, cancel := ctxFor(30 * time.Second)
	defer cancel()
	switch op := str(st, "op"); op {
	case "lock":
		wait := msOf(st, "wait_ms", 0)
		if wait > 0 {
			cancel()
			ctx, cancel = ctxFor(wait)
			defer cancel()
		}
		l, err := r.givenLease(st)
		if err != nil {
			return nil, err
		}
		var m *client.Mutex
		if l != nil {
			m, err = rt.NewMutexWith(l, name, holdOpts(st)...)
		} else {
			m, err = rt.NewMutex(name, holdOpts(st)...)
		}
		if err != nil {
			return nil, err
		}
		if wait > 0 {
			err = m.Lock(ctx)
		} else {
			err = m.TryLock(ctx)
		}
		c, _ := rt.ClientFor(name)
		return r.took(st, c, name, m, m.Unlock, nil, err)
	case "acquire":
		g, err := rt.Acquire(ctx, name, client.AcquireOptions{TTL: ttl, Owner: str(st, "owner")})
		if err != nil {
			return nil, err
		}
		c, _ := rt.ClientFor(name)
		never := make(chan struct{})
		r.setHold(st, &hold{c: c, name: name, token: g.Token, lost: func() <-chan struct{} { return never },
			safe: func() time.Time { return time.Time{} }, leaseID: func() string { return g.LeaseID },
			release: func(ctx context.Context) error { return rt.Release(ctx, name, g.LeaseID, g.Token) }})
		return map[string]any{"token": g.Token}, nil
	case "lease":
		l, err := rt.NewLease(ctx, name, ttl)
		c, _ := rt.ClientFor(name)
		return r.tookLease(st, c, l, err)
	case "release_token":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		t, err := r.token(st)
		if err != nil {
			return nil, err
		}
		return nil, rt.Release(ctx, name, h.leaseID(), t)
	case "status":
		s, err := rt.Status(ctx, name, client.StatusOptions{})
		if err != nil {
			return nil, err
		}
		return statusResult(s), nil
	case "release":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		return nil, h.release(ctx)
	}
	return nil, failure{fmt.Errorf("op %q is not one a router client runs (FORMAT.md)", str(st, "op"))}
}
