package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/raftlock/raftlock/api"
)

// AddNode adds a voter to the cluster (POST /v1/cluster/nodes), or re-registers a
// member's HTTP address. Re-pointing an existing member ID at another Raft address fails
// with ErrConflict unless req.Replace is set. Adding the same member twice is harmless,
// so the call is retried like any other. With ACLs on it needs admin on the empty prefix.
func (c *Client) AddNode(ctx context.Context, req api.AddNodeRequest) (api.Node, error) {
	op := fmt.Sprintf("add node %q", req.ID)
	if req.ID == "" || req.RaftAddr == "" {
		return api.Node{}, wrap(ErrInvalid, nil, "%s: the node ID and its Raft address are required", op)
	}
	return call[api.Node](ctx, c, &request{op: op, method: http.MethodPost, path: "/v1/cluster/nodes", body: func() any { return req }})
}

// RemoveNode removes member id from the cluster (DELETE /v1/cluster/nodes/{id}). A
// remove that had to be retried and then finds no such member reports success: the
// earlier attempt removed it. With ACLs on it needs admin on the empty prefix.
func (c *Client) RemoveNode(ctx context.Context, id string) error {
	op := fmt.Sprintf("remove node %q", id)
	if id == "" {
		return wrap(ErrInvalid, nil, "%s: the node ID is required", op)
	}
	return c.remove(ctx, op, "/v1/cluster/nodes/"+url.PathEscape(id))
}

// TransferLeader hands leadership to voter to ("" lets raft pick the most up-to-date one)
// before maintenance on the current leader (POST /v1/cluster/transfer-leader), and returns
// the new leader's ID. With ACLs on it needs admin on the empty prefix.
func (c *Client) TransferLeader(ctx context.Context, to string) (string, error) {
	out, err := call[transferAnswer](ctx, c, &request{op: "transfer leadership", method: http.MethodPost, path: "/v1/cluster/transfer-leader",
		body: func() any { return api.TransferLeaderRequest{To: to} }})
	return out.LeaderID, err
}

// transferAnswer is the answer of POST /v1/cluster/transfer-leader.
type transferAnswer struct {
	LeaderID string `json:"leader_id"`
}

// Cluster returns the cluster's members, leader, term and indexes as seen by the node
// that answers.
func (c *Client) Cluster(ctx context.Context) (api.Cluster, error) {
	return call[api.Cluster](ctx, c, &request{op: "cluster", method: http.MethodGet, path: "/v1/cluster"})
}
