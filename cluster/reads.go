package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
)

// ReadBarrier makes a following read of the state machine linearizable: it notes the
// commit index, confirms with a heartbeat round that this node still leads, and waits
// until the state machine has applied that index. No log entry is written. On a follower
// it returns ErrNotLeader.
func (n *Node) ReadBarrier(ctx context.Context) error {
	if mutant.Is("follower-local-read") && n.raft.State() != raft.Leader {
		return nil
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	commit := n.raft.CommitIndex()
	if err := n.wait(n.raft.VerifyLeader()); err != nil && !mutant.Is("read-skip-verify-leader") {
		return n.notLeader()
	}
	if mutant.Is("read-skip-applied-wait") {
		return nil
	}
	select {
	case <-n.applied.wait(commit):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stopping:
		return ErrShutdown
	}
}

// LockStatus returns the state of lock name. Unless stale, the read is linearizable. With
// wait > 0 it is a blocking query: it returns as soon as the lock's modify index exceeds
// waitIndex, or after wait with the current state.
func (n *Node) LockStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.LockView, error) {
	if !stale {
		if err := n.ReadBarrier(ctx); err != nil {
			return fsm.LockView{}, err
		}
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		v := n.fsm.Lock(name)
		if wait <= 0 || v.ModifyIndex > waitIndex {
			return v, nil
		}
		// Watch, then look again: a change between the two reads is not missed.
		ch, cancel := n.events.watch(name, !v.Held)
		v2 := n.fsm.Lock(name)
		if v2.ModifyIndex > waitIndex || v2.Held != v.Held {
			cancel()
			continue
		}
		select {
		case <-ch:
		case <-timeout:
			cancel()
			return n.fsm.Lock(name), nil
		case <-ctx.Done():
			cancel()
			return fsm.LockView{}, ctx.Err()
		case <-n.stopping:
			cancel()
			return fsm.LockView{}, ErrShutdown
		}
	}
}

// Locks lists held locks whose names start with prefix and sort after after, in name
// order, at most limit of them (limit > 0), and reports whether more follow.
func (n *Node) Locks(ctx context.Context, prefix, after string, limit int, stale bool) ([]fsm.LockView, bool, error) {
	if !stale {
		if err := n.ReadBarrier(ctx); err != nil {
			return nil, false, err
		}
	}
	views, truncated := n.fsm.Locks(prefix, after, limit)
	return views, truncated, nil
}

// Lease returns a lease's state.
func (n *Node) Lease(ctx context.Context, id fsm.LeaseID, stale bool) (fsm.LeaseView, error) {
	if !stale {
		if err := n.ReadBarrier(ctx); err != nil {
			return fsm.LeaseView{}, err
		}
	}
	v, ok := n.fsm.Lease(id)
	if !ok {
		return v, ErrLeaseNotFound
	}
	return v, nil
}

// IsLeader reports whether this node is a ready leader.
func (n *Node) IsLeader() bool { return n.ready.Load() }

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

// Serving says how a write sent to this node now would be handled: ServingLeader,
// ServingForward, or "" when it would fail (no leader known, this node leads but is not
// ready yet, the leader has not registered its HTTP address, or this node is still
// applying entries it knows are committed).
func (n *Node) Serving() string {
	if n.fsm.Halted() != nil || n.storage.check() != nil {
		return ""
	}
	if n.ready.Load() {
		return ServingLeader
	}
	addr, id := n.raft.LeaderWithID()
	if addr == "" || string(id) == n.cfg.ID {
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
	n.leaderWatchMu.Lock()
	ch := n.leaderChanged
	n.leaderWatchMu.Unlock()
	_, id := n.raft.LeaderWithID()
	return string(id), ch
}

// ElectionTimeout returns raft's election timeout, the order of time a failover takes.
func (n *Node) ElectionTimeout() time.Duration { return n.cfg.ElectionTimeout }

// watchLeader turns raft's leader observations into closed channels for LeaderWatch.
func (n *Node) watchLeader(obs <-chan raft.Observation) {
	for {
		select {
		case <-n.stopping:
			return
		case <-obs:
		}
		n.leaderWatchMu.Lock()
		close(n.leaderChanged)
		n.leaderChanged = make(chan struct{})
		n.leaderWatchMu.Unlock()
	}
}

// NeedsRegistration reports whether the state machine lacks this node's current
// addresses, which a follower then registers through the leader.
func (n *Node) NeedsRegistration() bool {
	self, ok := n.fsm.Node(n.cfg.ID)
	return !ok || self != n.selfInfo()
}

// SelfInfo returns this node's registration.
func (n *Node) SelfInfo() fsm.NodeInfo { return n.selfInfo() }

// Member describes one server of the Raft configuration.
type Member struct {
	ID       string
	RaftAddr string
	HTTPAddr string
	Voter    bool
	Leader   bool
}

// Status is the node's view of the cluster.
type Status struct {
	LeaderID     string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Members      []Member
	// ProtocolVersion is the active protocol version this node has applied.
	ProtocolVersion uint64
	// Limits are the quotas in force.
	Limits fsm.Limits
}

// Status returns the node's view of the cluster.
func (n *Node) Status() Status {
	_, leader := n.raft.LeaderWithID()
	term, _ := strconv.ParseUint(n.raft.Stats()["term"], 10, 64)
	s := Status{
		LeaderID:        string(leader),
		Term:            term,
		CommitIndex:     n.raft.CommitIndex(),
		AppliedIndex:    n.fsm.AppliedIndex(),
		ProtocolVersion: n.fsm.Version(),
		Limits:          n.fsm.Limits(),
	}
	for _, srv := range n.servers() {
		m := Member{ID: string(srv.ID), RaftAddr: string(srv.Address), Voter: srv.Suffrage == raft.Voter, Leader: srv.ID == leader}
		if info, ok := n.fsm.Node(m.ID); ok {
			m.HTTPAddr = info.HTTPAddr
		}
		s.Members = append(s.Members, m)
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].ID < s.Members[j].ID })
	return s
}

// AddVoter adds a voting member and records its addresses, or re-registers the HTTP
// address of an existing member. An existing member is moved to another Raft address only
// with replace: otherwise anyone allowed to register could take over a member's
// replication stream (raft's AddVoter silently re-points an existing ID).
func (n *Node) AddVoter(ctx context.Context, info fsm.NodeInfo, replace bool) error {
	if !ValidID(info.ID) {
		return fmt.Errorf("%w: node ID %q must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'", ErrInvalidMember, info.ID)
	}
	if err := ValidateAddr("raft_addr", info.RaftAddr); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMember, err)
	}
	if err := ValidateAddr("http_addr", info.HTTPAddr); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMember, err)
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	cur, member := n.MemberRaftAddr(info.ID)
	switch {
	case member && cur != info.RaftAddr && !replace:
		return fmt.Errorf("%w: member %s is at %s; to move it to %s pass replace (raftlock cluster add --replace)", ErrMemberConflict, info.ID, cur, info.RaftAddr)
	case !member || cur != info.RaftAddr:
		if err := n.wait(n.raft.AddVoter(raft.ServerID(info.ID), raft.ServerAddress(info.RaftAddr), 0, n.cfg.ApplyTimeout)); err != nil {
			return n.raftErr(err)
		}
	}
	_, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeRegisterNode, Node: info})
	return err
}

// RemoveServer removes a member from the cluster and forgets its addresses. Asked to
// remove itself while it leads, the node first hands leadership to another voter and
// answers ErrNotLeader, so the request is forwarded to the new leader, which removes it
// without an election timeout's worth of unavailability.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	if _, member := n.MemberRaftAddr(id); !member {
		return ErrNotMember
	}
	if id == n.cfg.ID && len(n.servers()) > 1 {
		if err := n.wait(n.raft.LeadershipTransfer()); err != nil {
			return fmt.Errorf("cluster: handing leadership over before removing this node: %w", n.raftErr(err))
		}
		n.log.Info("handed leadership over before removing this node")
		return ErrNotLeader
	}
	if err := n.wait(n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout)); err != nil {
		return n.raftErr(err)
	}
	_, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeRemoveNode, Node: fsm.NodeInfo{ID: id}})
	return err
}

// TransferLeadership hands leadership to voter to ("" for any) and returns the new
// leader's ID once this node has seen it.
func (n *Node) TransferLeadership(ctx context.Context, to string) (string, error) {
	if err := n.waitReady(ctx); err != nil {
		return "", err
	}
	var f raft.Future
	if to == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr, member := n.MemberRaftAddr(to)
		if !member {
			return "", ErrNotMember
		}
		if to == n.cfg.ID {
			return to, nil
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(addr))
	}
	if err := n.wait(f); err != nil {
		return "", n.raftErr(err)
	}
	// The transfer is done once the target has been told to campaign; wait (briefly) until
	// this node hears of the new leader, so the answer names it.
	deadline := time.Now().Add(4 * n.cfg.ElectionTimeout)
	for {
		if _, id := n.raft.LeaderWithID(); id != "" && string(id) != n.cfg.ID {
			return string(id), nil
		}
		if time.Now().After(deadline) {
			return "", nil
		}
		select {
		case <-ctx.Done():
			return "", nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (n *Node) raftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return n.notLeader()
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w (%v)", ErrUnknownOutcome, err)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNoLeader
	}
	return err
}

// HasMember reports whether id is in the Raft configuration.
func (n *Node) HasMember(id string) bool {
	for _, s := range n.servers() {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// WatchCount returns the number of registered blocking-query watches, for tests and
// diagnostics.
func (n *Node) WatchCount() int { return n.events.watchCount() }

// MetricsSnapshot returns the node's gauges for the metrics endpoint.
func (n *Node) MetricsSnapshot() map[string]float64 {
	st := n.Status()
	sems, permits, elections := n.fsm.PrimCounts()
	leader := 0.0
	if n.IsLeader() {
		leader = 1
	}
	return map[string]float64{
		"raftlock_is_leader":            leader,
		"raftlock_raft_term":            float64(st.Term),
		"raftlock_raft_commit_index":    float64(st.CommitIndex),
		"raftlock_applied_index":        float64(st.AppliedIndex),
		"raftlock_cluster_time_ms":      float64(n.fsm.Time()),
		"raftlock_leases":               float64(n.fsm.LeaseCount()),
		"raftlock_locks_held":           float64(n.fsm.LockCount()),
		"raftlock_semaphores_in_use":    float64(sems),
		"raftlock_semaphore_permits":    float64(permits),
		"raftlock_elections_led":        float64(elections),
		"raftlock_snapshot_lag_entries": float64(n.fsm.SnapshotLag()),
	}
}
