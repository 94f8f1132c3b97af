// Package testcluster starts real raftlock clusters for tests, with their HTTP APIs:
//
//   - StartInProcess: n nodes in the test process (real raft, BoltDB, TCP and HTTP on
//     loopback), for fast API and client tests;
//   - StartProcesses, NewProcessesWith: n separate `raftlock serve` processes built from
//     this module, for tests that kill -9 or SIGSTOP a server, run nodes in network
//     namespaces or behind fault-injecting proxies. Every test that starts server
//     processes starts them through Processes.
//
// Both wait on conditions with deadlines, never on fixed sleeps.
package testcluster

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/transport"
)

// InProcess is an in-process cluster with an HTTP server per node.
type InProcess struct {
	*clustertest.Cluster
	// ServerTune, when set, adjusts each node's HTTP server config (ACLs, TLS).
	ServerTune func(i int, c *transport.Config)
	t          testing.TB
	mu         sync.Mutex
	servers    []*transport.Server
	addrs      []string
}

// StartInProcess starts an n-node cluster with HTTP servers and waits until every node
// knows the leader's HTTP address.
func StartInProcess(t testing.TB, n int, tune func(i int, c *cluster.Config)) *InProcess {
	t.Helper()
	return StartInProcessWith(t, n, tune, nil)
}

// StartInProcessWith is StartInProcess with serverTune adjusting each HTTP server's config.
func StartInProcessWith(t testing.TB, n int, tune func(i int, c *cluster.Config), serverTune func(i int, c *transport.Config)) *InProcess {
	t.Helper()
	ip := &InProcess{t: t, ServerTune: serverTune}
	// Hold the HTTP listeners from the start, so nothing can take their ports while the
	// cluster elects a leader.
	listeners := make([]net.Listener, n)
	for i := 0; i < n; i++ {
		listeners[i] = testkit.Listen(t)
		ip.addrs = append(ip.addrs, listeners[i].Addr().String())
	}
	ip.servers = make([]*transport.Server, n)
	ip.Cluster = clustertest.Start(t, n, func(i int, c *cluster.Config) {
		c.HTTPAddr = ip.addrs[i]
		if tune != nil {
			tune(i, c)
		}
	})
	for i := range ip.addrs {
		ip.serve(i, listeners[i])
	}
	t.Cleanup(func() {
		for i := range ip.servers {
			ip.StopHTTP(i)
		}
	})
	ip.WaitForwarding()
	return ip
}

func (ip *InProcess) serve(i int, l net.Listener) {
	ip.t.Helper()
	cfg := transport.Config{Services: transport.NodeServices(ip.Nodes[i]), Logger: clustertest.Logger(ip.t, fmt.Sprintf("n%d-http", i+1)), RegisterInterval: 100 * time.Millisecond}
	if ip.ServerTune != nil {
		ip.ServerTune(i, &cfg)
	}
	srv, err := transport.NewServer(cfg)
	if err != nil {
		ip.t.Fatal(err)
	}
	if l == nil {
		testkit.WaitFor(ip.t, 10*time.Second, "HTTP port "+ip.addrs[i], func() bool {
			l, err = net.Listen("tcp", ip.addrs[i])
			return err == nil
		})
	}
	ip.mu.Lock()
	ip.servers[i] = srv
	ip.mu.Unlock()
	go srv.Serve(l)
}

// StopHTTP stops node i's HTTP server.
func (ip *InProcess) StopHTTP(i int) {
	ip.mu.Lock()
	srv := ip.servers[i]
	ip.servers[i] = nil
	ip.mu.Unlock()
	if srv != nil {
		srv.Shutdown(clustertest.Ctx(ip.t, 5*time.Second))
	}
}

// RestartNode restarts node i (raft and HTTP) from its data directory.
func (ip *InProcess) RestartNode(i int) {
	ip.t.Helper()
	ip.StopHTTP(i)
	ip.Restart(i)
	ip.serve(i, nil)
}

// StopNode stops node i (raft and HTTP).
func (ip *InProcess) StopNode(i int) {
	ip.StopHTTP(i)
	ip.Stop(i)
}

// URL returns node i's base URL.
func (ip *InProcess) URL(i int) string { return "http://" + ip.addrs[i] }

// Endpoints returns every node's base URL.
func (ip *InProcess) Endpoints() []string {
	var out []string
	for i := range ip.addrs {
		out = append(out, ip.URL(i))
	}
	return out
}

// WaitForwarding waits until every running node knows the leader's HTTP address.
func (ip *InProcess) WaitForwarding() {
	ip.t.Helper()
	ip.WaitFor(15*time.Second, "every node to know the leader's HTTP address", func() bool {
		for _, n := range ip.Nodes {
			if n != nil && n.LeaderHTTPAddr() == "" {
				return false
			}
		}
		return ip.LeaderIndex() >= 0
	})
}
