package transport

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// lockSetRoutes serves /v1/locksets (protocol version 3): several locks granted, or
// released, in one commit. A lockset needs lock rights on every name (call.more).
type lockSetRoutes struct {
	sets LockSetService
}

// decodeLockSet turns a POST /v1/locksets body into the node's request.
func decodeLockSet(body []byte) (cluster.LockSetRequest, error) {
	var req api.LockSetRequest
	if err := decodeStrict(body, &req, false); err != nil {
		return cluster.LockSetRequest{}, err
	}
	if len(req.Names) == 0 || len(req.Names) > api.MaxLockSetNames {
		return cluster.LockSetRequest{}, api.Errorf(api.CodeInvalidArgument, "names has %d locks; a lockset names 1 to %d", len(req.Names), api.MaxLockSetNames)
	}
	for _, n := range req.Names {
		if e := api.ValidateName(n); e != nil {
			return cluster.LockSetRequest{}, e
		}
	}
	// The rest is an acquire's body: validate it as one, on the first name.
	acq, err := decodeAcquire(req.Names[0], mustJSON(api.AcquireRequest{LeaseID: req.LeaseID, TTLMs: req.TTLMs, WaitMs: req.WaitMs, Owner: req.Owner,
		RequestID: req.RequestID, Mode: req.Mode, MaxHoldMs: req.MaxHoldMs, LockDelayMs: req.LockDelayMs}))
	if err != nil {
		return cluster.LockSetRequest{}, err
	}
	return cluster.LockSetRequest{Names: req.Names, Holder: acq.Holder, Shared: acq.Shared, MaxHold: acq.MaxHold, LockDelay: acq.LockDelay}, nil
}

func (h lockSetRoutes) acquire(w http.ResponseWriter, r *http.Request) (call, error) {
	body, err := readBody(w, r)
	if err != nil {
		return call{}, err
	}
	req, err := decodeLockSet(body)
	if err != nil {
		return call{}, err
	}
	// serve authorizes the caller on every name, binds the lease to its creator and
	// refuses another token's lease, as for a single acquire.
	c := acquireCall(body, req.Names[0], req.Holder, func(ctx context.Context) (any, error) {
		g, err := h.sets.AcquireSet(ctx, req)
		if err != nil {
			return nil, err
		}
		out := api.LockSetGrant{LeaseID: g.Lease.String(), TTLMs: ms(g.TTL), Owner: g.Owner, Mode: api.ModeExclusive, Locks: make([]api.LockToken, 0, len(g.Locks))}
		if g.Shared {
			out.Mode = api.ModeShared
		}
		for _, lt := range g.Locks {
			out.Locks = append(out.Locks, api.LockToken{Name: lt.Name, Token: lt.Token})
		}
		return out, nil
	})
	c.more, c.traced = req.Names[1:], true
	return c, nil
}

func (h lockSetRoutes) release(w http.ResponseWriter, r *http.Request) (call, error) {
	body, err := readBody(w, r)
	if err != nil {
		return call{}, err
	}
	var req api.LockSetRelease
	if err := decodeStrict(body, &req, false); err != nil {
		return call{}, err
	}
	if len(req.Locks) == 0 || len(req.Locks) > api.MaxLockSetNames {
		return call{}, api.Errorf(api.CodeInvalidArgument, "locks has %d entries; give 1 to %d {\"name\", \"token\"}", len(req.Locks), api.MaxLockSetNames)
	}
	locks := make([]cluster.LockToken, 0, len(req.Locks))
	names := make([]string, 0, len(req.Locks))
	for _, lt := range req.Locks {
		if e := api.ValidateName(lt.Name); e != nil {
			return call{}, e
		}
		if lt.Token == 0 {
			return call{}, api.Errorf(api.CodeInvalidArgument, "lock %q has no token: pass the token of each grant being released", lt.Name)
		}
		locks = append(locks, cluster.LockToken{Name: lt.Name, Token: lt.Token})
		names = append(names, lt.Name)
	}
	id, err := parseLeaseID(req.LeaseID)
	if err != nil {
		return call{}, err
	}
	return call{body: body, need: accessLock, name: names[0], more: names[1:], leases: []cluster.LeaseID{id}, idempotent: true, do: func(ctx context.Context) (any, error) {
		if err := h.sets.ReleaseSet(ctx, id, locks); err != nil {
			return nil, err
		}
		return api.LockSetReleased{Released: names}, nil
	}}, nil
}

// mustJSON encodes v, a request type that always encodes.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a struct of strings and integers
	}
	return b
}
