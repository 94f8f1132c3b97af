package transport_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/test/testcluster"
)

// A cluster with a node of the older release (protocol version 1) stays at version 1 and
// writes no version 2 command (the old node would halt on it), so its quotas are not yet in
// force. Once that node is upgraded, the leader raises the version and writes the limits.
func TestUpgrade_VersionRaisedOnlyWhenEveryMemberSpeaksIt(t *testing.T) {
	limits := fsm.Limits{MaxLeases: 3}
	c := testcluster.StartInProcess(t, 3, func(i int, cfg *cluster.Config) {
		cfg.Limits = limits
		if i == 2 {
			cfg.MaxVersion = 1 // n3 pretends to run the previous release
		}
	})
	ctx := clustertest.Ctx(t, 90*time.Second)
	l := c.Nodes[c.Leader(15*time.Second)]
	// Read on n1, which speaks version 2: the old node's state machine skips
	// registrations, as the previous release does.
	c.WaitFor(15*time.Second, "n1 and n2 to register protocol version 2", func() bool {
		v1, ok1 := c.Nodes[0].FSM().NodeVersion("n1")
		v2, ok2 := c.Nodes[0].FSM().NodeVersion("n2")
		return ok1 && ok2 && v1 == fsm.Version && v2 == fsm.Version
	})
	// A few more leader rounds pass; nothing may raise the version while n3 is old.
	for i := 0; i < 5; i++ {
		if _, err := l.Leases().Create(ctx, 60000*time.Millisecond); err != nil {
			t.Fatalf("lease %d with quotas not yet in force: %v", i+1, err)
		}
	}
	c.WaitFor(10*time.Second, "a few ticks", func() bool { return l.FSM().Time() > 3000 })
	for i, n := range c.Nodes {
		if v := n.FSM().Version(); v != 1 {
			t.Fatalf("n%d at protocol version %d with an old member in the cluster", i+1, v)
		}
		if err := n.HaltErr(); err != nil {
			t.Fatalf("n%d halted: %v", i+1, err)
		}
	}

	// Upgrade n3 (restart it speaking version 2): the leader raises the version, then the
	// limits take effect.
	cfg := c.Config(2)
	cfg.MaxVersion = 0
	c.SetConfig(2, cfg)
	c.RestartNode(2)
	c.WaitFor(30*time.Second, "every node at protocol version 2 with the limits", func() bool {
		for _, n := range c.Nodes {
			if n.FSM().Version() != fsm.Version || n.FSM().Limits() != limits {
				return false
			}
		}
		return true
	})
	l = c.Nodes[c.Leader(15*time.Second)]
	_, err := l.Leases().Create(ctx, 60000*time.Millisecond)
	var qe *cluster.QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, cluster.ErrQuotaExceeded) || qe.Limit != fsm.QuotaLeases || qe.Value != 3 {
		t.Fatalf("lease beyond max_leases: %v, want a QuotaError for max_leases 3", err)
	}
	if n := l.FSM().LeaseCount(); n != 5 {
		t.Fatalf("%d leases, want the 5 created before the limit (a refused create applies nothing)", n)
	}
}
