package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// A command this release does not know, and may not skip, halts every node loudly instead
// of being skipped: the nodes stop serving and say why.
func TestUpgrade_UnknownCommandHaltsTheNode(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	l := c.Nodes[c.Leader(15*time.Second)]
	before := l.FSM().AppliedIndex()
	f := l.Raft().Apply([]byte{0x7e, 0}, 5*time.Second) // type 126, not skippable
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	if r := f.Response().(*fsm.Result); r.Status != fsm.StatusHalted {
		t.Fatalf("unknown command applied with status %v, want halted", r.Status)
	}
	for i, n := range c.Nodes {
		select {
		case <-n.Halted():
		case <-time.After(15 * time.Second):
			t.Fatalf("n%d did not halt", i+1)
		}
		if n.Ready() || n.FSM().AppliedIndex() < before {
			t.Fatalf("n%d: ready %v applied %d after halting", i+1, n.Ready(), n.FSM().AppliedIndex())
		}
		if !errors.Is(n.HaltErr(), fsm.ErrHalted) {
			t.Fatalf("n%d HaltErr = %v", i+1, n.HaltErr())
		}
	}
}
