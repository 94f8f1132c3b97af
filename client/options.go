package client

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
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
