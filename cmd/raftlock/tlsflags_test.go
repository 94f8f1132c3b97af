package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestServe_TLSClientAuthRequestIsRefused: --tls-client-auth request once did exactly
// what none does; serve now refuses it before opening anything, saying what to use.
func TestServe_TLSClientAuthRequestIsRefused(t *testing.T) {
	dir := makePKI(t)
	args := []string{"serve", "--id", "n1", "--data-dir", t.TempDir(), "--raft-addr", "127.0.0.1:1", "--http-addr", "127.0.0.1:1",
		"--tls-cert", filepath.Join(dir, "n1.pem"), "--tls-key", filepath.Join(dir, "n1-key.pem"), "--tls-ca", filepath.Join(dir, "ca.pem"),
		"--tls-client-auth", "request"}
	_, _, err := runInProcess(t, args...)
	if err == nil || !strings.Contains(err.Error(), "--tls-client-auth=request is no longer accepted") || !strings.Contains(err.Error(), "use none, or require") {
		t.Fatalf("serve --tls-client-auth request: %v; want the flag error naming none and require", err)
	}
}
