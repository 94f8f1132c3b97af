package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/raftlock/raftlock/api"
)

// leaderHeader is set by a follower that forwarded the request: the leader's HTTP address.
const leaderHeader = "X-Raftlock-Leader"

// attempt sends r once to endpoint ep and returns the send time.
func (c *Client) attempt(ctx context.Context, ep int, r *request, out any) (time.Time, error) {
	base := c.endpoints[ep]
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
	req, err := http.NewRequestWithContext(actx, r.method, endpointURL(base, r.path, r.query), body)
	if err != nil {
		return time.Time{}, wrap(ErrInvalid, err, "%s: building the request", r.op)
	}
	if body != nil {
		req.Header["Content-Type"] = jsonHeader
	}
	req.Header["Accept"] = jsonHeader
	c.authorize(req)
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		err = transportCause(err)
		if tlsFailure(err) {
			return sent, wrap(ErrTLS, err, "%s: %s: %s", r.op, base, c.redact(r, err.Error()))
		}
		return sent, wrap(ErrUnavailable, err, "%s: %s: %s", r.op, base, c.redact(r, err.Error()))
	}
	defer resp.Body.Close()
	data, err := readAnswer(resp)
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
	ae, ok := apiError(data)
	if !ok {
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
	ae.Message = c.redact(r, ae.Message)
	return sent, answerError(r.op, ae, resp)
}

// jsonHeader is the value of a request's Content-Type and Accept headers, one slice shared
// by every request (an allocation less per header): net/http reads and copies a request's
// header values but never writes them, and an Add to a full slice copies it first.
var jsonHeader = []string{"application/json"}

// maxAnswerBytes bounds the answer the client reads.
const maxAnswerBytes = 16 << 20

// readAnswer reads the answer's body, at most maxAnswerBytes. An answer that says its length
// (the API's JSON answers do) is read into one buffer of that size.
func readAnswer(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxAnswerBytes {
		data := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
}

// authorize adds the client's token, when it has one, to req.
func (c *Client) authorize(req *http.Request) {
	if c.token != nil {
		req.Header[api.AuthorizationHeader] = c.token.header()
	}
}

// transportCause strips the *url.Error around the cause of a failed exchange: it names
// the URL, and an old lease route's URL holds the lease ID, a secret. Errors name the
// endpoint only.
func transportCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// apiError decodes data, the body of an answer that is not a success, as the API's error
// body. It reports false when data is not one (a proxy's page, an empty body).
func apiError(data []byte) (*api.Error, bool) {
	var eb api.ErrorBody
	if err := json.Unmarshal(data, &eb); err != nil || eb.Error.Code == "" {
		return nil, false
	}
	return &api.Error{Code: eb.Error.Code, Message: eb.Error.Message}, true
}

// answerError is the client error of op for ae, the API error that resp carried, with
// resp's Retry-After delay.
func answerError(op string, ae *api.Error, resp *http.Response) error {
	return fromAPI(op, ae, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
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
