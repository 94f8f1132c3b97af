package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/raftlock/raftlock/api"
)

// AcquireOptions are the optional parts of an acquire. The zero value takes the lock at
// once with a new lease of the default TTL, or fails with ErrLockHeld.
type AcquireOptions struct {
	// LeaseID is the lease to hold the lock with. Empty means: create a new lease of TTL in
	// the same log entry as the grant (its ID is in the answer). Nothing keeps such a lease
	// alive; prefer a Lease and a Mutex for work that outlives one TTL.
	LeaseID string
	// TTL is the TTL of the lease created when LeaseID is empty; zero means the server's
	// default (api.DefaultTTLMs). It must be zero when LeaseID is set.
	TTL time.Duration
	// Wait is how long to wait in the lock's FIFO queue when it is held; zero fails at
	// once with ErrLockHeld. At most api.MaxWaitMs; Mutex.Lock waits longer by re-issuing.
	// The wait is server-side: the answer comes from the commit that grants the lock.
	Wait time.Duration
	// Owner is a free-form label shown in the lock's status; empty means none.
	Owner string
	// RequestID makes an acquire without LeaseID idempotent: the server derives the lease
	// it creates from it, so a retry returns the first attempt's grant (or its place in the
	// queue) instead of creating a second lease. Empty means: the client draws one at
	// random (32 hex characters from crypto/rand) per Acquire call and sends it with every
	// retry of that call. Set it only to carry one logical acquire across several calls
	// (after a crash, say); it is then as secret as a lease ID, and must be 16 to 128
	// characters of [A-Za-z0-9_-] drawn at random. It must be empty when LeaseID is set.
	RequestID string
	// Mode is the lock's mode: "" or api.ModeExclusive for an exclusive grant (one holder
	// at a time), api.ModeShared for a shared one (any number of shared holders, and no
	// exclusive holder beside them). Ignored by the other primitives.
	Mode string
	// MaxHold ends the grant at most this long after it, even while the lease is kept
	// alive; LockDelay keeps the lock from everyone this long after the lease expired or
	// was revoked without a release (exclusive locks only). Zero: none. Both need a
	// cluster at protocol version 3 (ErrVersionInactive otherwise); ignored by semaphores
	// and elections.
	MaxHold, LockDelay time.Duration
}

// Acquire takes lock name and returns the grant with its fencing token. Acquire is
// idempotent (a retry returns the same grant): for a given lease, and, without LeaseID,
// through a request ID the client draws once per call and sends with every retry of it.
// So the client retries it across endpoints. If ctx ends while the server is waiting, the
// server takes the lease out of the queue (and releases the lock if it was granted
// meanwhile).
func (c *Client) Acquire(ctx context.Context, name string, opts AcquireOptions) (api.Grant, error) {
	g, _, err := c.acquire(ctx, name, opts)
	return g, err
}

func (c *Client) acquire(ctx context.Context, name string, opts AcquireOptions) (api.Grant, result, error) {
	op := fmt.Sprintf("acquire %q", name)
	mode, ae := api.NormalizeMode(opts.Mode)
	if err := invalid(op, ae); err != nil {
		return api.Grant{}, result{}, err
	}
	if mode == api.ModeExclusive {
		mode = "" // what a server older than shared locks understands too
	}
	var out api.Grant
	res, err := c.acquireAt(ctx, op, locksRoute, name, opts, func(r api.AcquireRequest) any {
		r.Mode = mode
		return r
	}, &out)
	return out, res, err
}

// acquireAt sends an acquire-like request (a lock, a permit, a campaign) for name at route: opts
// become the fields every such request shares, and body wraps them into the primitive's
// own request. It checks the name and options, draws the request ID of a lease created
// with the grant, and asks a retried waiting request only for the wait that remains.
func (c *Client) acquireAt(ctx context.Context, op, route, name string, opts AcquireOptions, body func(api.AcquireRequest) any, out any) (result, error) {
	if err := checkNameAt(op, route, name); err != nil {
		return result{}, err
	}
	reqID, remaining, err := acquireParams(op, opts)
	if err != nil {
		return result{}, err
	}
	return c.do(ctx, &request{
		op: op, method: http.MethodPut, path: namePath(route, name),
		body: func() any {
			return body(api.AcquireRequest{LeaseID: opts.LeaseID, TTLMs: ms(opts.TTL), WaitMs: ms(remaining()), Owner: opts.Owner, RequestID: reqID,
				MaxHoldMs: ms(opts.MaxHold), LockDelayMs: ms(opts.LockDelay)})
		},
		waitFn:  remaining,
		secrets: []string{opts.LeaseID, reqID},
	}, out)
}

// acquireParams checks what every acquire-like request shares (a lock, a permit, a
// campaign, a lockset) and returns its request ID (drawn for a lease created with the
// grant) and the wait that remains, for each attempt.
func acquireParams(op string, opts AcquireOptions) (reqID string, remaining func() time.Duration, err error) {
	reqID = opts.RequestID
	if opts.LeaseID != "" {
		if err := checkLeaseID(op, opts.LeaseID); err != nil {
			return "", nil, err
		}
		if reqID != "" {
			return "", nil, wrap(ErrInvalid, nil, "%s: a request ID is only for an acquire without a lease", op)
		}
	} else if reqID == "" {
		// One ID per logical acquire, the same on every retry below: an attempt that was
		// applied but whose answer was lost must not leave a second lease (holding the
		// grant, or queued for it) behind.
		reqID = newRequestID()
	} else if err := invalid(op, api.ValidateRequestID(reqID)); err != nil {
		return "", nil, err
	}
	if err := checkWait(op, opts.Wait); err != nil {
		return "", nil, err
	}
	// A retried waiting acquire asks only for the wait that remains, so that failover does
	// not stretch the caller's wait.
	waitEnd := time.Now().Add(opts.Wait)
	remaining = func() time.Duration {
		if opts.Wait <= 0 {
			return 0
		}
		return max(time.Until(waitEnd), time.Millisecond)
	}
	return reqID, remaining, nil
}

// newRequestID draws an acquire's request ID: 128 random bits as 32 hex characters, as
// unguessable as a lease ID (the server derives the lease from it).
func newRequestID() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // never fails (it crashes the program if the OS cannot supply)
	return hex.EncodeToString(b[:])
}

// Release releases lock name held by leaseID with the grant's token. The token makes a
// retried or late release harmless: it can never free a later grant of the same lock,
// which has a different token. It fails with ErrNotHolder when lease and token do not
// hold the lock (including when an earlier, unanswered attempt of this release succeeded).
func (c *Client) Release(ctx context.Context, name, leaseID string, token uint64) error {
	_, err := c.releaseAt(ctx, fmt.Sprintf("release %q", name), locksRoute, name, leaseID, token)
	return err
}

// releaser is the releaseFunc of a held primitive: it gives back the grant of name at
// route, naming the call op in errors.
func (c *Client) releaser(op, route, name string) releaseFunc {
	return func(ctx context.Context, leaseID string, g grant) (result, error) {
		return c.releaseAt(ctx, op, route, name, leaseID, g.token)
	}
}

// releaseAt gives back the grant (a lock, a permit, a leadership) of name at route, held
// by leaseID with token.
func (c *Client) releaseAt(ctx context.Context, op, route, name, leaseID string, token uint64) (result, error) {
	if err := checkNameAt(op, route, name); err != nil {
		return result{}, err
	}
	if err := checkLeaseID(op, leaseID); err != nil {
		return result{}, err
	}
	if token == 0 {
		return result{}, wrap(ErrInvalid, nil, "%s: the token of the grant is required", op)
	}
	return c.do(ctx, &request{
		op: op, method: http.MethodDelete, path: namePath(route, name),
		body:    func() any { return api.ReleaseRequest{LeaseID: leaseID, Token: token} },
		secrets: []string{leaseID},
	}, &api.ReleaseResult{})
}

// StatusOptions are the optional parts of a status read. The zero value is a
// linearizable read that answers at once.
type StatusOptions struct {
	// WaitIndex, with Wait > 0, makes the read a blocking query: it answers as soon as the
	// lock's ModifyIndex exceeds WaitIndex, or after Wait with the current state.
	WaitIndex uint64
	// Wait bounds a blocking query; zero answers at once. At most api.MaxWaitMs.
	Wait time.Duration
	// Stale lets any node answer from its own state, which may lag the leader's.
	Stale bool
}

// Status reads the state of lock name. A free lock has Held false and Token zero.
func (c *Client) Status(ctx context.Context, name string, opts StatusOptions) (api.LockStatus, error) {
	return statusAt[api.LockStatus](ctx, c, fmt.Sprintf("status %q", name), locksRoute, name, opts)
}

// CheckHolder reports whether token is the fencing token of the current exclusive grant
// of lock name, by a linearizable read of its status (GET /v1/locks/{name}), and returns
// that status (its Owner and Holders, for a guard that checks the holder's label too). It
// fails with ErrNotHolder when the lock is free, held shared, or held under another token.
//
// It is the check a guard makes when it cannot authenticate its writers. A fencing token
// is a Raft log index, global to the cluster and not bound to a lock: a token taken on any
// lock the writer may take (a/junk) is accepted by a plain guard of another resource
// (b/job) when it is at least that guard's fence, and then raises the fence above the real
// holder's token, which the guard refuses from then on. CheckHolder refuses the token
// from another lock.
//
// The check proves that token was the lock's at the moment of the read, not that it still
// is at the write: keep the guard's fence as well (fencing.MemoryGuard or SQLGuard, keyed
// by the lock's name, checked after CheckHolder), so that once a later holder has written,
// an earlier token is refused. With ACLs on, the guard's token needs read on name.
func (c *Client) CheckHolder(ctx context.Context, name string, token uint64) (api.LockStatus, error) {
	st, err := c.Status(ctx, name, StatusOptions{})
	if err != nil {
		return st, err
	}
	switch {
	case !st.Held:
		return st, wrap(ErrNotHolder, nil, "check holder of %q: the lock is free, not held with token %d", name, token)
	case st.Mode == api.ModeShared:
		return st, wrap(ErrNotHolder, nil, "check holder of %q: the lock is held shared; a shared holder's token fences no write", name)
	case st.Token != token:
		return st, wrap(ErrNotHolder, nil, "check holder of %q: token %d is not the current grant's (%d)", name, token, st.Token)
	}
	return st, nil
}

// statusAt reads the status of name at route (a lock's, a semaphore's, an election's),
// blocking when opts ask for it.
func statusAt[T any](ctx context.Context, c *Client, op, route, name string, opts StatusOptions) (T, error) {
	var zero T
	if err := checkNameAt(op, route, name); err != nil {
		return zero, err
	}
	if err := checkWait(op, opts.Wait); err != nil {
		return zero, err
	}
	q := url.Values{}
	if opts.Stale {
		q.Set("stale", "true")
	}
	if opts.Wait > 0 {
		q.Set("wait_index", strconv.FormatUint(opts.WaitIndex, 10))
		q.Set("wait_ms", strconv.FormatInt(ms(opts.Wait), 10))
	}
	return call[T](ctx, c, &request{
		op: op, method: http.MethodGet, path: namePath(route, name), query: q,
		waitFn: func() time.Duration { return opts.Wait },
	})
}

// List returns the held or awaited locks whose names start with prefix (all of them when
// prefix is empty), sorted by name. The server answers in pages (api.DefaultListLimit
// locks each); List follows the pages' Next cursors to the end. Each page is a
// linearizable read, but the pages are read one after another: a lock that changes
// while List runs may be seen before or after the change, and a lock taken or freed
// meanwhile may be missing or present. Use ListPage to read one page at a time.
func (c *Client) List(ctx context.Context, prefix string) ([]api.LockStatus, error) {
	return c.listAll(ctx, prefix, false)
}

// ListStale is List answered by any node from its own state, which may lag the leader's.
func (c *Client) ListStale(ctx context.Context, prefix string) ([]api.LockStatus, error) {
	return c.listAll(ctx, prefix, true)
}

// ListOptions are the optional parts of ListPage. The zero value reads the first page of
// the server's default size, linearizably.
type ListOptions struct {
	// Limit is the most locks in the page; zero means the server's default
	// (api.DefaultListLimit). At most api.MaxListLimit.
	Limit int
	// After is the cursor of the page before: the Next of its answer. The page starts
	// with the first matching name after it; empty starts at the beginning.
	After string
	// Stale lets any node answer from its own state, which may lag the leader's.
	Stale bool
}

// ListPage reads one page of the locks whose names start with prefix. When the answer's
// Truncated is set, more follow: pass its Next as After to read them.
func (c *Client) ListPage(ctx context.Context, prefix string, opts ListOptions) (api.LockList, error) {
	if opts.Limit < 0 || opts.Limit > api.MaxListLimit {
		return api.LockList{}, wrap(ErrInvalid, nil, "list locks: limit %d is outside 0 to %d", opts.Limit, api.MaxListLimit)
	}
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if opts.Stale {
		q.Set("stale", "true")
	}
	return call[api.LockList](ctx, c, &request{op: "list locks", method: http.MethodGet, path: "/v1/locks", query: q})
}

func (c *Client) listAll(ctx context.Context, prefix string, stale bool) ([]api.LockStatus, error) {
	var all []api.LockStatus
	after := ""
	for {
		page, err := c.ListPage(ctx, prefix, ListOptions{After: after, Stale: stale})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Locks...)
		if !page.Truncated {
			return orEmpty(all, nil)
		}
		// Names are sorted, so the cursor must move forward; a server that says otherwise
		// would make this loop forever.
		if page.Next == "" || page.Next <= after {
			return nil, wrap(ErrServer, nil, "list locks: a truncated page whose next cursor does not move forward")
		}
		after = page.Next
	}
}
