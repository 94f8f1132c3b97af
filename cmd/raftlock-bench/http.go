package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/raftlock/raftlock/api"
)

// httpClient is a minimal JSON client for the raftlock API, tuned for load generation:
// keep-alive connections, enough idle connections per host for every client, no
// compression, no client-wide timeout (each call's context bounds it, since a waiting
// acquire may legitimately take wait_ms).
type httpClient struct {
	hc *http.Client
}

func newHTTPClient(conns int) *httpClient {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no global limit
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &httpClient{hc: &http.Client{Transport: tr}}
}

// close drops the idle connections.
func (c *httpClient) close() { c.hc.CloseIdleConnections() }

// do sends body (nil for none) and decodes a 2xx answer into out (nil to discard it).
// A non-2xx answer in the API's error form becomes an *api.Error.
func (c *httpClient) do(ctx context.Context, method, url string, body []byte, out any) error {
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
