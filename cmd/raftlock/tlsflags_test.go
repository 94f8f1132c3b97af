package main

import (
	"os"
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

// TestCLI_TLSCAMakesItsDirectory follows docs/SECURITY.md's first step on a fresh machine:
// `raftlock tls ca --dir pki` where pki/ does not exist yet makes it, private (0700), and
// `tls cert` then finds the CA there.
func TestCLI_TLSCAMakesItsDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, errOut, code := runApp(t, nil, "tls", "ca", "--dir", "pki"); code != 0 {
		t.Fatalf("tls ca --dir pki on a fresh machine: exit %d: %s", code, errOut)
	}
	fi, err := os.Stat("pki")
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("pki: %v, %v; want a directory with mode 0700", err, fi)
	}
	if _, errOut, code := runApp(t, nil, "tls", "cert", "--node", "n1", "--dir", "pki"); code != 0 {
		t.Fatalf("tls cert --node n1 --dir pki: exit %d: %s", code, errOut)
	}
	for _, f := range []string{"ca.pem", "ca-key.pem", "n1.pem", "n1-key.pem"} {
		if _, err := os.Stat(filepath.Join("pki", f)); err != nil {
			t.Errorf("pki/%s: %v", f, err)
		}
	}
}
