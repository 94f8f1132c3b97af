package cluster

// InjectTickFaults makes node n's next count Tick proposals fail with err before they reach
// raft (count < 0: all of them), standing in for a disk or queue that refuses the leader's
// clock entries.
func InjectTickFaults(n *Node, count int, err error) {
	n.prop.faults.Store(&faults{failTicks: count, err: err})
}
