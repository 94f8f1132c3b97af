package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// IsLeader reports whether this node is a ready leader.
func (n *Node) IsLeader() bool { return n.leader.ready.Load() }

// HTTPAddr returns the HTTP address this node advertises (Config.HTTPAddr): the one it
// registers, and so the one other nodes forward to when it leads.
func (n *Node) HTTPAddr() string { return n.cfg.HTTPAddr }

// LeaderHTTPAddr returns the leader's registered HTTP address, or "" when no leader is
// known or it has not registered yet.
func (n *Node) LeaderHTTPAddr() string {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return ""
	}
	info, ok := n.fsm.Node(string(id))
	if !ok {
		return ""
	}
	return info.HTTPAddr
}

// How a node would handle a write now; see Serving.
const (
	// ServingLeader: this node is a ready leader and applies writes itself.
	ServingLeader = "leader"
	// ServingForward: another node leads, this node knows its HTTP address and has caught
	// up with the log, so it forwards writes there.
	ServingForward = "forward"
)

// leaderSilence is how long a follower may go without hearing from its leader before it
// stops claiming it would forward a write there: half the heartbeat timeout, five of
// raft's heartbeat intervals (250 ms by default, the leader's own lease). A leader that
// crashed or paused is still named by raft until the election timeout passes; a node
// that said ready then would send the next write to a dead leader.
func (n *Node) leaderSilence() time.Duration { return n.cfg.HeartbeatTimeout / 2 }

// Serving says how a write sent to this node now would be handled: ServingLeader,
// ServingForward, or "" when it would fail (no leader known, this node leads but is not
// ready yet, the leader has not been heard from for leaderSilence, the leader has not
// registered its HTTP address, or this node is still applying entries it knows are
// committed).
func (n *Node) Serving() string {
	if n.fsm.Halted() != nil || n.storage.check() != nil {
		return ""
	}
	if n.leader.ready.Load() {
		return ServingLeader
	}
	addr, id := n.raft.LeaderWithID()
	if addr == "" || string(id) == n.cfg.ID {
		return ""
	}
	if last := n.raft.LastContact(); last.IsZero() || time.Since(last) > n.leaderSilence() {
		return ""
	}
	if n.fsm.AppliedIndex() < n.raft.CommitIndex() {
		return ""
	}
	info, ok := n.fsm.Node(string(id))
	if !ok || info.HTTPAddr == "" || info.HTTPAddr == n.cfg.HTTPAddr {
		return ""
	}
	return ServingForward
}

// Ready reports whether a write sent to this node now would be served or forwarded.
func (n *Node) Ready() bool { return n.Serving() != "" }

// LeaderWatch returns the ID of the leader this node currently knows ("" during an
// election) and a channel that is closed at the next change of leader as raft reports it.
// A request forwarded to that leader is abandoned when the channel closes and the leader
// is no longer the same node.
func (n *Node) LeaderWatch() (string, <-chan struct{}) {
	ch := n.watch.next()
	_, id := n.raft.LeaderWithID()
	return string(id), ch
}

// ElectionTimeout returns raft's election timeout, the order of time a failover takes.
func (n *Node) ElectionTimeout() time.Duration { return n.cfg.ElectionTimeout }

// leaderWatch turns raft's leader observations into closed channels for LeaderWatch.
type leaderWatch struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at every leader change
	observer *raft.Observer
}

// start registers with r for leader changes until stopping closes. Observations are
// taken without blocking raft: a dropped observation still leaves one queued, and every
// wake-up re-reads the leader.
func (w *leaderWatch) start(r *raft.Raft, stopping <-chan struct{}) {
	obs := make(chan raft.Observation, 64)
	w.observer = raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(w.observer)
	go func() {
		for {
			select {
			case <-stopping:
				return
			case <-obs:
			}
			w.mu.Lock()
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
}

// next returns the channel closed at the next leader change.
func (w *leaderWatch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}
