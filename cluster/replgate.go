package cluster

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// replGate is the node's Raft transport as raft sees it: the network transport, except
// that a failed replication RPC (an AppendEntries that is not a heartbeat, or an
// InstallSnapshot) to a peer is handed back to raft only once that peer answers again,
// or once the wait no longer matters (this node no longer leads in that term, the peer
// left the configuration, the node stops).
//
// Why: hashicorp/raft v1.7.3 counts every failed replication RPC to a follower and sleeps
// 10 ms x 2^(failures-2) before the next one, up to 10.24 s (replication.go, replicateTo,
// maxFailureScale 12), and nothing cuts that sleep short when the follower answers
// heartbeats again. A follower down for more than about 10 s therefore waited up to 10 s
// after its restart before the leader sent it anything: commit index 0, /readyz 503. With
// the gate a peer that is down costs raft one counted failure per outage instead of one
// per attempt, so its backoff stays at 10 ms; the heartbeat, which raft already backs off
// to at most half the heartbeat timeout (an upstream change of its own), is what notices
// the peer's return.
// Nothing is made up: a failure is still returned as the error it was, and raft's idea of
// its followers' contact (its leader lease) comes from real answers only.
type replGate struct {
	*raft.NetworkTransport // every other call, and the optional interfaces, unchanged

	poll   time.Duration // how often a held failure looks at raft's state again
	raft   atomic.Pointer[raft.Raft]
	closed chan struct{}
	once   sync.Once

	mu    sync.Mutex
	peers map[raft.ServerAddress]*peerAnswers
}

// peerAnswers tells waiters when a peer answers an RPC.
type peerAnswers struct {
	answered chan struct{} // closed, and replaced, at each answer
	// returned counts the replication failures handed back to raft (after their wait);
	// tests read it (export_test.go).
	returned atomic.Uint64
}

func newReplGate(t *raft.NetworkTransport, heartbeatTimeout time.Duration) *replGate {
	return &replGate{
		NetworkTransport: t,
		poll:             max(heartbeatTimeout/10, time.Millisecond),
		closed:           make(chan struct{}),
		peers:            map[raft.ServerAddress]*peerAnswers{},
	}
}

// watch gives the gate the raft instance whose state ends a wait.
func (g *replGate) watch(r *raft.Raft) { g.raft.Store(r) }

// close ends every wait at once; the node calls it as it stops.
func (g *replGate) close() error {
	g.once.Do(func() { close(g.closed) })
	return nil
}

func (g *replGate) peer(addr raft.ServerAddress) *peerAnswers {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.peers[addr]
	if p == nil {
		p = &peerAnswers{answered: make(chan struct{})}
		g.peers[addr] = p
	}
	return p
}

// answered records that the peer at addr answered an RPC.
func (g *replGate) answered(addr raft.ServerAddress) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.peers[addr]; p != nil {
		close(p.answered)
		p.answered = make(chan struct{})
	}
}

// next returns the channel closed at the peer's next answer.
func (g *replGate) next(addr raft.ServerAddress) <-chan struct{} {
	p := g.peer(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	return p.answered
}

// hold waits, after a failed replication RPC of term to the peer id at addr, until the
// peer answers again or the wait stops mattering.
func (g *replGate) hold(id raft.ServerID, addr raft.ServerAddress, term uint64) {
	answered := g.next(addr)
	t := time.NewTicker(g.poll)
	defer t.Stop()
	for {
		select {
		case <-answered:
			return
		case <-g.closed:
			return
		case <-t.C:
			if !g.stillReplicating(id, term) {
				return
			}
		}
	}
}

// stillReplicating reports whether this node still leads in term with id a member, so
// that a replication goroutine for that peer is still waiting on the held RPC.
func (g *replGate) stillReplicating(id raft.ServerID, term uint64) bool {
	r := g.raft.Load()
	if r == nil || r.State() != raft.Leader || r.CurrentTerm() != term {
		return false
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == id {
			return true
		}
	}
	return false
}

// isHeartbeat reports whether req is one of raft's heartbeats, by the test its network
// transport applies to route them (net_transport.go, handleCommand).
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	leader := req.RPCHeader.Addr
	if len(leader) == 0 {
		leader = req.Leader //nolint:staticcheck // raft still sets it, for peers of old releases
	}
	return req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// AppendEntries sends the RPC; a failure that is not a heartbeat's is held (see replGate).
func (g *replGate) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := g.NetworkTransport.AppendEntries(id, target, args, resp)
	if err == nil {
		g.answered(target)
		return nil
	}
	if !isHeartbeat(args) {
		g.hold(id, target, args.Term)
		g.peer(target).returned.Add(1)
	}
	return err
}

// InstallSnapshot sends the snapshot; a failure is held (see replGate).
func (g *replGate) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := g.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
	if err == nil {
		g.answered(target)
		return nil
	}
	g.hold(id, target, args.Term)
	g.peer(target).returned.Add(1)
	return err
}

// RequestVote sends the RPC; an answer counts as the peer's.
func (g *replGate) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	err := g.NetworkTransport.RequestVote(id, target, args, resp)
	if err == nil {
		g.answered(target)
	}
	return err
}

// RequestPreVote sends the RPC; an answer counts as the peer's.
func (g *replGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	err := g.NetworkTransport.RequestPreVote(id, target, args, resp)
	if err == nil {
		g.answered(target)
	}
	return err
}

var (
	_ raft.Transport   = (*replGate)(nil)
	_ raft.WithClose   = (*replGate)(nil)
	_ raft.WithPreVote = (*replGate)(nil)
)
