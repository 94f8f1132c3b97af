package cluster

import "strconv"

// SnapshotThresholdOf returns the snapshot threshold node n's raft uses now, and the index
// of its newest snapshot (zero for none).
func SnapshotThresholdOf(n *Node) (threshold, lastSnapshot uint64) {
	last, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	return n.raft.ReloadableConfig().SnapshotThreshold, last
}

// NextSnapshotThreshold exports nextSnapshotThreshold.
var NextSnapshotThreshold = nextSnapshotThreshold
