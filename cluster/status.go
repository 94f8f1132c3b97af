package cluster

import (
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/tlsconf"
)

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

// Metrics returns the node's gauges and counters for the metrics endpoint. The counters
// are locks granted, grants to a waiter (handovers: on release, revoke or expiry, in the
// same entry), and Renew entries (one per batch of keepalives), all as applied by this
// node since it started.
func (n *Node) Metrics() Metrics {
	st := n.Status()
	sems, permits, elections := n.fsm.PrimCounts()
	var peers tlsconf.StreamStats
	if n.peers != nil {
		peers = n.peers.Stats()
	}
	return Metrics{
		RaftPeersRefused:   peers.Refused,
		RaftPeersDropped:   peers.Dropped,
		IsLeader:           n.IsLeader(),
		Term:               st.Term,
		CommitIndex:        st.CommitIndex,
		AppliedIndex:       st.AppliedIndex,
		ClusterTime:        dur(n.fsm.Time()),
		Leases:             n.fsm.LeaseCount(),
		LocksHeld:          n.fsm.LockCount(),
		SemaphoresInUse:    sems,
		SemaphorePermits:   permits,
		ElectionsLed:       elections,
		SnapshotLagEntries: uint64(n.fsm.SnapshotLag()),
		GrantsTotal:        n.counters.grants.Load(),
		HandoversTotal:     n.counters.handovers.Load(),
		RenewEntriesTotal:  n.fsm.RenewEntries(),
		LogVerifyRanges:    n.verify.ranges.Load(),
		LogVerifyFailures:  n.verify.failures.Load(),

		LeaseIDsTotal:        n.leaseIDs.Load(),
		WaitsRegisteredTotal: n.registry.registered.Load(),
	}
}

// applyCounters counts what the entries this node applied did to the locks. Every node
// applies every entry, so every node's counters move alike and any node's rate is the
// cluster's.
type applyCounters struct {
	grants    atomic.Uint64
	handovers atomic.Uint64
}

// observe counts one state machine event (on raft's FSM goroutine; it never blocks).
func (c *applyCounters) observe(e fsm.Event) {
	if e.Kind != fsm.EventHistory || e.History.Kind != fsm.HistoryGranted {
		return
	}
	c.grants.Add(1)
	if e.History.FromQueue {
		c.handovers.Add(1)
	}
}
