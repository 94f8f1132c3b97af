package transport

import (
	"errors"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

// The routes of the coordination primitives (issue 14): /v1/semaphores/{name...} and
// /v1/elections/{name...}, each with PUT (acquire, campaign), DELETE (release, resign)
// and GET (status, a blocking query with wait_index). Shared locks are the mode field of
// the lock routes (handlers.go). ACL rules apply to the name whatever the primitive: read
// for GET, lock for PUT and DELETE.

// leaseFields are the lease fields every acquiring request shares with PUT /v1/locks.
type leaseFields struct {
	LeaseID, RequestID, Owner string
	TTLMs, WaitMs             int64
}

// decodeLease validates leaseFields: a lease ID, or none and a TTL (default) with an
// optional request ID, as decodeAcquire does for locks.
func decodeLease(f leaseFields) (lease fsm.LeaseID, newLease bool, ttl int64, wait time.Duration, err error) {
	if e := api.ValidateWait(f.WaitMs); e != nil {
		return lease, false, 0, 0, e
	}
	if e := api.ValidateOwner(f.Owner); e != nil {
		return lease, false, 0, 0, e
	}
	if e := api.ValidateRequestID(f.RequestID); e != nil {
		return lease, false, 0, 0, e
	}
	wait = time.Duration(f.WaitMs) * time.Millisecond
	if f.LeaseID != "" {
		if f.TTLMs != 0 {
			return lease, false, 0, 0, api.Errorf(api.CodeInvalidArgument, "ttl_ms applies only when a lease is created; omit it when passing lease_id")
		}
		if f.RequestID != "" {
			return lease, false, 0, 0, api.Errorf(api.CodeInvalidArgument, "request_id applies only when a lease is created; omit it when passing lease_id (a request with a lease is already idempotent)")
		}
		lease, err = parseLeaseID(f.LeaseID)
		return lease, false, 0, wait, err
	}
	ttl, e := api.NormalizeTTL(f.TTLMs)
	if e != nil {
		return lease, false, 0, 0, e
	}
	return lease, true, ttl, wait, nil
}

// decodeSemaphoreAcquire turns a PUT /v1/semaphores/{name} request into the node's.
func decodeSemaphoreAcquire(name string, body []byte) (cluster.SemaphoreRequest, error) {
	var req api.SemaphoreAcquireRequest
	if e := api.ValidateNameOf("semaphore", name); e != nil {
		return cluster.SemaphoreRequest{}, e
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return cluster.SemaphoreRequest{}, err
	}
	if e := api.ValidateSemaphoreLimit(req.Limit); e != nil {
		return cluster.SemaphoreRequest{}, e
	}
	lease, newLease, ttl, wait, err := decodeLease(leaseFields{req.LeaseID, req.RequestID, req.Owner, req.TTLMs, req.WaitMs})
	if err != nil {
		return cluster.SemaphoreRequest{}, err
	}
	return cluster.SemaphoreRequest{Name: name, Limit: uint64(req.Limit), Lease: lease, NewLease: newLease, RequestID: req.RequestID, TTL: time.Duration(ttl) * time.Millisecond, Wait: wait, Owner: req.Owner}, nil
}

// decodeCampaign turns a PUT /v1/elections/{name} request into the node's.
func decodeCampaign(name string, body []byte) (cluster.CampaignRequest, error) {
	var req api.CampaignRequest
	if e := api.ValidateNameOf("election", name); e != nil {
		return cluster.CampaignRequest{}, e
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return cluster.CampaignRequest{}, err
	}
	if e := api.ValidateElectionValue(req.Value); e != nil {
		return cluster.CampaignRequest{}, e
	}
	lease, newLease, ttl, wait, err := decodeLease(leaseFields{req.LeaseID, req.RequestID, req.Owner, req.TTLMs, req.WaitMs})
	if err != nil {
		return cluster.CampaignRequest{}, err
	}
	if req.Token != 0 && (newLease || wait > 0) {
		return cluster.CampaignRequest{}, api.Errorf(api.CodeInvalidArgument, "token makes the request a proclaim by the leader: it needs lease_id and takes no wait_ms")
	}
	return cluster.CampaignRequest{Name: name, Value: req.Value, Token: req.Token, Lease: lease, NewLease: newLease, RequestID: req.RequestID, TTL: time.Duration(ttl) * time.Millisecond, Wait: wait, Owner: req.Owner}, nil
}

// holdRequest takes a held-request slot for a request that may wait; release frees it.
// It writes the 429 itself and returns ok false when the node holds too many.
func (s *Server) holdRequest(w http.ResponseWriter, wait time.Duration) (release func(), ok bool) {
	if wait <= 0 {
		return func() {}, true
	}
	release, ok = s.held.acquire()
	if !ok {
		writeError(w, tooManyHeld(s.cfg.MaxHeldRequests))
	}
	return release, ok
}

func (s *Server) handleSemaphoreAcquire(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req cluster.SemaphoreRequest
	if err == nil {
		req, err = decodeSemaphoreAcquire(r.PathValue("name"), body)
	}
	if err == nil {
		err = s.authorize(r, accessLock, req.Name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	release, ok := s.holdRequest(w, req.Wait)
	if !ok {
		return
	}
	defer release()
	g, err := s.node.SemaphoreAcquire(r.Context(), req)
	if s.forwarded(w, r, body, err, req.Wait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SemaphoreGrant{Name: g.Name, Token: g.Token, LeaseID: g.Lease.String(), TTLMs: g.TTL.Milliseconds(), Owner: g.Owner, Limit: int64(g.Limit)})
}

// releaseRoute serves DELETE on a primitive of kind: {"lease_id","token"} gives the grant
// back through do.
func (s *Server) releaseRoute(w http.ResponseWriter, r *http.Request, kind string, do func(name string, id fsm.LeaseID, token uint64) error) {
	name := r.PathValue("name")
	body, err := readBody(w, r)
	var id fsm.LeaseID
	var token uint64
	if err == nil {
		if e := api.ValidateNameOf(kind, name); e != nil {
			err = e
		}
	}
	if err == nil {
		id, token, err = decodeRelease(name, body)
	}
	if err == nil {
		err = s.authorize(r, accessLock, name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	err = do(name, id, token)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ReleaseResult{Name: name, Released: true})
}

func (s *Server) handleSemaphoreRelease(w http.ResponseWriter, r *http.Request) {
	s.releaseRoute(w, r, "semaphore", func(name string, id fsm.LeaseID, token uint64) error {
		return s.node.SemaphoreRelease(r.Context(), name, id, token)
	})
}

func (s *Server) handleResign(w http.ResponseWriter, r *http.Request) {
	s.releaseRoute(w, r, "election", func(name string, id fsm.LeaseID, token uint64) error {
		return s.node.Resign(r.Context(), name, id, token)
	})
}

// statusQuery reads the query of a status route: stale, wait_index and wait_ms.
func statusQuery(r *http.Request, kind, name string) (stale bool, waitIndex uint64, wait time.Duration, err error) {
	q := r.URL.Query()
	err = knownQuery(q, "stale", "wait_index", "wait_ms")
	if err == nil {
		if e := api.ValidateNameOf(kind, name); e != nil {
			err = e
		}
	}
	if err == nil {
		stale, err = queryBool(q, "stale")
	}
	if err == nil {
		waitIndex, err = queryUint(q, "wait_index", 1<<63-1)
	}
	var waitMs uint64
	if err == nil {
		waitMs, err = queryUint(q, "wait_ms", api.MaxWaitMs)
	}
	return stale, waitIndex, time.Duration(waitMs) * time.Millisecond, err
}

func holders(hs []fsm.Holding) []api.Holder {
	out := make([]api.Holder, 0, len(hs))
	for _, h := range hs {
		out = append(out, api.Holder{Owner: h.Owner, Token: h.Token})
	}
	return out
}

func (s *Server) handleSemaphoreStatus(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	stale, waitIndex, wait, err := statusQuery(r, "semaphore", name)
	if err == nil {
		err = s.authorize(r, accessRead, name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	release, ok := s.holdRequest(w, wait)
	if !ok {
		return
	}
	defer release()
	v, err := s.node.SemaphoreStatus(r.Context(), name, stale, waitIndex, wait)
	if s.forwarded(w, r, nil, err, wait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SemaphoreStatus{Name: v.Name, Limit: int64(v.Limit), Permits: holders(v.Permits), Waiters: len(v.Waiters), ModifyIndex: v.ModifyIndex})
}

func (s *Server) handleCampaign(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req cluster.CampaignRequest
	if err == nil {
		req, err = decodeCampaign(r.PathValue("name"), body)
	}
	if err == nil {
		err = s.authorize(r, accessLock, req.Name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	release, ok := s.holdRequest(w, req.Wait)
	if !ok {
		return
	}
	defer release()
	g, err := s.node.Campaign(r.Context(), req)
	if s.forwarded(w, r, body, err, req.Wait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ElectionGrant{Name: g.Name, Token: g.Token, LeaseID: g.Lease.String(), TTLMs: g.TTL.Milliseconds(), Owner: g.Owner, Value: g.Value, ModifyIndex: g.ModifyIndex})
}

func (s *Server) handleElectionStatus(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	stale, waitIndex, wait, err := statusQuery(r, "election", name)
	if err == nil {
		err = s.authorize(r, accessRead, name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	release, ok := s.holdRequest(w, wait)
	if !ok {
		return
	}
	defer release()
	v, err := s.node.ElectionStatus(r.Context(), name, stale, waitIndex, wait)
	if s.forwarded(w, r, nil, err, wait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ElectionStatus{Name: v.Name, Elected: v.Elected, Owner: v.Owner, Value: v.Value, Token: v.Token, ModifyIndex: v.ModifyIndex, Candidates: len(v.Candidates)})
}

// primErrorFor maps the primitives' cluster errors to API errors; errorFor calls it.
func primErrorFor(err error) *api.Error {
	var lc *cluster.LimitConflictError
	switch {
	case errors.Is(err, cluster.ErrModeConflict):
		return api.Errorf(api.CodeModeConflict, "this lease holds or waits for the lock in the other mode; there is no upgrade or downgrade: release it (or leave the queue) first")
	case errors.Is(err, cluster.ErrSemaphoreFull):
		return api.Errorf(api.CodeSemaphoreFull, "every permit of the semaphore is held; retry later or pass wait_ms to queue for one")
	case errors.As(err, &lc):
		return api.Errorf(api.CodeLimitConflict, "the semaphore is in use with limit %d; ask with that limit, or wait until it is not in use to set another", lc.Limit)
	case errors.Is(err, cluster.ErrElectionHeld):
		return api.Errorf(api.CodeElectionHeld, "another lease leads the election; retry later or pass wait_ms to queue as a candidate")
	case errors.Is(err, cluster.ErrPrimsInactive):
		return api.Errorf(api.CodeNoLeader, "shared locks, semaphores and elections need protocol version 2, which the cluster activates once every node runs this release (a rolling upgrade is in progress); nothing was applied, retry after upgrading every node")
	}
	return nil
}
