// Package rawhttp sends requests to raftlock nodes the way a stranger's program would:
// net/http and encoding/json, one request per call, no retries and no client package
// (whose retries could hide what a plain client meets). Every test that speaks raw HTTP
// to a cluster does it through this package.
package rawhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/testkit"
)

// MaxBody is the most of an answer's body that is read.
const MaxBody = 16 << 20

// Client sends raw requests. The zero value sends them through http.DefaultClient with no
// token.
type Client struct {
	// HTTP is the client the requests go through; nil is http.DefaultClient.
	HTTP *http.Client
	// Token, when set, is sent as the bearer token of every request.
	Token string
	// Seen, when set, is called with every answer (a test collecting what the cluster
	// handed out).
	Seen func(Answer)
}

// Answer is one response, read and decoded.
type Answer struct {
	Method, URL string
	// Status is the HTTP status; 0 when the request failed (Err).
	Status int
	Header http.Header
	// Raw is the body, Body the same decoded as a JSON object (nil when it is not one).
	Raw  []byte
	Body map[string]any
	// Took is the time from sending the request to reading the whole answer.
	Took time.Duration
	// Err is why the request got no answer.
	Err error
}

// Code returns the API error code of an error answer, or "".
func (a Answer) Code() string {
	if e, ok := a.Body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

// OK reports whether the request was answered with a 2xx status.
func (a Answer) OK() bool { return a.Err == nil && a.Status >= 200 && a.Status < 300 }

// Decode decodes the body's JSON into out.
func (a Answer) Decode(out any) error {
	if err := json.Unmarshal(a.Raw, out); err != nil {
		return fmt.Errorf("%s %s: decoding %d answer: %w", a.Method, a.path(), a.Status, err)
	}
	return nil
}

// Expect returns nil when the answer has status want, and otherwise an error that names
// the request, the status and the API error code, but never the body (which may echo a
// secret).
func (a Answer) Expect(want int) error {
	switch {
	case a.Err != nil:
		return fmt.Errorf("%s %s: %w", a.Method, a.path(), a.Err)
	case a.Status != want:
		return fmt.Errorf("%s %s: %d %s, want %d", a.Method, a.path(), a.Status, a.Code(), want)
	}
	return nil
}

func (a Answer) String() string {
	if a.Err != nil {
		return fmt.Sprintf("error %v after %v", a.Err, a.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("%d %s after %v", a.Status, bytes.TrimSpace(a.Raw), a.Took.Round(time.Millisecond))
}

func (a Answer) path() string {
	if u, err := url.Parse(a.URL); err == nil {
		return u.Path
	}
	return a.URL
}

// Do sends method to url with body ("" sends none, anything else is sent as JSON) and
// the headers given as name, value pairs (Host among them, as a client that names another
// host would send it).
func (c Client) Do(method, url, body string, header ...string) Answer {
	return c.Send(context.Background(), method, url, body, header...)
}

// Send is Do with a context that bounds the request.
func (c Client) Send(ctx context.Context, method, url, body string, header ...string) Answer {
	a := Answer{Method: method, URL: url}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
	if err != nil {
		a.Err = err
		return a
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if http.CanonicalHeaderKey(header[i]) == "Host" {
			req.Host = header[i+1] // net/http sends req.Host, never Header["Host"]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		a.Err, a.Took = err, time.Since(start)
		return a
	}
	defer resp.Body.Close()
	a.Raw, _ = io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	a.Status, a.Header, a.Took = resp.StatusCode, resp.Header, time.Since(start)
	_ = json.Unmarshal(a.Raw, &a.Body)
	if c.Seen != nil {
		c.Seen(a)
	}
	return a
}

// JSON encodes v as a request body; nil is no body. It is for the tests' own request
// types, which always encode.
func JSON(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("rawhttp: encoding %T: %v", v, err))
	}
	return string(b)
}

// Call sends method to url with body and decodes a 200 answer into out (nil: ignores
// it). Any other answer is an error that names the status and code (Expect).
func (c Client) Call(method, url, body string, out any) error {
	a := c.Do(method, url, body)
	if err := a.Expect(http.StatusOK); err != nil || out == nil {
		return err
	}
	return a.Decode(out)
}

// Get fetches url and decodes a 200 answer into out.
func (c Client) Get(url string, out any) error { return c.Call(http.MethodGet, url, "", out) }

// infoClient asks for GET /v1/cluster when the caller names no client: a node that does
// not answer within 2 s is treated as down.
var infoClient = &http.Client{Timeout: 2 * time.Second}

// ClusterInfo fetches GET /v1/cluster from base through hc (nil is a client with a 2 s
// timeout).
func ClusterInfo(hc *http.Client, base string) (api.Cluster, error) {
	if hc == nil {
		hc = infoClient
	}
	var out api.Cluster
	return out, Client{HTTP: hc}.Get(base+"/v1/cluster", &out)
}

// WaitStatus polls GET /v1/locks/{name} on base until cond holds (10 s at most).
func WaitStatus(t testing.TB, base, name string, cond func(api.LockStatus) bool) api.LockStatus {
	t.Helper()
	var last api.LockStatus
	testkit.WaitFor(t, 10*time.Second, "status of lock "+name, func() bool {
		return Client{}.Get(base+"/v1/locks/"+name, &last) == nil && cond(last)
	})
	return last
}
