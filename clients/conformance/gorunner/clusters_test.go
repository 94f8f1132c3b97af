package gorunner_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// clusters are the runner's clusters (FORMAT.md, "Cluster and runner"): A, three nodes
// n1..n3, started at once; B, one node labelled b1 that snapshots after every entry,
// started before the first scenario that names it.
type clusters struct {
	a, b *testcluster.Processes
}

// startCluster starts n nodes and waits for a ready leader with protocol version 3.
func startCluster(t *testing.T, n int, extra ...string) *testcluster.Processes {
	t.Helper()
	p := testcluster.StartProcesses(t, n, extra...)
	c, err := client.New(p.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "protocol version 3", func() bool {
		ctx, cancel := ctxFor(5 * time.Second)
		defer cancel()
		info, err := c.Cluster(ctx)
		return err == nil && info.ProtocolVersion >= 3
	})
	return p
}

// names reports whether a client of the scenario names node label (in nodes or routes).
func (sc scenario) names(label string) bool {
	b, _ := json.Marshal(sc.Clients)
	return strings.Contains(string(b), strconv.Quote(label))
}

// all returns the clusters started.
func (cs *clusters) all() []*testcluster.Processes {
	if cs.b == nil {
		return []*testcluster.Processes{cs.a}
	}
	return []*testcluster.Processes{cs.a, cs.b}
}

// node returns the cluster and index of the node labelled label (n1..n3, b1).
func (cs *clusters) node(label string) (*testcluster.Processes, int, error) {
	switch {
	case label == "b1" && cs.b != nil:
		return cs.b, 0, nil
	case len(label) == 2 && label[0] == 'n' && label[1] >= '1' && int(label[1]-'1') < cs.a.N():
		return cs.a, int(label[1] - '1'), nil
	}
	return nil, 0, fmt.Errorf("no node %q", label)
}

// endpoints returns the URLs of the nodes labelled in nodes, in that order.
func (cs *clusters) endpoints(nodes []any) ([]string, error) {
	var eps []string
	for _, n := range nodes {
		label, _ := n.(string)
		p, i, err := cs.node(label)
		if err != nil {
			return nil, err
		}
		eps = append(eps, p.URL(i))
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("no nodes given")
	}
	return eps, nil
}

// snapshotRestart waits until node label holds a snapshot at or above the index it had
// applied when called, kills it, starts it again and waits for its cluster's ready leader.
func (cs *clusters) snapshotRestart(label string) error {
	p, i, err := cs.node(label)
	if err != nil {
		return failure{err}
	}
	c, err := client.New([]string{p.URL(i)})
	if err != nil {
		return failure{err}
	}
	ctx, cancel := ctxFor(10 * time.Second)
	info, err := c.Cluster(ctx)
	cancel()
	if err != nil {
		return failure{fmt.Errorf("reading %s's applied index: %v", label, err)}
	}
	dir := filepath.Join(p.DataDir(i), "snapshots")
	var newest uint64
	if !testkit.Poll(20*time.Second, 50*time.Millisecond, func() bool {
		newest = newestSnapshot(dir)
		return newest >= info.AppliedIndex
	}) {
		return failure{fmt.Errorf("%s holds no snapshot at or above index %d after 20 s (newest %d)", label, info.AppliedIndex, newest)}
	}
	p.Kill(i)
	if err := p.TryStart(i); err != nil {
		return failure{err}
	}
	p.WaitLeader(20 * time.Second)
	return nil
}

// newestSnapshot returns the index of the newest complete snapshot in dir (hashicorp/raft's
// file store: term-index-ms directories; .tmp while written), 0 when none.
func newestSnapshot(dir string) uint64 {
	entries, _ := os.ReadDir(dir)
	var newest uint64
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		parts := strings.Split(e.Name(), "-")
		if len(parts) != 3 {
			continue
		}
		if n, err := strconv.ParseUint(parts[1], 10, 64); err == nil && n > newest {
			newest = n
		}
	}
	return newest
}
