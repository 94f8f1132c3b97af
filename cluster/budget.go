package cluster

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/budget"
)

// budgetFSM is the node's state machine with every batch's apply timed for the latency
// budget (Config.Budget). It is installed only when a recorder is configured; raft sees
// the same methods as on *fsm.FSM (ApplyBatch, Snapshot, Restore, StoreConfiguration).
type budgetFSM struct {
	*fsm.FSM
	budget *budget.Recorder
	node   string
}

// ApplyBatch applies logs and records when the batch started and ended.
func (b budgetFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	start := time.Now()
	out := b.FSM.ApplyBatch(logs)
	if len(logs) > 0 {
		b.budget.Applied(b.node, logs[0].Index, logs[len(logs)-1].Index, start, time.Now())
	}
	return out
}
