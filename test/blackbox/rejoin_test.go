package blackbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// A member killed with -9 and started again after an outage longer than hashicorp/raft's
// replication backoff takes to reach its cap (10 ms doubling to 10.24 s: about 10 s of
// failures) becomes ready: /readyz 200 and its applied index at least the leader's commit
// index when it started (docs/PERFORMANCE.md, "A returning member"). The wait's deadline
// comes from the configuration (20 election timeouts); how long it took is logged, not
// asserted: raftlock-bench rejoin measures it.
func TestBlackbox_ReturningMemberBecomesReady(t *testing.T) {
	const election = 500 * time.Millisecond
	const outage = 11 * time.Second
	p := testcluster.StartProcesses(t, 3, "--election-timeout", election.String())
	waitAllReady(t, p, 3)
	leader := p.WaitLeader(20 * time.Second)
	f := (leader + 1) % 3
	write := func(name string) {
		if a := do("PUT", p.URL(leader)+"/v1/locks/"+name, `{"ttl_ms":120000}`); a.Status != 200 {
			t.Fatalf("acquire %s through the leader: %v", name, a)
		}
	}
	for i := 0; i < 20; i++ {
		write(fmt.Sprintf("before/%d", i))
	}
	p.Kill(f)
	down := time.Now()
	for i := 0; time.Since(down) < outage; i++ {
		write(fmt.Sprintf("down/%d", i))
		time.Sleep(200 * time.Millisecond) // pacing the writes over the outage
	}
	var info api.Cluster
	if a := do("GET", p.URL(leader)+"/v1/cluster", ""); a.Status != 200 || a.Decode(&info) != nil {
		t.Fatalf("the leader's cluster status: %v", a)
	}
	start := time.Now()
	outageLen := start.Sub(down)
	p.Start(f)
	testkit.WaitFor(t, 20*election, fmt.Sprintf("n%d to be ready with commit index %d applied", f+1, info.CommitIndex), func() bool {
		if do("GET", p.URL(f)+"/readyz", "").Status != 200 {
			return false
		}
		var mine api.Cluster
		a := do("GET", p.URL(f)+"/v1/cluster", "")
		return a.Status == 200 && a.Decode(&mine) == nil && mine.AppliedIndex >= info.CommitIndex
	})
	t.Logf("n%d, down %v, was ready %v after its process started", f+1, outageLen.Round(100*time.Millisecond), time.Since(start).Round(time.Millisecond))
}
