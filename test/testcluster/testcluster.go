// Package testcluster starts real raftlock clusters for tests, with their HTTP APIs:
//
//   - StartInProcess: n nodes in the test process (real raft, BoltDB, TCP and HTTP on
//     loopback), for fast API and client tests;
//   - StartProcesses: n separate `raftlock serve` processes built from this module, for
//     tests that kill -9 or SIGSTOP a server.
//
// Both wait on conditions with deadlines, never on fixed sleeps.
package testcluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
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
		listeners[i] = clustertest.Listen(t)
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
		clustertest.WaitFor(ip.t, 10*time.Second, "HTTP port "+ip.addrs[i], func() bool {
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

// ClusterInfo fetches GET /v1/cluster from base.
func ClusterInfo(base string) (api.Cluster, error) {
	return ClusterInfoWith(&http.Client{Timeout: 2 * time.Second}, base)
}

// ClusterInfoWith fetches GET /v1/cluster from base with client c.
func ClusterInfoWith(c *http.Client, base string) (api.Cluster, error) {
	var out api.Cluster
	resp, err := c.Get(base + "/v1/cluster")
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("GET %s/v1/cluster: %s", base, resp.Status)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// WaitStatus polls GET /v1/locks/{name} on base until cond holds (10 s at most).
func WaitStatus(t testing.TB, base, name string, cond func(api.LockStatus) bool) api.LockStatus {
	t.Helper()
	var last api.LockStatus
	clustertest.WaitFor(t, 10*time.Second, "status of lock "+name, func() bool {
		resp, err := http.Get(base + "/v1/locks/" + name)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&last) != nil {
			return false
		}
		return cond(last)
	})
	return last
}
