package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
)

// apiRequest is httptest.NewRequest as a raftlock client sends it: to an IP address
// (httptest's example.com is no name a node answers for) and, with a body, declared JSON.
func apiRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1"
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}
