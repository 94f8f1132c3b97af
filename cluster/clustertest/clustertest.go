// Package clustertest starts real multi-node raftlock clusters inside one test process:
// real raft, real BoltDB files under t.TempDir(), real TCP on loopback. It waits on
// conditions with deadlines, never on fixed sleeps.
package clustertest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// Cluster is a set of in-process nodes.
type Cluster struct {
	t     testing.TB
	mu    sync.Mutex
	Nodes []*cluster.Node
	cfgs  []cluster.Config
}

// Logger returns an hclog logger that writes through t.Log.
func Logger(t testing.TB, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: tWriter{t}, DisableTime: false})
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// Start bootstraps an n-node cluster and waits until a leader is ready. tune, when
// non-nil, adjusts each node's config before it starts (HTTPAddr is left for the caller).
func Start(t testing.TB, n int, tune func(i int, c *cluster.Config)) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	dir := t.TempDir()
	var peers []cluster.Peer
	for i := 0; i < n; i++ {
		peers = append(peers, cluster.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: testkit.FreePort(t)})
	}
	for i := 0; i < n; i++ {
		cfg := cluster.Config{
			ID:        peers[i].ID,
			RaftBind:  peers[i].RaftAddr,
			DataDir:   filepath.Join(dir, peers[i].ID),
			Bootstrap: peers,
			Logger:    Logger(t, peers[i].ID),
		}
		if tune != nil {
			tune(i, &cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		node, err := cluster.New(cfg)
		if err != nil {
			t.Fatalf("starting %s: %v", cfg.ID, err)
		}
		c.Nodes = append(c.Nodes, node)
	}
	t.Cleanup(c.Shutdown)
	c.Leader(10 * time.Second)
	return c
}

// SetConfig replaces node i's config for its next Restart (an upgrade, a new setting).
func (c *Cluster) SetConfig(i int, cfg cluster.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfgs[i] = cfg
}

// Config returns the config node i was started with.
func (c *Cluster) Config(i int) cluster.Config { return c.cfgs[i] }

// Leader waits up to timeout for a ready leader and returns its index.
func (c *Cluster) Leader(timeout time.Duration) int {
	c.t.Helper()
	var idx int
	c.WaitFor(timeout, "a ready leader", func() bool {
		idx = c.LeaderIndex()
		return idx >= 0
	})
	return idx
}

// LeaderIndex returns the index of a ready leader, or -1.
func (c *Cluster) LeaderIndex() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.Nodes {
		if n != nil && n.IsLeader() {
			return i
		}
	}
	return -1
}

// Follower returns the index of some live node that is not the leader.
func (c *Cluster) Follower() int {
	l := c.Leader(10 * time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.Nodes {
		if i != l && n != nil {
			return i
		}
	}
	c.t.Fatal("no follower")
	return -1
}

// Stop shuts node i down (its data stays on disk).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	n := c.Nodes[i]
	c.Nodes[i] = nil
	c.mu.Unlock()
	if n != nil {
		if err := n.Shutdown(); err != nil {
			c.t.Logf("shutdown %s: %v", n.ID(), err)
		}
	}
}

// Restart starts node i again from its data directory.
func (c *Cluster) Restart(i int) *cluster.Node {
	c.t.Helper()
	c.Stop(i)
	cfg := c.cfgs[i]
	var node *cluster.Node
	// The old listener may linger for a moment after shutdown.
	c.WaitFor(10*time.Second, "raft port free to restart "+cfg.ID, func() bool {
		var err error
		node, err = cluster.New(cfg)
		if err != nil {
			c.t.Logf("restart %s: %v", cfg.ID, err)
		}
		return err == nil
	})
	c.mu.Lock()
	c.Nodes[i] = node
	c.mu.Unlock()
	return node
}

// RestartAll stops every node, then starts them all again from their data directories:
// a full-cluster restart.
func (c *Cluster) RestartAll() {
	c.t.Helper()
	for i := range c.Nodes {
		c.Stop(i)
	}
	for i := range c.Nodes {
		c.Restart(i)
	}
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		c.Stop(i)
	}
}

// WaitFor is testkit.WaitFor with the cluster's test.
func (c *Cluster) WaitFor(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	testkit.WaitFor(c.t, timeout, what, cond)
}

// Ctx returns a context that ends with the test or after d.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
