package transport

import (
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
)

// handleKeepAliveBody serves POST /v1/leases/keepalive: {"lease_id"} renews one lease and
// answers a Lease (as POST /v1/leases/{id}/keepalive does); {"lease_ids": [...]} renews up
// to api.MaxKeepAliveBatch leases in one Renew entry and answers a KeepAliveBatch. Lease
// IDs stay in the body, out of URLs and logs; errors name a bad ID by its position only.
func (s *Server) handleKeepAliveBody(w http.ResponseWriter, r *http.Request) {
	body, err := readBodyLimit(w, r, api.MaxKeepAliveBodyBytes)
	var req api.KeepAliveRequest
	if err == nil {
		err = decodeStrict(body, &req, false)
	}
	if err == nil && req.LeaseIDs == nil {
		// The single form keeps its old size limit and its old answer.
		if len(body) > api.MaxBodyBytes {
			err = api.Errorf(api.CodeBodyTooLarge, "request body exceeds %d bytes", api.MaxBodyBytes)
		} else {
			var id fsm.LeaseID
			if id, err = parseLeaseID(req.LeaseID); err == nil {
				s.keepAlive(w, r, body, id)
				return
			}
		}
	}
	var ids []fsm.LeaseID
	if err == nil {
		ids, err = parseLeaseIDs(req)
	}
	if err == nil {
		err = s.authorize(r, accessLock, anyName)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	ttls, found, err := s.node.KeepAliveMany(r.Context(), ids)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	out := api.KeepAliveBatch{Leases: make([]api.Lease, 0, len(ids)), NotFound: []string{}}
	for i, id := range ids {
		if found[i] {
			out.Leases = append(out.Leases, api.Lease{LeaseID: id.String(), TTLMs: ttls[i]})
		} else {
			out.NotFound = append(out.NotFound, id.String())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// parseLeaseIDs validates the lease_ids of a batch keepalive and returns them without
// duplicates, in request order.
func parseLeaseIDs(req api.KeepAliveRequest) ([]fsm.LeaseID, error) {
	switch {
	case req.LeaseID != "":
		return nil, api.Errorf(api.CodeInvalidArgument, "give lease_id or lease_ids, not both")
	case len(req.LeaseIDs) == 0:
		return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids is empty; list 1 to %d lease IDs", api.MaxKeepAliveBatch)
	case len(req.LeaseIDs) > api.MaxKeepAliveBatch:
		return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids lists %d leases; at most %d per request", len(req.LeaseIDs), api.MaxKeepAliveBatch)
	}
	ids := make([]fsm.LeaseID, 0, len(req.LeaseIDs))
	seen := make(map[fsm.LeaseID]struct{}, len(req.LeaseIDs))
	for i, s := range req.LeaseIDs {
		if api.ValidateLeaseID(s) != nil {
			return nil, api.Errorf(api.CodeInvalidArgument, "lease_ids[%d] must be %d lowercase hex characters", i, api.LeaseIDLen)
		}
		id, err := fsm.ParseLeaseID(s)
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
