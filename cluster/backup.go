package cluster

import (
	"context"
	"fmt"
)

// Backup returns the state machine's canonical state bytes at a linearizable point, with
// their summary (the applied index, cluster time and protocol version they were read at),
// both from one read of the state machine. Every grant acknowledged before the call began
// has a token at most the summary's Index. On a follower it returns ErrNotLeader, so that
// the caller forwards the request to the leader.
func (n *Node) Backup(ctx context.Context) ([]byte, BackupSummary, error) {
	if err := n.ReadBarrier(ctx); err != nil {
		return nil, BackupSummary{}, err
	}
	state, sum, err := n.fsm.SnapshotWithSummary()
	if err != nil {
		return nil, BackupSummary{}, fmt.Errorf("%w: %v", ErrHalted, err)
	}
	return state, sum, nil
}
