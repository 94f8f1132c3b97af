package transport

import (
	"context"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// leaseRoutes serves /v1/leases: create, keep alive, look up and revoke. The body forms
// (POST /v1/leases/keepalive, /lookup, /revoke) keep lease IDs out of URLs and so out of
// access logs.
type leaseRoutes struct {
	leases LeaseService
	auth   *guard
	gate   leaseGate
}

func (h leaseRoutes) create(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.CreateLeaseRequest](w, r, true)
	if err != nil {
		return call{}, err
	}
	ttl, ae := api.NormalizeTTL(req.TTLMs)
	if ae != nil {
		return call{}, ae
	}
	return call{body: body, need: accessLock, name: anyName, do: func(ctx context.Context) (any, error) {
		id, err := h.leases.Create(ctx, time.Duration(ttl)*time.Millisecond)
		return created{api.Lease{LeaseID: id.String(), TTLMs: ttl}}, err
	}}, nil
}

func (h leaseRoutes) keepAlive(w http.ResponseWriter, r *http.Request) (call, error) {
	body, _, err := readJSON[struct{}](w, r, true)
	var id cluster.LeaseID
	if err == nil {
		id, err = parseLeaseID(r.PathValue("id"))
	}
	if err != nil {
		return call{}, err
	}
	return h.keepAliveCall(body, id), nil
}

func (h leaseRoutes) keepAliveCall(body []byte, id cluster.LeaseID) call {
	return call{body: body, need: accessLock, name: anyName, leases: []cluster.LeaseID{id}, idempotent: true, do: func(ctx context.Context) (any, error) {
		ttl, err := h.leases.KeepAlive(ctx, id)
		return api.Lease{LeaseID: id.String(), TTLMs: ttl.Milliseconds()}, err
	}}
}

// keepAliveBody serves POST /v1/leases/keepalive: {"lease_id"} renews one lease and
// answers a Lease (as POST /v1/leases/{id}/keepalive does); {"lease_ids": [...]} renews up
// to api.MaxKeepAliveBatch leases in one Renew entry and answers a KeepAliveBatch. Errors
// name a bad ID by its position only.
func (h leaseRoutes) keepAliveBody(w http.ResponseWriter, r *http.Request) (call, error) {
	body, err := readBodyLimit(w, r, api.MaxKeepAliveBodyBytes)
	var req api.KeepAliveRequest
	if err == nil {
		err = decodeStrict(body, &req, false)
	}
	if err != nil {
		return call{}, err
	}
	if req.LeaseIDs == nil {
		// The single form is held to api.MaxBodyBytes and answers a Lease.
		if len(body) > api.MaxBodyBytes {
			return call{}, api.Errorf(api.CodeBodyTooLarge, "request body exceeds %d bytes", api.MaxBodyBytes)
		}
		id, err := parseLeaseID(req.LeaseID)
		if err != nil {
			return call{}, err
		}
		return h.keepAliveCall(body, id), nil
	}
	ids, err := parseLeaseIDs(req)
	if err != nil {
		return call{}, err
	}
	return call{body: body, need: accessLock, name: anyName, idempotent: true, do: func(ctx context.Context) (any, error) {
		out := api.KeepAliveBatch{Leases: make([]api.Lease, 0, len(ids)), NotFound: []string{}}
		renew, gone, err := h.renewable(ctx, r, ids)
		if err != nil {
			return nil, err
		}
		for _, id := range gone {
			out.NotFound = append(out.NotFound, id.String())
		}
		if len(renew) == 0 {
			return out, nil // nothing to propose
		}
		ttls, found, err := h.leases.KeepAliveMany(ctx, renew)
		if err != nil {
			return nil, err
		}
		for i, id := range renew {
			if found[i] {
				out.Leases = append(out.Leases, api.Lease{LeaseID: id.String(), TTLMs: ttls[i].Milliseconds()})
			} else {
				out.NotFound = append(out.NotFound, id.String())
			}
		}
		return out, nil
	}}, nil
}

// renewable splits a batch keepalive's leases into those to renew and those answered as
// not found without being proposed: another identity's and missing ones, judged by the
// lease gate as a single keepalive's lease is (leasegate.go), so on the leader, after its
// read barrier when any is not the caller's own; a follower passes the batch on to the
// leader. So a batch of 10,000 made-up or foreign IDs from any lock token proposes
// nothing instead of a Raft entry of about 160 KB, and answers as fast either way.
func (h leaseRoutes) renewable(ctx context.Context, r *http.Request, ids []cluster.LeaseID) (renew, gone []cluster.LeaseID, err error) {
	id, _ := h.auth.authorized(r, accessLock, anyName)
	uses := make([]leaseUse, len(ids))
	for i, l := range ids {
		uses[i] = leaseUse{id: l}
	}
	ok, err := h.gate.check(ctx, id, uses, false)
	if err != nil {
		return nil, nil, err
	}
	for i, l := range ids {
		if ok[i] {
			renew = append(renew, l)
		} else {
			gone = append(gone, l)
		}
	}
	return renew, gone, nil
}

func (h leaseRoutes) get(w http.ResponseWriter, r *http.Request) (call, error) {
	stale, err := staleQuery(r)
	var id cluster.LeaseID
	if err == nil {
		id, err = parseLeaseID(r.PathValue("id"))
	}
	if err != nil {
		return call{}, err
	}
	return h.lookupCall(r, nil, id, stale), nil
}

func (h leaseRoutes) lookupBody(w http.ResponseWriter, r *http.Request) (call, error) {
	stale, err := staleQuery(r)
	if err != nil {
		return call{}, err
	}
	body, id, err := leaseFromBody(w, r)
	if err != nil {
		return call{}, err
	}
	return h.lookupCall(r, body, id, stale), nil
}

func (h leaseRoutes) lookupCall(r *http.Request, body []byte, id cluster.LeaseID, stale bool) call {
	return call{body: body, need: accessRead, name: anyName, leases: []cluster.LeaseID{id}, stale: stale, do: func(ctx context.Context) (any, error) {
		v, err := h.leases.Lookup(ctx, id, stale)
		if err != nil {
			return nil, err
		}
		locks := h.readable(r, v.Locks)
		return struct {
			api.Lease
			Locks []string `json:"locks"`
		}{api.Lease{LeaseID: id.String(), TTLMs: v.TTL.Milliseconds()}, locks}, nil
	}}
}

func (h leaseRoutes) revoke(w http.ResponseWriter, r *http.Request) (call, error) {
	id, err := parseLeaseID(r.PathValue("id"))
	if err != nil {
		return call{}, err
	}
	return h.revokeCall(r, nil, id), nil
}

func (h leaseRoutes) revokeBody(w http.ResponseWriter, r *http.Request) (call, error) {
	body, id, err := leaseFromBody(w, r)
	if err != nil {
		return call{}, err
	}
	return h.revokeCall(r, body, id), nil
}

func (h leaseRoutes) revokeCall(r *http.Request, body []byte, id cluster.LeaseID) call {
	return call{body: body, need: accessLock, name: anyName, leases: []cluster.LeaseID{id}, idempotent: true, do: func(ctx context.Context) (any, error) {
		released, err := h.leases.Revoke(ctx, id)
		return api.RevokeResult{LeaseID: id.String(), Released: h.readable(r, released)}, err
	}}
}

// readable returns the names among names that r's token may read (never nil): a lease's
// lookup and revoke show no lock name outside the caller's prefixes (a lease used by an
// admin, or made before leases were bound, may hold locks anywhere).
func (h leaseRoutes) readable(r *http.Request, names []string) []string {
	out := make([]string, 0, len(names))
	canRead := h.auth.reader(r)
	for _, n := range names {
		if canRead(n) {
			out = append(out, n)
		}
	}
	return out
}

// leaseFromBody reads the lease ID of the body routes.
func leaseFromBody(w http.ResponseWriter, r *http.Request) ([]byte, cluster.LeaseID, error) {
	body, req, err := readJSON[api.LeaseRequest](w, r, false)
	if err != nil {
		return nil, cluster.LeaseID{}, err
	}
	id, err := parseLeaseID(req.LeaseID)
	return body, id, err
}

// parseLeaseIDs validates the lease_ids of a batch keepalive and returns them without
// duplicates, in request order.
func parseLeaseIDs(req api.KeepAliveRequest) ([]cluster.LeaseID, error) {
	switch {
	case req.LeaseID != "":
		return nil, api.Errorf(api.CodeInvalidArgument, "give lease_id or lease_ids, not both")
	case len(req.LeaseIDs) == 0:
		return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids is empty; list 1 to %d lease IDs", api.MaxKeepAliveBatch)
	case len(req.LeaseIDs) > api.MaxKeepAliveBatch:
		return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids lists %d leases; at most %d per request", len(req.LeaseIDs), api.MaxKeepAliveBatch)
	}
	ids := make([]cluster.LeaseID, 0, len(req.LeaseIDs))
	seen := make(map[cluster.LeaseID]struct{}, len(req.LeaseIDs))
	for i, s := range req.LeaseIDs {
		if api.ValidateLeaseID(s) != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids[%d] must be %d lowercase hex characters", i, api.LeaseIDLen)
		}
		id, err := cluster.ParseLeaseID(s)
		if err != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids[%d] must be %d lowercase hex characters", i, api.LeaseIDLen)
		}
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		ids = append(ids, id)
	}
	return ids, nil
}
