package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/transport"
)

func TestStartPprof_LoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:6060", "example.com:6060", "6060"} {
		if stop, err := startPprof(addr, &transport.BrowserPolicy{}, hclog.NewNullLogger()); err == nil {
			stop()
			t.Errorf("startPprof(%q) served profiles off loopback", addr)
		}
	}
}

func TestStartPprof_ServesHeapProfile(t *testing.T) {
	addr := servePprof(t, &transport.BrowserPolicy{})
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET /debug/pprof/heap: %d %.200q", resp.StatusCode, body)
	}
	if stop, err := startPprof("", &transport.BrowserPolicy{}, hclog.NewNullLogger()); err != nil {
		t.Fatalf("empty --pprof-addr: %v", err)
	} else {
		stop()
	}
}

// TestPprof_RefusesRebindingAndOtherOrigins: a page that rebinds its own name to
// 127.0.0.1 reaches the pprof listener with its name in Host, and must get neither the
// command line nor the goroutine dump; nor may a page of another origin read them.
func TestPprof_RefusesRebindingAndOtherOrigins(t *testing.T) {
	addr := servePprof(t, &transport.BrowserPolicy{AllowedHosts: []string{"ops.example"}})
	get := func(path, host, origin string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
		if got := get(path, "rebind.attacker.example:"+strings.Split(addr, ":")[1], ""); got != http.StatusMisdirectedRequest {
			t.Errorf("GET %s with a rebinding Host: %d, want 421", path, got)
		}
		if got := get(path, addr, "https://evil.example"); got != http.StatusForbidden {
			t.Errorf("GET %s from another origin: %d, want 403", path, got)
		}
		for _, host := range []string{addr, "localhost", "ops.example"} {
			if got := get(path, host, ""); got != http.StatusOK {
				t.Errorf("GET %s with Host %s: %d, want 200", path, host, got)
			}
		}
	}
}

// servePprof starts the pprof listener with policy on a free loopback port, stopped when
// the test ends, and returns its address.
func servePprof(t *testing.T, policy *transport.BrowserPolicy) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, err := startPprof(addr, policy, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr
}
