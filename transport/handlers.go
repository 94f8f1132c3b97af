package transport

import (
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

func (s *Server) handleCreateLease(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req api.CreateLeaseRequest
	if err == nil {
		err = decodeStrict(body, &req, true)
	}
	var ttl int64
	if err == nil {
		var ae *api.Error
		if ttl, ae = api.NormalizeTTL(req.TTLMs); ae != nil {
			err = ae
		}
	}
	if err == nil {
		err = s.authorize(r, accessLock, anyName)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := s.node.CreateLease(r.Context(), ttl)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.Lease{LeaseID: id.String(), TTLMs: ttl})
}

func (s *Server) handleKeepAlive(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var id fsm.LeaseID
	if err == nil {
		err = decodeStrict(body, &struct{}{}, true)
	}
	if err == nil {
		id, err = parseLeaseID(r.PathValue("id"))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.keepAlive(w, r, body, id)
}

// leaseFromBody reads the lease ID of the body routes (POST /v1/leases/keepalive,
// /lookup, /revoke), which keep the secret out of URLs and so out of access logs.
func leaseFromBody(w http.ResponseWriter, r *http.Request) ([]byte, fsm.LeaseID, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, fsm.LeaseID{}, err
	}
	var req api.LeaseRequest
	if err := decodeStrict(body, &req, false); err != nil {
		return nil, fsm.LeaseID{}, err
	}
	id, err := parseLeaseID(req.LeaseID)
	return body, id, err
}

func (s *Server) keepAlive(w http.ResponseWriter, r *http.Request, body []byte, id fsm.LeaseID) {
	if err := s.authorize(r, accessLock, anyName); err != nil {
		writeError(w, err)
		return
	}
	ttl, err := s.node.KeepAlive(r.Context(), id)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Lease{LeaseID: id.String(), TTLMs: ttl})
}

func (s *Server) handleGetLease(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	err := knownQuery(q, "stale")
	var stale bool
	var id fsm.LeaseID
	if err == nil {
		stale, err = queryBool(q, "stale")
	}
	if err == nil {
		id, err = parseLeaseID(r.PathValue("id"))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.lookupLease(w, r, nil, id, stale)
}

func (s *Server) handleLookupLeaseBody(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	err := knownQuery(q, "stale")
	var stale bool
	if err == nil {
		stale, err = queryBool(q, "stale")
	}
	var body []byte
	var id fsm.LeaseID
	if err == nil {
		body, id, err = leaseFromBody(w, r)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.lookupLease(w, r, body, id, stale)
}

func (s *Server) lookupLease(w http.ResponseWriter, r *http.Request, body []byte, id fsm.LeaseID, stale bool) {
	if err := s.authorize(r, accessRead, anyName); err != nil {
		writeError(w, err)
		return
	}
	v, err := s.node.Lease(r.Context(), id, stale)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	locks := v.Locks
	if locks == nil {
		locks = []string{}
	}
	writeJSON(w, http.StatusOK, struct {
		api.Lease
		Locks []string `json:"locks"`
	}{api.Lease{LeaseID: id.String(), TTLMs: v.TTL}, locks})
}

func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	id, err := parseLeaseID(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	s.revoke(w, r, nil, id)
}

func (s *Server) handleRevokeBody(w http.ResponseWriter, r *http.Request) {
	body, id, err := leaseFromBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	s.revoke(w, r, body, id)
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request, body []byte, id fsm.LeaseID) {
	if err := s.authorize(r, accessLock, anyName); err != nil {
		writeError(w, err)
		return
	}
	released, err := s.node.Revoke(r.Context(), id)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if released == nil {
		released = []string{}
	}
	writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: id.String(), Released: released})
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
	if e := api.ValidateWait(req.WaitMs); e != nil {
		return cluster.AcquireRequest{}, e
	}
	if e := api.ValidateOwner(req.Owner); e != nil {
		return cluster.AcquireRequest{}, e
	}
	if e := api.ValidateRequestID(req.RequestID); e != nil {
		return cluster.AcquireRequest{}, e
	}
	mode, e := api.NormalizeMode(req.Mode)
	if e != nil {
		return cluster.AcquireRequest{}, e
	}
	out := cluster.AcquireRequest{Name: name, Wait: time.Duration(req.WaitMs) * time.Millisecond, Owner: req.Owner, Shared: mode == api.ModeShared}
	if req.LeaseID != "" {
		if req.TTLMs != 0 {
			return out, api.Errorf(api.CodeInvalidArgument, "ttl_ms applies only when a lease is created; omit it when passing lease_id")
		}
		if req.RequestID != "" {
			return out, api.Errorf(api.CodeInvalidArgument, "request_id applies only when a lease is created; omit it when passing lease_id (an acquire with a lease is already idempotent)")
		}
		id, err := parseLeaseID(req.LeaseID)
		if err != nil {
			return out, err
		}
		out.Lease = id
		return out, nil
	}
	ttl, e := api.NormalizeTTL(req.TTLMs)
	if e != nil {
		return out, e
	}
	out.NewLease, out.TTL, out.RequestID = true, time.Duration(ttl)*time.Millisecond, req.RequestID
	return out, nil
}

func (s *Server) handleAcquire(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req cluster.AcquireRequest
	if err == nil {
		req, err = decodeAcquire(r.PathValue("name"), body)
	}
	if err == nil {
		err = s.authorize(r, accessLock, req.Name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if s.cfg.Budget != nil {
		markDecoded(r)
	}
	if req.Wait > 0 {
		release, ok := s.held.acquire()
		if !ok {
			writeError(w, tooManyHeld(s.cfg.MaxHeldRequests))
			return
		}
		defer release()
	}
	g, err := s.node.Acquire(r.Context(), req)
	if s.forwarded(w, r, body, err, req.Wait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	mode := api.ModeExclusive
	if g.Shared {
		mode = api.ModeShared
	}
	writeJSON(w, http.StatusOK, api.Grant{Name: g.Name, Token: g.Token, LeaseID: g.Lease.String(), TTLMs: g.TTL.Milliseconds(), Owner: g.Owner, Mode: mode})
}

// decodeRelease validates a DELETE /v1/locks/{name} request.
func decodeRelease(name string, body []byte) (fsm.LeaseID, uint64, error) {
	var req api.ReleaseRequest
	if e := api.ValidateName(name); e != nil {
		return fsm.LeaseID{}, 0, e
	}
	if err := decodeStrict(body, &req, false); err != nil {
		return fsm.LeaseID{}, 0, err
	}
	if req.Token == 0 {
		return fsm.LeaseID{}, 0, api.Errorf(api.CodeInvalidArgument, "token is required: pass the token of the grant being released")
	}
	id, err := parseLeaseID(req.LeaseID)
	return id, req.Token, err
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, err := readBody(w, r)
	var id fsm.LeaseID
	var token uint64
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
	if s.cfg.Budget != nil {
		markDecoded(r)
	}
	err = s.node.Release(r.Context(), name, id, token)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ReleaseResult{Name: name, Released: true})
}

func lockStatus(v fsm.LockView) api.LockStatus {
	out := api.LockStatus{Name: v.Name, Held: v.Held, Token: v.Token, Owner: v.Owner, Holders: holders(v.Holders), Waiters: len(v.Waiters), ModifyIndex: v.ModifyIndex}
	switch {
	case v.Shared:
		out.Mode = api.ModeShared
	case v.Held:
		out.Mode = api.ModeExclusive
	}
	out.HolderCount = len(out.Holders)
	return out
}

func (s *Server) handleLockStatus(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	err := knownQuery(q, "stale", "wait_index", "wait_ms")
	var stale bool
	var waitIndex, waitMs uint64
	if err == nil {
		if e := api.ValidateName(name); e != nil {
			err = e
		}
	}
	if err == nil {
		stale, err = queryBool(q, "stale")
	}
	if err == nil {
		waitIndex, err = queryUint(q, "wait_index", 1<<63-1)
	}
	if err == nil {
		waitMs, err = queryUint(q, "wait_ms", api.MaxWaitMs)
	}
	if err == nil {
		err = s.authorize(r, accessRead, name)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	wait := time.Duration(waitMs) * time.Millisecond
	if wait > 0 {
		release, ok := s.held.acquire()
		if !ok {
			writeError(w, tooManyHeld(s.cfg.MaxHeldRequests))
			return
		}
		defer release()
	}
	v, err := s.node.LockStatus(r.Context(), name, stale, waitIndex, wait)
	if s.forwarded(w, r, nil, err, wait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, lockStatus(v))
}

func (s *Server) handleListLocks(w http.ResponseWriter, r *http.Request) {
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
	if err == nil {
		err = s.authorize(r, accessRead, anyName)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if limit == 0 {
		limit = api.DefaultListLimit
	}
	views, truncated, err := s.node.Locks(r.Context(), q.Get("prefix"), q.Get("after"), int(limit), stale)
	if s.forwarded(w, r, nil, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// With ACLs, a page leaves out the locks the token may not read; the cursor still
	// moves past them, so paging goes on correctly.
	out := api.LockList{Locks: make([]api.LockStatus, 0, len(views)), Truncated: truncated}
	for _, v := range views {
		if s.canRead(r, v.Name) {
			out.Locks = append(out.Locks, lockStatus(v))
		}
	}
	if truncated && len(views) > 0 {
		out.Next = views[len(views)-1].Name
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleCluster(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessRead, anyName); err != nil && s.callerNode(r) == "" {
		writeError(w, err)
		return
	}
	st := s.node.Status()
	serving := s.node.Serving()
	out := api.Cluster{LeaderID: st.LeaderID, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, Nodes: []api.Node{}, Ready: serving != "", Serving: serving,
		ProtocolVersion: st.ProtocolVersion,
		Limits:          api.Limits{MaxLeases: st.Limits.MaxLeases, MaxLocksPerLease: st.Limits.MaxLocksPerLease, MaxWaitersPerLock: st.Limits.MaxWaitersPerLock}}
	for _, m := range st.Members {
		out.Nodes = append(out.Nodes, api.Node{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Leader: m.Leader})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleAddNode(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req api.AddNodeRequest
	if err == nil {
		err = decodeStrict(body, &req, false)
	}
	if err == nil && (req.ID == "" || req.RaftAddr == "" || req.HTTPAddr == "") {
		err = api.Errorf(api.CodeInvalidArgument, "id, raft_addr and http_addr are all required")
	}
	if err == nil {
		err = s.authorizeMember(r, req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	err = s.node.AddVoter(r.Context(), fsm.NodeInfo{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr}, req.Replace)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Node{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
}

// authorizeMember decides who may send a membership request. Adding a member or moving
// one needs the admin right (when ACLs are on). Re-registering a member's HTTP address at
// its current Raft address is what nodes do for themselves: with TLS on, only the node
// whose certificate names that ID (or an admin) may do it, so nobody can point the
// followers' forwards, and the lease IDs in them, at another address.
func (s *Server) authorizeMember(r *http.Request, req api.AddNodeRequest) error {
	cur, member := s.node.MemberRaftAddr(req.ID)
	selfRegistration := member && cur == req.RaftAddr
	if selfRegistration && s.callerNode(r) == req.ID {
		return nil
	}
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		return err
	}
	if selfRegistration && s.cfg.TLS != nil && !s.aclOn() {
		return api.Errorf(api.CodePermissionDenied, "with TLS on, a node registers only its own HTTP address, proven by its node certificate (this connection presents %q)", s.callerNode(r))
	}
	return nil
}

func (s *Server) handleRemoveNode(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	err := s.node.RemoveServer(r.Context(), id)
	if s.forwarded(w, r, nil, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"removed": id})
}

// handleNodeVersion records the protocol version a member speaks (registerLoop calls it on
// the leader for its own node).
func (s *Server) handleNodeVersion(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req api.NodeVersionRequest
	if err == nil {
		err = decodeStrict(body, &req, false)
	}
	if err == nil && req.MaxVersion == 0 {
		err = api.Errorf(api.CodeInvalidArgument, "max_version must be at least 1")
	}
	id := r.PathValue("id")
	// With TLS, only the node itself (its certificate) or an admin may say what a member
	// speaks. Without TLS nothing can prove who a node is, and ACLs themselves need every
	// member registered at version 2 first, so the claim is taken from anyone: the worst a
	// forged one does is halt an old member (loudly) once the version is raised, which is
	// why SECURITY.md says to run ACLs with TLS.
	if err == nil && s.cfg.TLS != nil && s.callerNode(r) != id {
		err = s.authorize(r, accessAdmin, "")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	err = s.node.RegisterVersion(r.Context(), id, req.MaxVersion)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "max_version": req.MaxVersion})
}

// handleTransferLeader hands leadership to another voter (body {"to": "n2"}, or {} for
// any), for maintenance: the node then restarts without costing an election timeout.
func (s *Server) handleTransferLeader(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	var req api.TransferLeaderRequest
	if err == nil {
		err = decodeStrict(body, &req, true)
	}
	if err == nil {
		err = s.authorize(r, accessAdmin, "")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	to, err := s.node.TransferLeadership(r.Context(), req.To)
	if s.forwarded(w, r, body, err, 0) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"leader_id": to})
}
