package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

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
	eps, plain, err := parseEndpoints(endpoints, c.tls != nil)
	if err != nil {
		return nil, err
	}
	c.endpoints = eps
	if c.maxBackoff < c.minBackoff {
		c.maxBackoff = c.minBackoff
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient(c.tls)
	}
	if plain && c.token != nil {
		c.log.Warn("an ACL token is sent over plain HTTP, where anyone on the path can read it; use https endpoints and TLS")
	}
	return c, nil
}

// defaultHTTPClient is the HTTP client of a Client made without WithHTTPClient: its own
// transport with keep-alive connections, speaking TLS with cfg when it is set.
func defaultHTTPClient(cfg *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if cfg != nil {
		tr.TLSClientConfig = cfg
	}
	return &http.Client{
		Transport: tr,
		// The API never redirects. Following one would send a request's body (lease
		// IDs) wherever the answer points, perhaps over plain HTTP.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Endpoints returns the endpoints the client uses.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// cleanupContext returns a context for a cleanup call (a revoke, a release nobody will
// use) made because ctx failed: it survives ctx's end and is bounded by one attempt
// timeout.
func (c *Client) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
}
