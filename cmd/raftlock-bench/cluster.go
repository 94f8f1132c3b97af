package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

// node is one server of the cluster under test, as far as the benchmark could find it.
type node struct {
	ID       string
	HTTPAddr string // host:port, from GET /v1/cluster
	PID      int    // 0 when the process was not found
	DataDir  string // absolute, "" when unknown
}

// URL returns the node's base URL.
func (n *node) URL() string {
	if benchTLS != nil {
		return "https://" + n.HTTPAddr
	}
	return "http://" + n.HTTPAddr
}

// clusterView is the cluster under test: its nodes, and the server processes whose CPU
// the benchmark charges (which may include pids given by hand that match no node).
type clusterView struct {
	endpoints []string
	nodes     []*node
	pids      []int
}

// discover asks the endpoints for the cluster's membership and finds the server
// processes: the pids given, else those in $RAFTLOCK_STATE/*/pid, else the local
// `raftlock serve` processes whose --http-addr is a member's HTTP address.
func discover(ctx context.Context, hc *httpClient, endpoints []string, pidList, stateDir string) (*clusterView, error) {
	cv := &clusterView{endpoints: endpoints}
	info, err := clusterInfo(ctx, hc, endpoints, 15*time.Second)
	if err != nil {
		return nil, err
	}
	// Followers register their HTTP addresses a moment after a fresh cluster elects its
	// leader; a node found without one would go unmeasured (its CPU counted as other load).
	for deadline := time.Now().Add(10 * time.Second); !allRegistered(info) && time.Now().Before(deadline) && ctx.Err() == nil; {
		benchkit.Sleep(ctx, 200*time.Millisecond)
		if next, err := clusterInfo(ctx, hc, endpoints, 5*time.Second); err == nil {
			info = next
		}
	}
	for _, m := range info.Nodes {
		cv.nodes = append(cv.nodes, &node{ID: m.ID, HTTPAddr: m.HTTPAddr})
	}
	var pids []int
	switch {
	case pidList != "":
		if pids, err = benchkit.ParsePIDs(pidList); err != nil {
			return nil, err
		}
	case stateDir != "":
		// Pid files of another cluster (a stale $RAFTLOCK_STATE) must not be measured.
		for _, pid := range benchkit.ReadPIDFiles(filepath.Join(stateDir, "*", "pid")) {
			if args, err := benchkit.ProcArgs(pid); err == nil && cv.nodeByAddr(benchkit.FlagValue(args, "--http-addr")) != nil {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) == 0 {
		pids = benchkit.FindProcs(func(args []string) bool {
			return slices.Contains(args, "serve") && cv.nodeByAddr(benchkit.FlagValue(args, "--http-addr")) != nil
		})
	}
	cv.pids = pids
	for _, pid := range pids {
		args, err := benchkit.ProcArgs(pid)
		if err != nil {
			continue
		}
		n := cv.nodeByAddr(benchkit.FlagValue(args, "--http-addr"))
		if n == nil {
			continue
		}
		n.PID = pid
		if dd := benchkit.FlagValue(args, "--data-dir"); dd != "" {
			if !filepath.IsAbs(dd) {
				if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
					dd = filepath.Join(cwd, dd)
				}
			}
			n.DataDir = dd
		}
	}
	return cv, nil
}

func allRegistered(info api.Cluster) bool {
	for _, m := range info.Nodes {
		if m.HTTPAddr == "" {
			return false
		}
	}
	return true
}

// nodeByAddr finds the node listening on addr; hosts that all mean this machine
// (127.0.0.1, localhost, 0.0.0.0, empty) match each other when the ports agree.
func (cv *clusterView) nodeByAddr(addr string) *node {
	if addr == "" {
		return nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	local := func(h string) bool {
		return h == "" || h == "localhost" || h == "0.0.0.0" || h == "::" || strings.HasPrefix(h, "127.")
	}
	for _, n := range cv.nodes {
		if n.HTTPAddr == addr {
			return n
		}
		nh, np, err := net.SplitHostPort(n.HTTPAddr)
		if err == nil && np == p && local(nh) && local(h) {
			return n
		}
	}
	return nil
}

func (cv *clusterView) node(id string) *node {
	for _, n := range cv.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// leader asks the cluster who leads and returns that node.
func (cv *clusterView) leader(ctx context.Context, hc *httpClient) (*node, error) {
	info, err := clusterInfo(ctx, hc, cv.endpoints, 15*time.Second)
	if err != nil {
		return nil, err
	}
	n := cv.node(info.LeaderID)
	if n == nil {
		for _, m := range info.Nodes {
			if m.ID == info.LeaderID {
				n = &node{ID: m.ID, HTTPAddr: m.HTTPAddr}
				cv.nodes = append(cv.nodes, n)
			}
		}
	}
	if n == nil || n.HTTPAddr == "" {
		return nil, fmt.Errorf("leader %q has no known HTTP address", info.LeaderID)
	}
	return n, nil
}

// clusterInfo asks each endpoint in turn for GET /v1/cluster until one names a leader
// whose HTTP address is registered, for at most timeout.
func clusterInfo(ctx context.Context, hc *httpClient, endpoints []string, timeout time.Duration) (api.Cluster, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		for _, ep := range endpoints {
			var info api.Cluster
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := hc.do(cctx, "GET", strings.TrimRight(ep, "/")+"/v1/cluster", nil, &info)
			cancel()
			if err != nil {
				last = err
				continue
			}
			for _, m := range info.Nodes {
				if m.ID == info.LeaderID && info.LeaderID != "" && m.HTTPAddr != "" {
					return info, nil
				}
			}
			last = errors.New("no leader with a registered HTTP address yet")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return api.Cluster{}, fmt.Errorf("no endpoint of %v named a leader within %v: %w", endpoints, timeout, errors.Join(last, ctx.Err()))
		}
		benchkit.Sleep(ctx, 100*time.Millisecond)
	}
}

// nodeInfo fetches GET /v1/cluster from one node.
func nodeInfo(ctx context.Context, hc *httpClient, n *node) (api.Cluster, error) {
	var info api.Cluster
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := hc.do(cctx, "GET", n.URL()+"/v1/cluster", nil, &info)
	return info, err
}
