package cluster

import (
	"sync/atomic"

	"github.com/raftlock/raftlock/fsm"
)

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

// MetricsCounters returns the node's counters by Prometheus name, read at scrape time:
// locks granted, grants to a waiter (handovers: on release, revoke or expiry, in the same
// entry), and Renew entries (one per batch of keepalives), all as applied by this node
// since it started.
func (n *Node) MetricsCounters() map[string]float64 {
	return map[string]float64{
		"raftlock_grants_total":        float64(n.counters.grants.Load()),
		"raftlock_handovers_total":     float64(n.counters.handovers.Load()),
		"raftlock_renew_entries_total": float64(n.fsm.RenewEntries()),
	}
}

// Overview reads, from this node's applied state (no leader needed, like a stale read), a
// page of the held locks under prefix with their holders' lease TTLs, deadlines and grant
// times, and how many live leases expire within soonMs of cluster time. It is what the
// dashboard shows.
func (n *Node) Overview(prefix, after string, limit int, soonMs int64) fsm.Overview {
	return n.fsm.Overview(prefix, after, limit, soonMs)
}
