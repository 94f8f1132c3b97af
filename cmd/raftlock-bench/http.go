package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// httpClient is a minimal JSON client for the raftlock API, tuned for load generation:
// keep-alive connections, enough idle connections per host for every client, no
// compression, no client-wide timeout (each call's context bounds it, since a waiting
// acquire may legitimately take wait_ms).
type httpClient struct {
	hc *http.Client
}

// Security settings for every client of this run (set from flags by setSecurity).
var (
	benchTLS   *tls.Config
	benchToken string
	// benchHTTP2 sends every request over HTTP/2 (h2c without TLS): all clients share
	// one connection per server instead of one connection each.
	benchHTTP2 bool
)

// setSecurity reads --tls-* and the ACL token: a benchmark of a secured cluster pays
// exactly what its clients pay (handshakes, token checks).
func setSecurity(c *cli.Context) error {
	if ca := c.String("tls-ca"); ca != "" {
		cfg, err := client.TLSFromFiles(ca, c.String("tls-cert"), c.String("tls-key"))
		if err != nil {
			return err
		}
		benchTLS = cfg
	}
	benchHTTP2 = c.Bool("http2")
	benchToken = os.Getenv("RAFTLOCK_ACL_TOKEN")
	if f := c.String("acl-token-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("--acl-token-file: %w", err)
		}
		benchToken = strings.TrimSpace(string(b))
	}
	return nil
}

func newHTTPClient(conns int) *httpClient {
	tr := &http.Transport{
		TLSClientConfig:     benchTLS,
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no global limit
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	if benchHTTP2 {
		p := new(http.Protocols)
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
	}
	return &httpClient{hc: &http.Client{Transport: tr}}
}

// close drops the idle connections.
func (c *httpClient) close() { c.hc.CloseIdleConnections() }

// do sends body (nil for none) and decodes a 2xx answer into out (nil to discard it).
// A non-2xx answer in the API's error form becomes an *api.Error.
func (c *httpClient) do(ctx context.Context, method, url string, body []byte, out any) error {
	return c.doAs(ctx, benchToken, method, url, body, out)
}

// doAs is do with token as the request's ACL token ("" for none): the neighbour workload
// speaks as several tenants.
func (c *httpClient) doAs(ctx context.Context, token, method, url string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set(api.AuthorizationHeader, "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading answer: %w", method, url, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb api.ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return &api.Error{Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, url, err)
	}
	return nil
}
