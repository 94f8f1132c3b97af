package clustertest

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// Links puts a TCP proxy on every ordered pair of nodes of an in-process cluster, so that a
// test can cut one node off from the others. All nodes share one process, so a proxy in
// front of a node could not tell which node dialled it; instead each node is bootstrapped
// with its own view of the configuration, in which every other node's address is the proxy
// of the link (self -> other). Node i's requests to j, and j's answers, all travel on
// connections through link (i, j).
//
// Use it only in clusters whose membership does not change: a configuration entry
// replicated from the leader would replace a node's private addresses.
type Links struct {
	t     testing.TB
	mu    sync.Mutex
	binds []string               // each node's real Raft address
	links map[[2]int]*link       // (from, to) -> proxy
	conns map[*linkConn]struct{} // open proxied connections, for closing on Cut
}

type link struct {
	l   net.Listener
	cut bool
}

type linkConn struct {
	from, to  int
	a, b      net.Conn
	closeOnce sync.Once
}

func (c *linkConn) close() {
	c.closeOnce.Do(func() {
		c.a.Close()
		c.b.Close()
	})
}

// NewLinks returns an empty set of links; pass its Tune to Start (from your own tune
// function if you need one).
func NewLinks(t testing.TB) *Links {
	lk := &Links{t: t, links: map[[2]int]*link{}, conns: map[*linkConn]struct{}{}}
	t.Cleanup(lk.close)
	return lk
}

// Tune rewrites node i's bootstrap list so that i dials every other node through the link
// proxy (i, j). Start calls it for each node in order; the first call opens every proxy.
func (lk *Links) Tune(i int, c *cluster.Config) {
	lk.t.Helper()
	lk.mu.Lock()
	if lk.binds == nil {
		for _, p := range c.Bootstrap {
			lk.binds = append(lk.binds, p.RaftAddr)
		}
		for from := range lk.binds {
			for to := range lk.binds {
				if from != to {
					lk.links[[2]int{from, to}] = &link{l: testkit.Listen(lk.t)}
				}
			}
		}
		for key, l := range lk.links {
			go lk.accept(key, l.l)
		}
	}
	peers := make([]cluster.Peer, len(c.Bootstrap))
	copy(peers, c.Bootstrap)
	for j := range peers {
		if j != i {
			peers[j].RaftAddr = lk.links[[2]int{i, j}].l.Addr().String()
		}
	}
	lk.mu.Unlock()
	c.Bootstrap = peers
}

// Addr returns the address through which node from dials node to.
func (lk *Links) Addr(from, to int) string {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.links[[2]int{from, to}].l.Addr().String()
}

// Bind returns node i's real Raft address (bypassing every proxy).
func (lk *Links) Bind(i int) string {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.binds[i]
}

// Isolate cuts node i off from every other node, both ways: open connections are closed
// and new ones are closed as soon as they are accepted.
func (lk *Links) Isolate(i int) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	for key, l := range lk.links {
		if key[0] == i || key[1] == i {
			l.cut = true
		}
	}
	for c := range lk.conns {
		if c.from == i || c.to == i {
			c.close()
			delete(lk.conns, c)
		}
	}
}

// Heal restores every link.
func (lk *Links) Heal() {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	for _, l := range lk.links {
		l.cut = false
	}
}

func (lk *Links) close() {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	for _, l := range lk.links {
		l.l.Close()
	}
	for c := range lk.conns {
		c.close()
	}
	lk.conns = map[*linkConn]struct{}{}
}

func (lk *Links) accept(key [2]int, l net.Listener) {
	for {
		a, err := l.Accept()
		if err != nil {
			return
		}
		go lk.serve(key, a)
	}
}

func (lk *Links) serve(key [2]int, a net.Conn) {
	lk.mu.Lock()
	cut, backend := lk.links[key].cut, lk.binds[key[1]]
	lk.mu.Unlock()
	if cut {
		a.Close()
		return
	}
	b, err := net.Dial("tcp", backend)
	if err != nil {
		a.Close() // the node is down: the dialler sees its connection closed
		return
	}
	c := &linkConn{from: key[0], to: key[1], a: a, b: b}
	lk.mu.Lock()
	if lk.links[key].cut {
		lk.mu.Unlock()
		c.close()
		return
	}
	lk.conns[c] = struct{}{}
	lk.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, a); done <- struct{}{} }()
	go func() { _, _ = io.Copy(a, b); done <- struct{}{} }()
	<-done
	c.close()
	<-done
	lk.mu.Lock()
	delete(lk.conns, c)
	lk.mu.Unlock()
}
