package transport

import (
	"context"
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// memberRoutes serves /v1/cluster: the cluster's status, membership changes, protocol
// versions and leadership transfer.
type memberRoutes struct {
	members Membership
	status  StatusReporter
	routing Routing
	auth    *guard
	tls     bool // Config.TLS is set: node certificates prove who a node is
}

// cluster answers GET /v1/cluster. A member (proven by its node certificate) may ask
// without a token: the overview asks every member for it.
func (h memberRoutes) cluster(w http.ResponseWriter, r *http.Request) (call, error) {
	c := call{do: func(context.Context) (any, error) {
		st := h.status.Status()
		serving := h.routing.Serving()
		out := api.Cluster{LeaderID: st.LeaderID, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, Nodes: []api.Node{}, Ready: serving != "", Serving: serving,
			ProtocolVersion: st.ProtocolVersion,
			Limits:          limitsJSON(st.Limits)}
		for _, m := range st.Members {
			out.Nodes = append(out.Nodes, api.Node{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Leader: m.Leader})
		}
		return out, nil
	}}
	if callerNode(r, h.members) == "" {
		c.need, c.name = accessRead, anyName
	}
	return c, nil
}

func (h memberRoutes) add(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.AddNodeRequest](w, r, false)
	if err == nil && (req.ID == "" || req.RaftAddr == "" || req.HTTPAddr == "") {
		err = api.Errorf(api.CodeInvalidArgument, "id, raft_addr and http_addr are all required")
	}
	if err == nil {
		err = h.authorizeAdd(r, req)
	}
	if err != nil {
		return call{}, err
	}
	return call{body: body, do: func(ctx context.Context) (any, error) {
		if req.Registration && !h.members.Has(req.ID) {
			// Checked where the request is served: only the leader's membership decides.
			if !h.routing.IsLeader() {
				return nil, cluster.ErrNotLeader
			}
			return nil, cluster.ErrNotMember
		}
		err := h.members.Add(ctx, cluster.NodeInfo{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr}, req.Replace)
		return api.Node{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true}, err
	}}, nil
}

// authorizeAdd decides who may send a membership request. Adding a member or moving
// one needs the admin right (when ACLs are on). Re-registering a member's HTTP address at
// its current Raft address is what nodes do for themselves: with TLS on, only the node
// whose certificate is on the connection and names that ID, speaking for itself
// (selfNode), or an admin may do it, so nobody, another member included, can point the
// followers' forwards, and the lease IDs in them, at another address.
func (h memberRoutes) authorizeAdd(r *http.Request, req api.AddNodeRequest) error {
	cur, member := h.members.RaftAddr(req.ID)
	selfRegistration := member && cur == req.RaftAddr
	if selfRegistration && selfNode(r, h.members) == req.ID {
		return nil
	}
	if err := h.auth.authorize(r, accessAdmin, ""); err != nil {
		return err
	}
	if selfRegistration && h.tls && !h.auth.on {
		return api.Errorf(api.CodePermissionDenied, "with TLS on, a node registers only its own HTTP address, proven by the node certificate on its own connection (this connection's certificate names member %q)", connNode(r, h.members))
	}
	return nil
}

func (h memberRoutes) remove(w http.ResponseWriter, r *http.Request) (call, error) {
	id := r.PathValue("id")
	return call{need: accessAdmin, do: func(ctx context.Context) (any, error) {
		return map[string]string{"removed": id}, h.members.Remove(ctx, id)
	}}, nil
}

// version records the protocol version a member speaks (registerLoop calls it on the
// leader for its own node).
func (h memberRoutes) version(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.NodeVersionRequest](w, r, false)
	if err == nil && req.MaxVersion == 0 {
		err = api.Errorf(api.CodeInvalidArgument, "max_version must be at least 1")
	}
	if err != nil {
		return call{}, err
	}
	id := r.PathValue("id")
	c := call{body: body, do: func(ctx context.Context) (any, error) {
		return map[string]any{"id": id, "max_version": req.MaxVersion}, h.members.RegisterVersion(ctx, id, req.MaxVersion)
	}}
	// With TLS, only the node itself (its certificate) or an admin may say what a member
	// speaks. Without TLS nothing can prove who a node is, and ACLs themselves need every
	// member registered at version 2 first, so the claim is taken from anyone: the worst a
	// forged one does is halt an old member (loudly) once the version is raised, which is
	// why SECURITY.md says to run ACLs with TLS.
	//
	// With TLS on and ACLs off there is no admin to be: anyone with a client certificate
	// would pass accessAdmin, so the claim is refused unless it is the node's own. Own
	// means selfNode: the certificate on the connection names id, so a member cannot
	// claim for another by relaying.
	if h.tls && selfNode(r, h.members) != id {
		if !h.auth.on {
			return call{}, api.Errorf(api.CodePermissionDenied, "with TLS on and ACLs off, only node %q itself (its node certificate) may register the protocol version it speaks", id)
		}
		c.need = accessAdmin
	}
	return c, nil
}

// transferLeader hands leadership to another voter (body {"to": "n2"}, or {} for any),
// for maintenance: the node then restarts without costing an election timeout.
func (h memberRoutes) transferLeader(w http.ResponseWriter, r *http.Request) (call, error) {
	body, req, err := readJSON[api.TransferLeaderRequest](w, r, true)
	if err != nil {
		return call{}, err
	}
	return call{body: body, need: accessAdmin, do: func(ctx context.Context) (any, error) {
		to, err := h.members.TransferLeadership(ctx, req.To)
		return map[string]string{"leader_id": to}, err
	}}, nil
}

// healthz answers GET /healthz: the process serves.
func (h memberRoutes) healthz(w http.ResponseWriter, r *http.Request) (call, error) {
	return call{do: func(context.Context) (any, error) {
		return map[string]any{"status": "ok", "node": h.routing.ID()}, nil
	}}, nil
}

// readyz answers 200 only when a write sent to this node now would be served (it is a
// ready leader) or forwarded (it knows the leader's HTTP address and has caught up).
func (h memberRoutes) readyz(w http.ResponseWriter, r *http.Request) (call, error) {
	return call{do: func(context.Context) (any, error) {
		serving := h.routing.Serving()
		if serving == "" {
			if err := h.routing.StorageErr(); err != nil {
				return nil, err
			}
			return nil, errNotReady
		}
		return map[string]any{"status": "ready", "node": h.routing.ID(), "serving": serving}, nil
	}}, nil
}
