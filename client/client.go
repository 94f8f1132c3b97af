package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
)

// Defaults of the client's options.
const (
	// DefaultTimeout bounds one attempt of one request on one endpoint, not counting the
	// time the server is asked to wait (wait_ms). A caller's context bounds the whole call.
	DefaultTimeout = 5 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the pause between rounds of attempts
	// when no endpoint answered (or all answered no_leader). The pause doubles each round,
	// with jitter.
	DefaultMinBackoff = 50 * time.Millisecond
	DefaultMaxBackoff = time.Second
)

// leaderHeader is set by a follower that forwarded the request: the leader's HTTP address.
const leaderHeader = "X-Raftlock-Leader"

// Client talks to a raftlock cluster over its HTTP JSON API. Any endpoint serves any
// request (followers forward to the leader); on a connection error or a no_leader answer
// the client tries the other endpoints, with exponential backoff and jitter between
// rounds, until the caller's context ends. A Client is safe for concurrent use.
type Client struct {
	endpoints  []string // base URLs without a trailing slash
	hc         *http.Client
	hcGiven    bool        // WithHTTPClient was used
	tls        *tls.Config // WithTLS; nil means the transport's default (system roots)
	token      *secret     // WithToken; nil sends no Authorization header
	timeout    time.Duration
	minBackoff time.Duration
	maxBackoff time.Duration
	log        hclog.Logger

	mu        sync.Mutex
	preferred int // index of the endpoint that answered last

	ka keepaliver // renews every Lease of this client in batches
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client; nil keeps the default, which has its own transport
// with keep-alive connections. Its Timeout, if any, bounds waiting requests too, so leave
// it zero and use WithTimeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc, c.hcGiven = hc, true
		}
	}
}

// WithTLS makes the client speak HTTPS with cfg (cloned; nil keeps the default, which
// verifies servers against the system's roots). Build cfg with TLSFromFiles from the
// cluster's CA file and, when the cluster asks for client certificates, a client
// certificate and key. With TLS configured, a bare "host:port" endpoint means https and
// an "http://" endpoint is refused, so that a forgotten scheme cannot send a token or a
// lease ID in clear text. It cannot be combined with WithHTTPClient: configure that
// client's transport instead.
func WithTLS(cfg *tls.Config) Option {
	return func(c *Client) {
		if cfg != nil {
			c.tls = cfg.Clone()
		}
	}
}

// WithToken sends secret, an ACL token's secret ID, as "Authorization: Bearer <secret>" on
// every request. Surrounding white space (a token file's final newline) is trimmed; empty
// sends no token. The secret never appears in the client's logs or error texts. Send it
// over HTTPS (WithTLS): over plain HTTP anyone on the path can read it, and New logs a
// warning saying so.
func WithToken(secret string) Option {
	return func(c *Client) { c.token = newSecret(secret) }
}

// WithTimeout bounds each attempt on one endpoint (DefaultTimeout when d <= 0). A request
// that asks the server to wait gets that wait on top. When an attempt times out the next
// endpoint is tried, so a hung node (SIGSTOP, a partition) costs at most d.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithLogger sets the logger for retries and lease events; nil means no logging.
func WithLogger(l hclog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.log = l
		}
	}
}

// WithRetryBackoff sets the pause between rounds of failed attempts: it starts at min,
// doubles each round up to max, and each pause is drawn at random from its upper half.
// Values <= 0 keep the defaults.
func WithRetryBackoff(min, max time.Duration) Option {
	return func(c *Client) {
		if min > 0 {
			c.minBackoff = min
		}
		if max > 0 {
			c.maxBackoff = max
		}
	}
}

// New returns a client for the cluster reachable at endpoints: base URLs such as
// "http://127.0.0.1:7001" (a bare "host:port" means http). One endpoint is enough, since
// any node answers any request, but listing every node lets the client survive the loss
// of the one it talks to.
//
// With WithTLS, a bare "host:port" means https and "http://" endpoints are refused.
func New(endpoints []string, opts ...Option) (*Client, error) {
	c := &Client{
		timeout:    DefaultTimeout,
		minBackoff: DefaultMinBackoff,
		maxBackoff: DefaultMaxBackoff,
		log:        hclog.NewNullLogger(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.tls != nil && c.hcGiven {
		return nil, errors.New("client: WithTLS and WithHTTPClient cannot be combined: set the TLS config on that HTTP client's transport")
	}
	if err := c.token.check(); err != nil {
		return nil, err
	}
	scheme := "http"
	if c.tls != nil {
		scheme = "https"
	}
	plain := false
	for _, e := range endpoints {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = scheme + "://" + e
		}
		u, err := url.Parse(e)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("client: endpoint %q is not an http(s) URL such as http://127.0.0.1:7001", e)
		}
		if u.Scheme == "http" && c.tls != nil {
			return nil, fmt.Errorf("client: endpoint %q is plain HTTP but TLS is configured: use https://%s", e, u.Host)
		}
		plain = plain || u.Scheme == "http"
		c.endpoints = append(c.endpoints, strings.TrimRight(e, "/"))
	}
	if len(c.endpoints) == 0 {
		return nil, errors.New("client: no endpoints given")
	}
	if c.maxBackoff < c.minBackoff {
		c.maxBackoff = c.minBackoff
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		tr.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		if c.tls != nil {
			tr.TLSClientConfig = c.tls
		}
		c.hc = &http.Client{
			Transport: tr,
			// The API never redirects. Following one would send a request's body (lease
			// IDs) wherever the answer points, perhaps over plain HTTP.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if plain && c.token != nil {
		c.log.Warn("an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS")
	}
	return c, nil
}

// Endpoints returns the endpoints the client uses.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// request describes one API call; do sends it to as many endpoints as it takes.
type request struct {
	op     string // for error messages: "acquire \"accounts/A\""
	method string
	path   string // escaped
	query  url.Values
	// body returns the JSON body for the next attempt (nil: no body). It is called per
	// attempt so that a waiting acquire can send the wait that remains.
	body func() any
	// waitFn, when set, returns the server-side wait of the next attempt (wait_ms or a
	// blocking query's wait), which is added to the attempt timeout.
	waitFn func() time.Duration
	// attemptTimeout overrides the client's timeout for this call when > 0.
	attemptTimeout time.Duration
	// maxBackoff overrides the client's maximum backoff for this call when > 0.
	maxBackoff time.Duration
	// once marks a request that must not be repeated once an attempt may have been
	// applied (ACL bootstrap, token creation: a second success would mint a second secret
	// nobody sees). do then retries only what certainly was not applied: no_leader and
	// too_many_requests answers, connections that were never made.
	once bool
	// secrets are values of this request (lease IDs, request IDs) that must not show in
	// an error text or a log line, even when the server echoes them.
	secrets []string
}

// result tells the caller about the attempt that was answered.
type result struct {
	// sent is when the answered attempt was sent, on this process's monotonic clock.
	sent time.Time
	// first is when the first attempt was sent: any attempt, answered or not, may have
	// been applied, so what the call created exists since at least this moment.
	first time.Time
	// attempts counts the attempts made; more than one means an earlier attempt may have
	// been applied without its answer reaching us.
	attempts int
}

// do sends r until an endpoint answers with anything but no_leader, unknown_outcome or
// too_many_requests, or ctx ends. A 2xx answer is decoded into out (when non-nil); an API
// error is returned as a client error.
//
// too_many_requests (the node is at its limit of held-open requests, nothing was
// proposed) is retried after the answer's Retry-After, or the backoff if longer. When
// ctx's deadline falls before that pause would end, do returns the 429 error at once
// instead of sleeping until the deadline for nothing.
func (c *Client) do(ctx context.Context, r *request, out any) (result, error) {
	var res result
	n := len(c.endpoints)
	c.mu.Lock()
	idx := c.preferred
	c.mu.Unlock()
	backoff := c.minBackoff
	maxBackoff := c.maxBackoff
	if r.maxBackoff > 0 {
		maxBackoff = r.maxBackoff
		backoff = min(backoff, maxBackoff)
	}
	var last error
	for {
		var throttled time.Duration // the Retry-After of a too_many_requests answer
		tlsFails := 0               // attempts of this round that failed in the TLS handshake
	round:
		for i := 0; i < n; i++ {
			ep := (idx + i) % n
			res.attempts++
			sent, err := c.attempt(ctx, ep, r, out)
			if res.attempts == 1 {
				res.first = sent
			}
			if err == nil {
				res.sent = sent
				return res, nil
			}
			if !retryable(err) || (r.once && mayHaveApplied(err)) {
				return res, err
			}
			if ctx.Err() != nil {
				// The attempt failed because the caller's context ended, not the endpoint.
				return res, c.ctxErr(ctx, r, last)
			}
			last = err
			if errors.Is(err, ErrTLS) {
				tlsFails++
			}
			if errors.Is(err, ErrTooManyRequests) {
				// The node is busy, not gone: wait as it asked before asking again (the
				// attempt made it the preferred endpoint, as it answered).
				throttled, _ = RetryAfter(err)
				throttled = max(throttled, time.Millisecond)
				c.log.Debug("request throttled, retrying after a pause", "op", r.op, "endpoint", c.endpoints[ep], "retry_after", throttled)
				break round
			}
			c.log.Debug("request failed, trying the next endpoint", "op", r.op, "endpoint", c.endpoints[ep], "error", err)
			c.setPreferred((ep + 1) % n)
		}
		if tlsFails == n {
			// No endpoint would shake hands (an untrusted certificate, a refused client
			// certificate, TLS spoken to a plain port): a misconfiguration that waiting
			// cannot fix. One endpoint with a bad certificate among good ones is skipped.
			return res, last
		}
		idx = c.getPreferred()
		// Full jitter in the upper half: spread clients out but keep the pause meaningful.
		pause := backoff/2 + rand.N(backoff/2+1)
		if throttled > 0 {
			pause = max(pause, throttled)
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pause {
				return res, last // it cannot be served before the caller gives up
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, c.ctxErr(ctx, r, last)
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// ctxErr reports that ctx ended while the request was still being retried.
func (c *Client) ctxErr(ctx context.Context, r *request, last error) error {
	if last == nil {
		return fmt.Errorf("client: %s: %w", r.op, ctx.Err())
	}
	return fmt.Errorf("client: %s: %w; last error: %w", r.op, ctx.Err(), last)
}

// mayHaveApplied reports whether a retryable failure may hide an applied request: an
// unknown_outcome answer, or a connection that failed after the request could have been
// sent.
func mayHaveApplied(err error) bool {
	if errors.Is(err, ErrUnknownOutcome) {
		return true
	}
	if !errors.Is(err, ErrUnavailable) {
		return false
	}
	var oe *net.OpError
	return !errors.As(err, &oe) || oe.Op != "dial"
}

// retryable reports whether another endpoint (or a later attempt) may answer differently.
func retryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNoLeader) || errors.Is(err, ErrUnknownOutcome) ||
		errors.Is(err, ErrTooManyRequests) || errors.Is(err, ErrTLS)
}

// tlsFailure reports whether a failed HTTP exchange failed in the TLS handshake for a
// reason that retrying will not fix.
func tlsFailure(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
		rerr tls.RecordHeaderError
		aerr tls.AlertError
	)
	if errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &cerr) ||
		errors.As(err, &rerr) || errors.As(err, &aerr) {
		return true
	}
	// A TLS alert from the server (it refused our certificate, or has none for us)
	// arrives as a *net.OpError whose Op is "remote error".
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

func (c *Client) getPreferred() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.preferred
}

func (c *Client) setPreferred(i int) {
	c.mu.Lock()
	c.preferred = i
	c.mu.Unlock()
}

// attempt sends r once to endpoint ep and returns the send time.
func (c *Client) attempt(ctx context.Context, ep int, r *request, out any) (time.Time, error) {
	base := c.endpoints[ep]
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body())
		if err != nil {
			return time.Time{}, wrap(ErrInvalid, err, "%s: encoding the request", r.op)
		}
		body = bytes.NewReader(b)
	}
	timeout := c.timeout
	if r.attemptTimeout > 0 {
		timeout = r.attemptTimeout
	}
	if r.waitFn != nil {
		timeout += r.waitFn()
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, r.method, u, body)
	if err != nil {
		return time.Time{}, wrap(ErrInvalid, err, "%s: building the request", r.op)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != nil {
		req.Header.Set(api.AuthorizationHeader, c.token.header())
	}
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		// A *url.Error names the URL, and an old lease route's URL holds its ID, a secret:
		// name the endpoint only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if tlsFailure(err) {
			return sent, wrap(ErrTLS, err, "%s: %s: %s", r.op, base, c.redact(r, err.Error()))
		}
		return sent, wrap(ErrUnavailable, err, "%s: %s: %s", r.op, base, c.redact(r, err.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return sent, wrap(ErrUnavailable, err, "%s: reading the answer of %s: %s", r.op, base, c.redact(r, err.Error()))
	}
	if leader := resp.Header.Get(leaderHeader); leader != "" {
		c.noteLeader(leader)
	} else if resp.StatusCode < 500 {
		c.setPreferred(ep)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return sent, nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return sent, wrap(ErrServer, err, "%s: %s answered %s with a body that is not the API's JSON", r.op, base, resp.Status)
		}
		return sent, nil
	}
	var eb api.ErrorBody
	if err := json.Unmarshal(data, &eb); err != nil || eb.Error.Code == "" {
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			// A proxy or load balancer in front of a node that is down.
			return sent, wrap(ErrUnavailable, nil, "%s: %s answered %s", r.op, base, resp.Status)
		case http.StatusUnauthorized:
			return sent, wrap(ErrUnauthenticated, nil, "%s: %s answered %s", r.op, base, resp.Status)
		case http.StatusForbidden:
			return sent, wrap(ErrPermissionDenied, nil, "%s: %s answered %s", r.op, base, resp.Status)
		}
		return sent, wrap(ErrServer, nil, "%s: %s answered %s: %.200q", r.op, base, resp.Status, c.redact(r, string(data)))
	}
	ae := &api.Error{Code: eb.Error.Code, Message: c.redact(r, eb.Error.Message)}
	return sent, fromAPI(r.op, ae, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
}

// redact replaces in s the client's token and the request's secrets, in case a server or
// a proxy echoes them in an answer that becomes an error text.
func (c *Client) redact(r *request, s string) string {
	s = c.token.redact(s)
	for _, v := range r.secrets {
		if len(v) >= minSecretLen {
			s = strings.ReplaceAll(s, v, redactID(v))
		}
	}
	return s
}

// noteLeader makes the endpoint whose host is the leader's HTTP address the preferred
// one, so that later requests skip the forwarding hop.
func (c *Client) noteLeader(addr string) {
	for i, e := range c.endpoints {
		if u, err := url.Parse(e); err == nil && u.Host == addr {
			c.setPreferred(i)
			return
		}
	}
}

// redactID shortens a secret (a lease ID, a request ID) for logs and error messages: its
// first six characters, enough to tell leases apart, far too few to use one.
func redactID(id string) string {
	if len(id) <= 6 {
		return "…"
	}
	return id[:6] + "…"
}

// Route prefixes of the primitives; the name follows, always last in the path.
const (
	locksRoute      = "/v1/locks/"
	semaphoresRoute = "/v1/semaphores/"
	electionsRoute  = "/v1/elections/"
)

// lockPath escapes each segment of a lock name, so that names such as "accounts/A" or
// "a b?c" reach the server unchanged.
func lockPath(name string) string { return namePath(locksRoute, name) }

// namePath is route followed by name, each segment escaped.
func namePath(route, name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return route + strings.Join(segs, "/")
}

// ms converts a duration to whole milliseconds, rounding up so that a positive duration
// never becomes zero (which means "default" or "do not wait" in the API).
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

func checkName(op, name string) error {
	if ae := api.ValidateName(name); ae != nil {
		return wrap(ErrInvalid, ae, "%s: %s", op, ae.Message)
	}
	return nil
}

// checkNameAt checks the name of the primitive at route; the message names its kind.
func checkNameAt(op, route, name string) error {
	kind := "lock"
	switch route {
	case semaphoresRoute:
		kind = "semaphore"
	case electionsRoute:
		kind = "election"
	}
	return checkNameOf(op, kind, name)
}

// checkNameOf checks the name of a primitive of kind ("lock", "semaphore", "election").
func checkNameOf(op, kind, name string) error {
	if ae := api.ValidateNameOf(kind, name); ae != nil {
		return wrap(ErrInvalid, ae, "%s: %s", op, ae.Message)
	}
	return nil
}

func checkWait(op string, wait time.Duration) error {
	if wait < 0 || ms(wait) > api.MaxWaitMs {
		return wrap(ErrInvalid, nil, "%s: wait %v is outside 0 to %v", op, wait, time.Duration(api.MaxWaitMs)*time.Millisecond)
	}
	return nil
}

func checkLeaseID(op, id string) error {
	if ae := api.ValidateLeaseID(id); ae != nil {
		return wrap(ErrInvalid, ae, "%s: %s", op, ae.Message)
	}
	return nil
}

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
	op := "keepalive"
	if err := checkLeaseID(op, leaseID); err != nil {
		return api.Lease{}, result{}, err
	}
	var out api.Lease
	res, err := c.leaseCall(ctx, &request{
		op: op, method: http.MethodPost, path: "/v1/leases/keepalive",
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

// leaseCall sends r, a request on one of the lease routes that carry the ID in the body
// (api.LeaseRequest), so that the ID stays out of URLs, which end up in access logs,
// proxies' logs and error texts. A server older than those routes answers 404 not_found
// (or 405 method_not_allowed: its GET and DELETE /v1/leases/{id} match the path); the
// call is then repeated once on the old route, oldMethod /v1/leases/{id}oldSuffix, where
// the ID has to be in the URL. The first answer said nothing was applied.
func (c *Client) leaseCall(ctx context.Context, r *request, leaseID, oldMethod, oldSuffix string, out any) (result, error) {
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

// Revoke deletes a lease and releases every lock it holds (each goes to its next waiter).
// A revoke that had to be retried and then finds no lease reports success: the earlier
// attempt revoked it.
func (c *Client) Revoke(ctx context.Context, leaseID string) (api.RevokeResult, error) {
	op := "revoke"
	if err := checkLeaseID(op, leaseID); err != nil {
		return api.RevokeResult{}, err
	}
	var out api.RevokeResult
	res, err := c.leaseCall(ctx, &request{op: op, method: http.MethodPost, path: "/v1/leases/revoke"}, leaseID, http.MethodDelete, "", &out)
	if err != nil && res.attempts > 1 && errors.Is(err, ErrLeaseNotFound) {
		return api.RevokeResult{LeaseID: leaseID, Released: []string{}}, nil
	}
	return out, err
}

// GetLease reads a lease: its TTL and the locks it holds. The read is linearizable.
func (c *Client) GetLease(ctx context.Context, leaseID string) (api.Lease, error) {
	op := "get lease"
	if err := checkLeaseID(op, leaseID); err != nil {
		return api.Lease{}, err
	}
	var out api.Lease
	_, err := c.leaseCall(ctx, &request{op: op, method: http.MethodPost, path: "/v1/leases/lookup"}, leaseID, http.MethodGet, "", &out)
	return out, err
}

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
	if ae != nil {
		return api.Grant{}, result{}, wrap(ErrInvalid, ae, "%s: %s", op, ae.Message)
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
	reqID := opts.RequestID
	if opts.LeaseID != "" {
		if err := checkLeaseID(op, opts.LeaseID); err != nil {
			return result{}, err
		}
		if reqID != "" {
			return result{}, wrap(ErrInvalid, nil, "%s: a request ID is only for an acquire without a lease", op)
		}
	} else if reqID == "" {
		// One ID per logical acquire, the same on every retry below: an attempt that was
		// applied but whose answer was lost must not leave a second lease (holding the
		// grant, or queued for it) behind.
		reqID = newRequestID()
	} else if ae := api.ValidateRequestID(reqID); ae != nil {
		return result{}, wrap(ErrInvalid, ae, "%s: %s", op, ae.Message)
	}
	if err := checkWait(op, opts.Wait); err != nil {
		return result{}, err
	}
	// A retried waiting acquire asks only for the wait that remains, so that failover does
	// not stretch the caller's wait.
	waitEnd := time.Now().Add(opts.Wait)
	remaining := func() time.Duration {
		if opts.Wait <= 0 {
			return 0
		}
		return max(time.Until(waitEnd), time.Millisecond)
	}
	return c.do(ctx, &request{
		op: op, method: http.MethodPut, path: namePath(route, name),
		body: func() any {
			return body(api.AcquireRequest{LeaseID: opts.LeaseID, TTLMs: ms(opts.TTL), WaitMs: ms(remaining()), Owner: opts.Owner, RequestID: reqID})
		},
		waitFn:  remaining,
		secrets: []string{opts.LeaseID, reqID},
	}, out)
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
	_, err := c.release(ctx, name, leaseID, token)
	return err
}

func (c *Client) release(ctx context.Context, name, leaseID string, token uint64) (result, error) {
	return c.releaseAt(ctx, fmt.Sprintf("release %q", name), locksRoute, name, leaseID, token)
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
	var out api.LockStatus
	err := c.statusAt(ctx, fmt.Sprintf("status %q", name), locksRoute, name, opts, &out)
	return out, err
}

// statusAt reads the status of name at route (a lock's, a semaphore's, an election's),
// blocking when opts ask for it.
func (c *Client) statusAt(ctx context.Context, op, route, name string, opts StatusOptions, out any) error {
	if err := checkNameAt(op, route, name); err != nil {
		return err
	}
	if err := checkWait(op, opts.Wait); err != nil {
		return err
	}
	q := url.Values{}
	if opts.Stale {
		q.Set("stale", "true")
	}
	if opts.Wait > 0 {
		q.Set("wait_index", strconv.FormatUint(opts.WaitIndex, 10))
		q.Set("wait_ms", strconv.FormatInt(ms(opts.Wait), 10))
	}
	_, err := c.do(ctx, &request{
		op: op, method: http.MethodGet, path: namePath(route, name), query: q,
		waitFn: func() time.Duration { return opts.Wait },
	}, out)
	return err
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
	var out api.LockList
	_, err := c.do(ctx, &request{op: "list locks", method: http.MethodGet, path: "/v1/locks", query: q}, &out)
	return out, err
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
			if all == nil {
				all = []api.LockStatus{}
			}
			return all, nil
		}
		// Names are sorted, so the cursor must move forward; a server that says otherwise
		// would make this loop forever.
		if page.Next == "" || page.Next <= after {
			return nil, wrap(ErrServer, nil, "list locks: a truncated page whose next cursor does not move forward")
		}
		after = page.Next
	}
}

// Cluster returns the cluster's members, leader, term and indexes as seen by the node
// that answers.
func (c *Client) Cluster(ctx context.Context) (api.Cluster, error) {
	var out api.Cluster
	_, err := c.do(ctx, &request{op: "cluster", method: http.MethodGet, path: "/v1/cluster"}, &out)
	return out, err
}
