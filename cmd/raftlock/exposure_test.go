package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// serveWarnings runs serve's flag handling (serveConfig, as the serve command does before
// it opens anything) with args and returns the lines it logged at WARN or above.
func serveWarnings(t *testing.T, args ...string) []string {
	t.Helper()
	var buf bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Name: "n1", Level: hclog.Trace, Output: &buf})
	app := newApp()
	for _, cmd := range app.Commands {
		if cmd.Name == "serve" {
			cmd.Action = func(c *cli.Context) error {
				_, _, err := serveConfig(c, logger)
				return err
			}
		}
	}
	base := []string{"raftlock", "serve", "--id", "n1", "--data-dir", t.TempDir()}
	if err := app.Run(append(base, args...)); err != nil {
		t.Fatalf("serve %q: %v", args, err)
	}
	var warns []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
			warns = append(warns, line)
		}
	}
	return warns
}

// TestServe_WarnsWhenExposed: serve warns once at start (go-hclog, WARN) when its HTTP or
// Raft address listens beyond loopback while neither TLS nor ACLs are on, naming the
// addresses and what to do (the TLS flags and --acl, or loopback); with only one of the
// two it warns about what is still open. On loopback, and with TLS (client certificates
// required) and ACLs, it says nothing.
func TestServe_WarnsWhenExposed(t *testing.T) {
	dir := makePKI(t)
	tls := []string{"--tls-cert", filepath.Join(dir, "n1.pem"), "--tls-key", filepath.Join(dir, "n1-key.pem"), "--tls-ca", filepath.Join(dir, "ca.pem")}
	require := append(append([]string{}, tls...), "--tls-client-auth", "require")
	addrs := func(http, raft string) []string {
		a := []string{"--http-addr", http, "--raft-addr", raft}
		if strings.HasPrefix(http, "0.0.0.0") {
			a = append(a, "--http-advertise", "10.0.0.1:7001")
		}
		if strings.HasPrefix(raft, "0.0.0.0") {
			a = append(a, "--raft-advertise", "10.0.0.1:8001")
		}
		return a
	}
	const neither = "with neither TLS nor ACLs"
	for _, c := range []struct {
		name string
		args []string
		want []string // substrings of the one warning; none means no warning
	}{
		{"defaults (loopback)", nil, nil},
		{"loopback by name and IPv6", addrs("localhost:7001", "[::1]:8001"), nil},
		{"HTTP on every interface", addrs("0.0.0.0:7001", "127.0.0.1:8001"), []string{neither, "http_addr=0.0.0.0:7001", "--tls-cert/--tls-key/--tls-ca", "--acl", "loopback", "add or remove voters"}},
		{"Raft on a LAN address", addrs("127.0.0.1:7001", "10.0.0.1:8001"), []string{neither, "raft_addr=10.0.0.1:8001", "--tls-cert/--tls-key/--tls-ca", "--acl", "loopback"}},
		{"both on a host name", addrs("lock1.internal:7001", "lock1.internal:8001"), []string{neither, "http_addr=lock1.internal:7001", "raft_addr=lock1.internal:8001"}},
		{"ACLs without TLS", append(addrs("0.0.0.0:7001", "0.0.0.0:8001"), "--acl", "--acl-node-token-file", writeFile(t, "token")), []string{"with ACLs but without TLS", "Raft port", "--tls-cert/--tls-key/--tls-ca", "loopback"}},
		{"TLS without client certificates or ACLs", append(addrs("0.0.0.0:7001", "0.0.0.0:8001"), tls...), []string{"neither client certificates nor ACLs", "--acl", "--tls-client-auth require", "loopback"}},
		{"TLS with client certificates required, no ACLs", append(addrs("0.0.0.0:7001", "0.0.0.0:8001"), require...), nil},
		{"TLS and ACLs", append(append(addrs("0.0.0.0:7001", "0.0.0.0:8001"), tls...), "--acl"), nil},
		{"TLS with client certificates required and ACLs", append(append(addrs("0.0.0.0:7001", "0.0.0.0:8001"), require...), "--acl"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			warns := serveWarnings(t, c.args...)
			if len(c.want) == 0 {
				if len(warns) != 0 {
					t.Fatalf("serve %q warned: %q", c.args, warns)
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("serve %q: %d warnings %q, want one", c.args, len(warns), warns)
			}
			for _, w := range c.want {
				if !strings.Contains(warns[0], w) {
					t.Errorf("serve %q: the warning %q does not say %q", c.args, warns[0], w)
				}
			}
		})
	}
}

// writeFile writes content into a new file of the test's and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServe_ExposedWarningInTheLog: the built binary, started as an operator would on
// every interface with the defaults otherwise, writes the warning to its log before
// "node started".
func TestServe_ExposedWarningInTheLog(t *testing.T) {
	p := testcluster.NewProcessesWith(t, 1, testcluster.Options{Addrs: func(i int, a *testcluster.Addrs) error {
		_, port, _ := strings.Cut(a.HTTP, ":")
		a.HTTP, a.HTTPAdvertise = "0.0.0.0:"+port, "127.0.0.1:"+port
		return nil
	}})
	p.StartAll()
	testkit.WaitFor(t, 30*time.Second, "n1 to log that it started", func() bool { return strings.Contains(p.Log(0), "node started") })
	log := p.Log(0)
	warn := strings.Index(log, "[WARN]  n1: this node listens beyond loopback with neither TLS nor ACLs")
	if warn < 0 || warn > strings.Index(log, "node started") {
		t.Fatalf("no warning before \"node started\" in the log:\n%s", log)
	}
}
