package transport

import (
	"context"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// lockRoutes serves /v1/locks: acquire (exclusive or shared), release, status (a blocking
// query with wait_index) and list.
type lockRoutes struct {
	locks LockService
	auth  *guard
}

// decodeAcquire turns a PUT /v1/locks/{name} request into the node's request.
func decodeAcquire(name string, body []byte) (cluster.AcquireRequest, error) {
	var req api.AcquireRequest
	if e := api.ValidateName(name); e != nil {
		return cluster.AcquireRequest{}, e
	}
	if err := decodeStrict(body, &req, true); err != nil {
		return cluster.AcquireRequest{}, err
	}
	fields := holderFields{req.LeaseID, req.RequestID, req.Owner, req.TTLMs, req.WaitMs}
	if err := fields.validate(); err != nil {
		return cluster.AcquireRequest{}, err
	}
	mode, e := api.NormalizeMode(req.Mode)
	if e != nil {
		return cluster.AcquireRequest{}, e
	}
	if e := api.ValidateHoldOptions(req.MaxHoldMs, req.LockDelayMs, mode == api.ModeShared); e != nil {
		return cluster.AcquireRequest{}, e
	}
	h, err := fields.holder("an acquire")
	return cluster.AcquireRequest{Name: name, Holder: h, Shared: mode == api.ModeShared, MaxHold: fromMs(req.MaxHoldMs), LockDelay: fromMs(req.LockDelayMs)}, err
}

func (h lockRoutes) acquire(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := decodeNamed(w, r, decodeAcquire)
	if err != nil {
		return call{}, err
	}
	c := acquireCall(body, req.Name, req.Holder, func(ctx context.Context) (any, error) {
		g, err := h.locks.Acquire(ctx, req)
		mode := api.ModeExclusive
		if g.Shared {
			mode = api.ModeShared
		}
		return api.Grant{Name: g.Name, Token: g.Token, LeaseID: g.Lease.String(), TTLMs: ms(g.TTL), Owner: g.Owner, Mode: mode}, err
	})
	c.traced = true
	return c, nil
}

// acquireCall is the call of a request that takes name for holder h (a lock, a lockset,
// a permit, a leadership): it needs lock rights, acts on the lease h names or on the one
// its request_id stands for, may wait h.Wait, and is safe to retry unless it draws a new
// lease that no request_id finds again.
func acquireCall(body []byte, name string, h cluster.Holder, do func(context.Context) (any, error)) call {
	return call{body: body, need: accessLock, name: name, leases: usedLeases(h.NewLease, h.Lease), requestID: implicitRequest(h.NewLease, h.RequestID), wait: h.Wait, idempotent: !h.NewLease || h.RequestID != "", do: do}
}

// usedLeases returns the existing lease an acquiring call names, for call.leases: its
// lease_id, or none for a new lease (implicitRequest covers the lease of a request_id).
func usedLeases(newLease bool, lease cluster.LeaseID) []cluster.LeaseID {
	if !newLease {
		return []cluster.LeaseID{lease}
	}
	return nil
}

// implicitRequest returns the request_id whose implicit lease an acquiring call acts on,
// for call.requestID, or "" when it names its lease or draws a new one.
func implicitRequest(newLease bool, requestID string) string {
	if newLease {
		return requestID
	}
	return ""
}

// decodeRelease validates a DELETE /v1/locks/{name} request.
func decodeRelease(name string, body []byte) (cluster.LeaseID, uint64, error) {
	var req api.ReleaseRequest
	if e := api.ValidateName(name); e != nil {
		return cluster.LeaseID{}, 0, e
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return cluster.LeaseID{}, 0, err
	}
	if req.Token == 0 {
		return cluster.LeaseID{}, 0, api.Errorf(api.CodeInvalidArgument, "token is required: pass the token of the grant being released")
	}
	id, err := parseLeaseID(req.LeaseID)
	return id, req.Token, err
}

func (h lockRoutes) release(w http.ResponseWriter, r *http.Request) (call, error) {
	c, err := releaseCall(w, r, "lock", h.locks.Release)
	c.traced = true
	return c, err
}

// releaseCall decodes DELETE on a primitive of kind: {"lease_id","token"} gives the
// grant back through release.
func releaseCall(w http.ResponseWriter, r *http.Request, kind string, release func(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error) (call, error) {
	name := r.PathValue("name")
	body, err := readBody(w, r)
	if err == nil {
		if e := api.ValidateNameOf(kind, name); e != nil {
			err = e
		}
	}
	var id cluster.LeaseID
	var token uint64
	if err == nil {
		id, token, err = decodeRelease(name, body)
	}
	if err != nil {
		return call{}, err
	}
	return call{body: body, need: accessLock, name: name, leases: []cluster.LeaseID{id}, idempotent: true, do: func(ctx context.Context) (any, error) {
		return api.ReleaseResult{Name: name, Released: true}, release(ctx, name, id, token)
	}}, nil
}

// statusQuery reads the query of a status route: stale, wait_index, wait_ms and queue.
func statusQuery(r *http.Request, kind, name string) (cluster.Query, error) {
	q := r.URL.Query()
	err := knownQuery(q, "stale", "wait_index", "wait_ms", "queue")
	if err == nil {
		if e := api.ValidateNameOf(kind, name); e != nil {
			err = e
		}
	}
	var out cluster.Query
	if err == nil {
		out.Stale, err = queryBool(q, "stale")
	}
	if err == nil {
		out.WaitIndex, err = queryUint(q, "wait_index", 1<<63-1)
	}
	var waitMs, queue uint64
	if err == nil {
		waitMs, err = queryUint(q, "wait_ms", api.MaxWaitMs)
	}
	if err == nil {
		queue, err = queryUint(q, "queue", api.MaxQueueList)
	}
	out.Wait = time.Duration(waitMs) * time.Millisecond
	out.Queue = int(queue)
	return out, err
}

// statusCall decodes GET on a primitive of kind and reads it through status, answering
// what answer makes of the view.
func statusCall[V any](r *http.Request, kind string, status func(ctx context.Context, name string, q cluster.Query) (V, error), answer func(V) any) (call, error) {
	name := r.PathValue("name")
	q, err := statusQuery(r, kind, name)
	if err != nil {
		return call{}, err
	}
	return call{need: accessRead, name: name, wait: q.Wait, do: func(ctx context.Context) (any, error) {
		v, err := status(ctx, name, q)
		if err != nil {
			return nil, err
		}
		return answer(v), nil
	}}, nil
}

func (h lockRoutes) status(w http.ResponseWriter, r *http.Request) (call, error) {
	return statusCall(r, "lock", h.locks.Status, func(v cluster.LockView) any { return lockStatus(v, h.auth.reader(r)) })
}

// lockStatus is a lock's view as the API answers it to a caller that may read the names
// canRead accepts: a lockset group names only those (lockSetsFor).
func lockStatus(v cluster.LockView, canRead func(string) bool) api.LockStatus {
	out := api.LockStatus{Name: v.Name, Held: v.Held, Token: v.Token, Owner: v.Owner, Holders: holders(v.Holders), Waiters: len(v.Waiters), ModifyIndex: v.ModifyIndex}
	lockSetsFor(out.Holders, v.Holders, v.Sets, canRead)
	switch {
	case v.Shared:
		out.Mode = api.ModeShared
	case v.Held:
		out.Mode = api.ModeExclusive
	}
	out.HolderCount = len(out.Holders)
	out.LockDelayRemainingMs, out.MaxHoldRemainingMs = v.DelayRemaining, v.MaxHoldRemaining
	out.Queue = waiters(v.Queue, true)
	return out
}

// lockSetsFor gives each holder out[i] (of hs[i]) whose grant was made by a lockset the
// names of its group (protocol version 7) that canRead accepts, and counts the others: a
// lockset may span prefixes, and its other names are not the caller's to see.
func lockSetsFor(out []api.Holder, hs []cluster.Holding, sets []cluster.LockSetView, canRead func(string) bool) {
	for _, sv := range sets {
		for i, h := range hs {
			if h.Lease != sv.Lease || h.Token != sv.Token {
				continue
			}
			out[i].LockSet = []string{}
			for _, n := range sv.Names {
				if canRead(n) {
					out[i].LockSet = append(out[i].LockSet, n)
				} else {
					out[i].LockSetHidden++
				}
			}
		}
	}
}

func (h lockRoutes) list(w http.ResponseWriter, r *http.Request) (call, error) {
	q := r.URL.Query()
	err := knownQuery(q, "stale", "prefix", "after", "limit")
	var stale bool
	var limit uint64
	if err == nil {
		stale, err = queryBool(q, "stale")
	}
	if err == nil {
		limit, err = queryUint(q, "limit", api.MaxListLimit)
	}
	if err != nil {
		return call{}, err
	}
	if limit == 0 {
		limit = api.DefaultListLimit
	}
	return call{need: accessRead, name: anyName, do: func(ctx context.Context) (any, error) {
		// With ACLs, a page holds only locks the token may read, and its cursor names
		// one of them (readablePage). The first chunk's read is linearizable unless
		// stale; the chunks after it read the state that read reached, or a newer one.
		first, canRead := true, h.auth.reader(r)
		views, truncated, err := readablePage(int(limit), q.Get("after"),
			func(v cluster.LockView) bool { return canRead(v.Name) },
			func(v cluster.LockView) string { return v.Name },
			func(after string, n int) ([]cluster.LockView, bool, error) {
				st := stale || !first
				first = false
				return h.locks.List(ctx, q.Get("prefix"), after, n, st)
			})
		if err != nil {
			return nil, err
		}
		out := api.LockList{Locks: make([]api.LockStatus, 0, len(views)), Truncated: truncated}
		for _, v := range views {
			out.Locks = append(out.Locks, lockStatus(v, canRead))
		}
		if truncated {
			out.Next = views[len(views)-1].Name
		}
		return out, nil
	}}, nil
}
