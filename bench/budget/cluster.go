package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/transport"
)

// member is one node of the in-process cluster with its HTTP server.
type member struct {
	node *cluster.Node
	srv  *transport.Server
	url  string
}

// inproc is a three-node cluster in this process: real raft over loopback TCP, real log
// stores on disk, the HTTP API on loopback, all recording into one budget.Recorder.
type inproc struct {
	members []*member
}

// startCluster starts three nodes with the given log store under dir and waits until a
// leader is ready and every node knows its HTTP address.
func startCluster(ctx context.Context, dir string, store cluster.LogStoreKind, rec *budget.Recorder, logger hclog.Logger) (*inproc, error) {
	var peers []cluster.Peer
	for i := 1; i <= 3; i++ {
		addr, err := testkit.FreeAddr()
		if err != nil {
			return nil, err
		}
		peers = append(peers, cluster.Peer{ID: fmt.Sprintf("n%d", i), RaftAddr: addr})
	}
	c := &inproc{}
	for _, p := range peers {
		l, err := testkit.ListenLoopback()
		if err != nil {
			c.stop()
			return nil, err
		}
		node, err := cluster.New(cluster.Config{ID: p.ID, RaftBind: p.RaftAddr, HTTPAddr: l.Addr().String(),
			DataDir: filepath.Join(dir, p.ID), LogStore: store, Bootstrap: peers, Logger: logger.Named(p.ID), Budget: rec})
		if err != nil {
			l.Close()
			c.stop()
			return nil, err
		}
		srv, err := transport.NewServer(transport.Config{Services: transport.NodeServices(node), Logger: logger.Named(p.ID), Budget: rec})
		if err != nil {
			l.Close()
			_ = node.Shutdown()
			c.stop()
			return nil, err
		}
		go func() { _ = srv.Serve(l) }()
		c.members = append(c.members, &member{node: node, srv: srv, url: "http://" + l.Addr().String()})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c.ready() {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, errors.New("no ready leader known to every node within 30 s")
		}
		select {
		case <-ctx.Done():
			c.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ready says whether a leader is ready and every node can forward to it.
func (c *inproc) ready() bool {
	if c.leader() == nil {
		return false
	}
	for _, m := range c.members {
		if m.node.LeaderHTTPAddr() == "" || !m.node.Ready() {
			return false
		}
	}
	return true
}

// leader returns the ready leader, or nil.
func (c *inproc) leader() *member {
	for _, m := range c.members {
		if m.node.IsLeader() && m.node.Ready() {
			return m
		}
	}
	return nil
}

// follower returns a member that does not lead.
func (c *inproc) follower() *member {
	for _, m := range c.members {
		if !m.node.IsLeader() {
			return m
		}
	}
	return nil
}

// stop shuts every server and node down.
func (c *inproc) stop() {
	for _, m := range c.members {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = m.srv.Shutdown(sctx)
		cancel()
		_ = m.node.Shutdown()
	}
	c.members = nil
}
