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
	var out api.Node
	_, err := c.do(ctx, &request{op: op, method: http.MethodPost, path: "/v1/cluster/nodes", body: func() any { return req }}, &out)
	return out, err
}

// RemoveNode removes member id from the cluster (DELETE /v1/cluster/nodes/{id}). A
// remove that had to be retried and then finds no such member reports success: the
// earlier attempt removed it. With ACLs on it needs admin on the empty prefix.
func (c *Client) RemoveNode(ctx context.Context, id string) error {
	op := fmt.Sprintf("remove node %q", id)
	if id == "" {
		return wrap(ErrInvalid, nil, "%s: the node ID is required", op)
	}
	res, err := c.do(ctx, &request{op: op, method: http.MethodDelete, path: "/v1/cluster/nodes/" + url.PathEscape(id)}, nil)
	return goneAfterRetry(res, err)
}

// TransferLeader hands leadership to voter to ("" lets raft pick the most up-to-date one)
// before maintenance on the current leader (POST /v1/cluster/transfer-leader), and returns
// the new leader's ID. With ACLs on it needs admin on the empty prefix.
func (c *Client) TransferLeader(ctx context.Context, to string) (string, error) {
	var out struct {
		LeaderID string `json:"leader_id"`
	}
	_, err := c.do(ctx, &request{op: "transfer leadership", method: http.MethodPost, path: "/v1/cluster/transfer-leader",
		body: func() any { return api.TransferLeaderRequest{To: to} }}, &out)
	return out.LeaderID, err
}
