package cluster

import (
	"strconv"

	"github.com/hashicorp/raft"
)

// SnapshotThresholdOf returns the snapshot threshold node n's raft uses now, the index of its
// newest snapshot (zero for none), and whether raft says the node leads.
func SnapshotThresholdOf(n *Node) (threshold, lastSnapshot uint64, leads bool) {
	last, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	return n.raft.ReloadableConfig().SnapshotThreshold, last, n.raft.State() == raft.Leader
}

// NextSnapshotThreshold exports nextSnapshotThreshold.
var NextSnapshotThreshold = nextSnapshotThreshold
