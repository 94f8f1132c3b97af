package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestStartPprof_LoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:6060", "example.com:6060", "6060"} {
		if stop, err := startPprof(addr, hclog.NewNullLogger()); err == nil {
			stop()
			t.Errorf("startPprof(%q) served profiles off loopback", addr)
		}
	}
}

func TestStartPprof_ServesHeapProfile(t *testing.T) {
	// Find a free loopback port, then serve there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, err := startPprof(addr, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET /debug/pprof/heap: %d %.200q", resp.StatusCode, body)
	}
	if stop, err := startPprof("", hclog.NewNullLogger()); err != nil {
		t.Fatalf("empty --pprof-addr: %v", err)
	} else {
		stop()
	}
}
