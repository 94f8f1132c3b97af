package cluster

import (
	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
)

// LoggedCommand is a command entry of a node's Raft log store, with its index.
type LoggedCommand struct {
	Index uint64
	fsm.Command
}

// LoggedCommands returns the command entries of node n's log store with an index above
// after: what n has appended, committed or not.
func LoggedCommands(n *Node, after uint64) ([]LoggedCommand, error) {
	_, last, err := n.LogBounds()
	if err != nil {
		return nil, err
	}
	var out []LoggedCommand
	for i := after + 1; i <= last; i++ {
		var e raft.Log
		if err := n.store.GetLog(i, &e); err != nil {
			return nil, err
		}
		if e.Type != raft.LogCommand {
			continue
		}
		c, err := fsm.DecodeCommand(e.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, LoggedCommand{Index: i, Command: c})
	}
	return out, nil
}
