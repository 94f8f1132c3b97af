package transport

import (
	"context"
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// The coordination primitives beside locks: /v1/semaphores/{name...} and
// /v1/elections/{name...}, each with PUT (acquire, campaign), DELETE (release, resign)
// and GET (status, a blocking query with wait_index). Shared locks are the mode field of
// the lock routes (locks.go). ACL rules apply to the name whatever the primitive: read
// for GET, lock for PUT and DELETE.

// semaphoreRoutes serves /v1/semaphores.
type semaphoreRoutes struct{ semaphores SemaphoreService }

// electionRoutes serves /v1/elections.
type electionRoutes struct{ elections ElectionService }

// decodePrimitive decodes a PUT on name, a primitive of kind, into its API request R. own
// checks what is R's own and gives the holder's fields, which are checked after it.
func decodePrimitive[R any](kind, name string, body []byte, own func(R) (*api.Error, holderFields)) (R, cluster.Holder, error) {
	var req R
	if e := api.ValidateNameOf(kind, name); e != nil {
		return req, cluster.Holder{}, e
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return req, cluster.Holder{}, err
	}
	e, fields := own(req)
	if e != nil {
		return req, cluster.Holder{}, e
	}
	if err := fields.validate(); err != nil {
		return req, cluster.Holder{}, err
	}
	h, err := fields.holder("a request")
	return req, h, err
}

// decodeSemaphoreAcquire turns a PUT /v1/semaphores/{name} request into the node's.
func decodeSemaphoreAcquire(name string, body []byte) (cluster.SemaphoreRequest, error) {
	req, h, err := decodePrimitive("semaphore", name, body, func(req api.SemaphoreAcquireRequest) (*api.Error, holderFields) {
		return api.ValidateSemaphoreLimit(req.Limit), holderFields{req.LeaseID, req.RequestID, req.Owner, req.TTLMs, req.WaitMs}
	})
	if err != nil {
		return cluster.SemaphoreRequest{}, err
	}
	if e := api.ValidateHoldOptions(req.MaxHoldMs, 0, false); e != nil {
		return cluster.SemaphoreRequest{}, e
	}
	return cluster.SemaphoreRequest{Name: name, Limit: uint64(req.Limit), Holder: h, MaxHold: fromMs(req.MaxHoldMs)}, nil
}

// decodeCampaign turns a PUT /v1/elections/{name} request into the node's.
func decodeCampaign(name string, body []byte) (cluster.CampaignRequest, error) {
	req, h, err := decodePrimitive("election", name, body, func(req api.CampaignRequest) (*api.Error, holderFields) {
		return api.ValidateElectionValue(req.Value), holderFields{req.LeaseID, req.RequestID, req.Owner, req.TTLMs, req.WaitMs}
	})
	if err != nil {
		return cluster.CampaignRequest{}, err
	}
	if req.Token != 0 && (h.NewLease || h.Wait > 0) {
		return cluster.CampaignRequest{}, api.Errorf(api.CodeInvalidArgument, "token makes the request a proclaim by the leader: it needs lease_id and takes no wait_ms")
	}
	return cluster.CampaignRequest{Name: name, Value: req.Value, Token: req.Token, Holder: h}, nil
}

func (h semaphoreRoutes) acquire(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := decodeNamed(w, r, decodeSemaphoreAcquire)
	if err != nil {
		return call{}, err
	}
	return acquireCall(body, req.Name, req.Holder, func(ctx context.Context) (any, error) {
		g, err := h.semaphores.Acquire(ctx, req)
		return api.SemaphoreGrant{Name: g.Name, Token: g.Token, LeaseID: g.Lease.String(), TTLMs: ms(g.TTL), Owner: g.Owner, Limit: int64(g.Limit)}, err
	}), nil
}

func (h semaphoreRoutes) release(w http.ResponseWriter, r *http.Request) (call, error) {
	return releaseCall(w, r, "semaphore", h.semaphores.Release)
}

func (h semaphoreRoutes) status(w http.ResponseWriter, r *http.Request) (call, error) {
	return statusCall(r, "semaphore", h.semaphores.Status, func(v cluster.SemaphoreView) any {
		return semaphoreStatus(v)
	})
}

func (h electionRoutes) campaign(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := decodeNamed(w, r, decodeCampaign)
	if err != nil {
		return call{}, err
	}
	return acquireCall(body, req.Name, req.Holder, func(ctx context.Context) (any, error) {
		g, err := h.elections.Campaign(ctx, req)
		return api.ElectionGrant{Name: g.Name, Token: g.Token, LeaseID: g.Lease.String(), TTLMs: ms(g.TTL), Owner: g.Owner, Value: g.Value, ModifyIndex: g.ModifyIndex}, err
	}), nil
}

func (h electionRoutes) resign(w http.ResponseWriter, r *http.Request) (call, error) {
	return releaseCall(w, r, "election", h.elections.Resign)
}

func (h electionRoutes) status(w http.ResponseWriter, r *http.Request) (call, error) {
	return statusCall(r, "election", h.elections.Status, func(v cluster.ElectionView) any {
		return electionStatus(v)
	})
}

// semaphoreStatus is a semaphore's view as the API answers it.
func semaphoreStatus(v cluster.SemaphoreView) api.SemaphoreStatus {
	return api.SemaphoreStatus{Name: v.Name, Limit: int64(v.Limit), Permits: holders(v.Permits), Waiters: len(v.Waiters), ModifyIndex: v.ModifyIndex, Queue: waiters(v.Queue, false)}
}

// electionStatus is an election's view as the API answers it.
func electionStatus(v cluster.ElectionView) api.ElectionStatus {
	out := api.ElectionStatus{Name: v.Name, Elected: v.Elected, Owner: v.Owner, Value: v.Value, Token: v.Token, ModifyIndex: v.ModifyIndex, Candidates: len(v.Candidates), Queue: waiters(v.Queue, false)}
	if v.Elected {
		out.LeaseFingerprint = cluster.LeaseFingerprint(v.Leader).String()
	}
	return out
}

// holders turns the holders of a lock or the permits of a semaphore into the API's, each
// lease by its fingerprint.
func holders(hs []cluster.Holding) []api.Holder {
	out := make([]api.Holder, 0, len(hs))
	for _, h := range hs {
		out = append(out, api.Holder{Owner: h.Owner, Token: h.Token, LeaseFingerprint: cluster.LeaseFingerprint(h.Lease).String()})
	}
	return out
}

// waiters turns a queue into the API's, each lease by its fingerprint; modes are shown
// for a lock's queue only. nil stays nil (omitted: the read did not ask for it).
func waiters(q []cluster.Waiting, lock bool) []api.Waiter {
	if q == nil {
		return nil
	}
	out := make([]api.Waiter, 0, len(q))
	for _, w := range q {
		aw := api.Waiter{Owner: w.Owner, LeaseFingerprint: cluster.LeaseFingerprint(w.Lease).String(), DeadlineMs: w.Deadline}
		if w.Since >= 0 {
			since := w.Since
			aw.SinceMs = &since
		}
		if lock {
			aw.Mode, aw.LockSet = modeName(w.Shared), w.LockSet
		}
		out = append(out, aw)
	}
	return out
}

// modeName is a request's mode as the API spells it.
func modeName(shared bool) string {
	if shared {
		return api.ModeShared
	}
	return api.ModeExclusive
}
