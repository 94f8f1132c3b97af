package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/raftlock/raftlock/api"
)

// CreateLease creates a lease with the given TTL (zero means the server's default,
// api.DefaultTTLMs). Nothing keeps it alive: use NewLease for a lease with keepalives.
// A create that is retried after an unanswered attempt may leave an unused lease behind,
// which expires after its TTL.
func (c *Client) CreateLease(ctx context.Context, ttl time.Duration) (api.Lease, error) {
	l, _, err := c.createLease(ctx, ttl)
	return l, err
}

func (c *Client) createLease(ctx context.Context, ttl time.Duration) (api.Lease, result, error) {
	var out api.Lease
	res, err := c.do(ctx, &request{
		op: "create lease", method: http.MethodPost, path: "/v1/leases",
		body: func() any { return api.CreateLeaseRequest{TTLMs: ms(ttl)} },
	}, &out)
	return out, res, err
}

// KeepAlive renews a lease once: its deadline becomes TTL after the server received the
// request. It fails with ErrLeaseNotFound when the lease has expired or been revoked.
func (c *Client) KeepAlive(ctx context.Context, leaseID string) (api.Lease, error) {
	l, _, err := c.keepAlive(ctx, leaseID, 0, 0)
	return l, err
}

func (c *Client) keepAlive(ctx context.Context, leaseID string, attemptTimeout, maxBackoff time.Duration) (api.Lease, result, error) {
	var out api.Lease
	res, err := c.leaseCall(ctx, &request{
		op: "keepalive", method: http.MethodPost, path: "/v1/leases/keepalive",
		attemptTimeout: attemptTimeout, maxBackoff: maxBackoff,
	}, leaseID, http.MethodPost, "/keepalive", &out)
	return out, res, err
}

// KeepAliveMany renews up to api.MaxKeepAliveBatch leases with one request: the cluster
// renews them all in one log entry and answers once it is applied. Leases the cluster no
// longer knows (expired or revoked) are listed in NotFound; the others are renewed. A
// server older than batch keepalives answers ErrInvalid.
func (c *Client) KeepAliveMany(ctx context.Context, leaseIDs []string) (api.KeepAliveBatch, error) {
	out, _, err := c.keepAliveMany(ctx, leaseIDs, 0, 0)
	return out, err
}

func (c *Client) keepAliveMany(ctx context.Context, leaseIDs []string, attemptTimeout, maxBackoff time.Duration) (api.KeepAliveBatch, result, error) {
	op := "batch keepalive"
	if len(leaseIDs) == 0 || len(leaseIDs) > api.MaxKeepAliveBatch {
		return api.KeepAliveBatch{}, result{}, wrap(ErrInvalid, nil, "%s: %d leases, want 1 to %d", op, len(leaseIDs), api.MaxKeepAliveBatch)
	}
	for _, id := range leaseIDs {
		if err := checkLeaseID(op, id); err != nil {
			return api.KeepAliveBatch{}, result{}, err
		}
	}
	var out api.KeepAliveBatch
	res, err := c.do(ctx, &request{
		op: op, method: http.MethodPost, path: "/v1/leases/keepalive",
		body:           func() any { return api.KeepAliveRequest{LeaseIDs: leaseIDs} },
		attemptTimeout: attemptTimeout, maxBackoff: maxBackoff,
		secrets: leaseIDs,
	}, &out)
	return out, res, err
}

// Revoke deletes a lease and releases every lock it holds (each goes to its next waiter).
// A revoke that had to be retried and then finds no lease reports success: the earlier
// attempt revoked it.
func (c *Client) Revoke(ctx context.Context, leaseID string) (api.RevokeResult, error) {
	var out api.RevokeResult
	res, err := c.leaseCall(ctx, &request{op: "revoke", method: http.MethodPost, path: "/v1/leases/revoke"}, leaseID, http.MethodDelete, "", &out)
	if err != nil && res.attempts > 1 && errors.Is(err, ErrLeaseNotFound) {
		return api.RevokeResult{LeaseID: leaseID, Released: []string{}}, nil
	}
	return out, err
}

// GetLease reads a lease: its TTL and the locks it holds. The read is linearizable.
func (c *Client) GetLease(ctx context.Context, leaseID string) (api.Lease, error) {
	var out api.Lease
	_, err := c.leaseCall(ctx, &request{op: "get lease", method: http.MethodPost, path: "/v1/leases/lookup"}, leaseID, http.MethodGet, "", &out)
	return out, err
}

// leaseCall checks leaseID and sends r, a request on one of the lease routes that carry
// the ID in the body (api.LeaseRequest), so that the ID stays out of URLs, which end up in
// access logs, proxies' logs and error texts. A server older than those routes answers 404
// not_found (or 405 method_not_allowed: its GET and DELETE /v1/leases/{id} match the
// path); the call is then repeated once on the old route, oldMethod
// /v1/leases/{id}oldSuffix, where the ID has to be in the URL. The first answer said
// nothing was applied.
func (c *Client) leaseCall(ctx context.Context, r *request, leaseID, oldMethod, oldSuffix string, out any) (result, error) {
	if err := checkLeaseID(r.op, leaseID); err != nil {
		return result{}, err
	}
	r.body = func() any { return api.LeaseRequest{LeaseID: leaseID} }
	r.secrets = append(r.secrets, leaseID)
	res, err := c.do(ctx, r, out)
	if err == nil || !(errors.Is(err, &api.Error{Code: api.CodeNotFound}) || errors.Is(err, &api.Error{Code: api.CodeMethodNotAllowed})) {
		return res, err
	}
	c.log.Debug("the server lacks the lease routes with the ID in the body; using the old route", "op", r.op)
	old := *r
	old.method, old.path, old.body = oldMethod, "/v1/leases/"+url.PathEscape(leaseID)+oldSuffix, nil
	return c.do(ctx, &old, out)
}

// revokeQuietly revokes a lease nobody will use, on a context that survives ctx's end.
func (c *Client) revokeQuietly(ctx context.Context, id string) {
	rctx, cancel := c.cleanupContext(ctx)
	defer cancel()
	if _, err := c.Revoke(rctx, id); err != nil {
		c.log.Debug("revoking an unused lease failed; it will expire", "lease", redactID(id), "error", err)
	}
}
