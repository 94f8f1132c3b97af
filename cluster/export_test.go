package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
)

// InjectTickFaults makes node n's next count Tick proposals fail with err before they reach
// raft (count < 0: all of them), standing in for a disk or queue that refuses the leader's
// clock entries.
func InjectTickFaults(n *Node, count int, err error) {
	n.prop.faults.Store(&faults{failTicks: count, err: err})
}

// SetSweepPace sets how long the tick loop pauses after a tick that left sweep work over,
// as a multiple of the tick's commit time, and returns the function that restores it.
func SetSweepPace(f float64) (restore func()) {
	old := sweepPace
	sweepPace = f
	return func() { sweepPace = old }
}

// AppliedEverythingCommitted reports whether node n's state machine has applied every
// committed entry raft will hand it: the entries after its applied index up to raft's
// commit index are all ones raft keeps from the FSM (no-ops, barriers). A follower cut off
// from every leader keeps its commit index, so once this holds its state stays put.
func AppliedEverythingCommitted(n *Node) (bool, error) {
	commit := n.raft.CommitIndex()
	for i := n.fsm.AppliedIndex() + 1; i <= commit; i++ {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil {
			return false, fmt.Errorf("entry %d: %w", i, err)
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return false, nil
		}
	}
	return true, nil
}

// ReplicationFailuresReturned counts the failed replication RPCs to the peer at raftAddr
// that node n's transport gate has handed back to raft since the node started.
func ReplicationFailuresReturned(n *Node, raftAddr string) uint64 {
	return n.gate.peer(raft.ServerAddress(raftAddr)).returned.Load()
}

// CheckpointType is the type byte of the log verifier's checkpoint entries.
const CheckpointType = checkpointType

// WriteCheckpoint has leader n write a log verification checkpoint now.
func WriteCheckpoint(n *Node) error {
	_, err := n.prop.apply(&fsm.Command{Type: checkpointType})
	return err
}

// OutcomeError is the error the node answers result r of a command of type t with (the
// outcomes table), under limits with MaxLeases 7.
func OutcomeError(t fsm.Type, r *fsm.Result) error {
	return outcomeError(t, r, func() fsm.Limits { return fsm.Limits{MaxLeases: 7} })
}

// OutcomeCode is the API code the outcomes table names for status s of a command of type
// t ("" for a success), and whether the table has a row for s.
func OutcomeCode(t fsm.Type, s fsm.Status) (string, bool) {
	o, ok := outcomes[s]
	if o.aclCode != "" && isACL(t) {
		return o.aclCode, ok
	}
	return o.code, ok
}
