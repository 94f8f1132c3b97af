package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/raftlock/raftlock/api"
)

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

// call sends r with do and returns its 2xx answer decoded into a T: the whole of every
// call whose answer is the API's JSON as it stands.
func call[T any](ctx context.Context, c *Client, r *request) (T, error) {
	var out T
	_, err := c.do(ctx, r, &out)
	return out, err
}

// orEmpty returns a list answer as callers get it: nil with an error, and never nil
// without one, so that an empty list encodes as [] and reads as "none" rather than "no
// answer".
func orEmpty[E any](list []E, err error) ([]E, error) {
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []E{}
	}
	return list, nil
}

// remove sends a DELETE of path, whose answer has no body. A remove that had to be
// retried and then finds nothing to remove reports success: the earlier attempt removed
// it.
func (c *Client) remove(ctx context.Context, op, path string) error {
	res, err := c.do(ctx, &request{op: op, method: http.MethodDelete, path: path}, nil)
	return goneAfterRetry(res, err)
}

// goneAfterRetry turns a not_found answer into success when an earlier attempt of the
// same delete may have been applied.
func goneAfterRetry(res result, err error) error {
	if err != nil && res.attempts > 1 && errors.Is(err, &api.Error{Code: api.CodeNotFound}) {
		return nil
	}
	return err
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
	idx := c.getPreferred()
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
				return res, c.ctxErr(ctx, r.op, last)
			}
			last = err
			if errors.Is(err, ErrTLS) {
				tlsFails++
			}
			if retryClass(err) == api.RetryAfterDelay {
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
		pause := upperHalf(backoff)
		if throttled > 0 {
			pause = max(pause, throttled)
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pause {
				return res, last // it cannot be served before the caller gives up
			}
		}
		if !sleep(ctx, pause) {
			return res, c.ctxErr(ctx, r.op, last)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// upperHalf draws a pause at random from the upper half of backoff: full jitter spreads
// clients out, and the lower bound keeps the pause meaningful.
func upperHalf(backoff time.Duration) time.Duration {
	return backoff/2 + rand.N(backoff/2+1)
}

// sleep pauses for d or until ctx ends, and reports whether the whole pause passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ctxErr reports that ctx ended while op was still being retried; last is the error of
// the last failed attempt, if any.
func (c *Client) ctxErr(ctx context.Context, op string, last error) error {
	if last == nil {
		return fmt.Errorf("client: %s: %w", op, ctx.Err())
	}
	return fmt.Errorf("client: %s: %w; last error: %w", op, ctx.Err(), last)
}

// retryClass is the retry class of the API answer err comes from, as the API's catalogue
// of outcomes says (api/outcomes.go): RetryNever for an error that is no answer, and for
// a code the catalogue does not know (a newer server's).
func retryClass(err error) api.Retry {
	var ae *api.Error
	if errors.As(err, &ae) {
		if o, ok := api.Lookup(ae.Code); ok {
			return o.Retry
		}
	}
	return api.RetryNever
}

// mayHaveApplied reports whether a retryable failure may hide an applied request: an
// answer of retry class ambiguous (unknown_outcome), or a connection that failed after
// the request could have been sent.
func mayHaveApplied(err error) bool {
	if retryClass(err) == api.RetryAmbiguous {
		return true
	}
	if !errors.Is(err, ErrUnavailable) {
		return false
	}
	var oe *net.OpError
	return !errors.As(err, &oe) || oe.Op != "dial"
}

// retryable reports whether another endpoint (or a later attempt) may answer differently:
// an endpoint that did not answer, or an answer whose retry class is not never.
func retryable(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTLS) || retryClass(err) != api.RetryNever
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
