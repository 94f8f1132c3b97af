package transport_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/transport"
)

// A fourth node joins through a follower's HTTP API, catches up, serves reads of the same
// state, and is removed again.
func TestAPI_JoinThroughFollowerAndRemove(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	var g api.Grant
	call(t, "PUT", f+"/v1/locks/before-join", `{"ttl_ms":60000}`, &g)

	httpL := testkit.Listen(t)
	node, err := cluster.New(cluster.Config{
		ID:       "n4",
		RaftBind: testkit.FreePort(t),
		HTTPAddr: httpL.Addr().String(),
		DataDir:  filepath.Join(t.TempDir(), "n4"),
		Logger:   clustertest.Logger(t, "n4"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Shutdown() })
	srv, err := transport.NewServer(transport.Config{Services: transport.NodeServices(node), Logger: clustertest.Logger(t, "n4-http")})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(httpL)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	info := node.Members().Self()
	ctx := clustertest.Ctx(t, 30*time.Second)
	if err := transport.Join(ctx, f, api.AddNodeRequest{ID: info.ID, RaftAddr: info.RaftAddr, HTTPAddr: info.HTTPAddr}, nil, "", clustertest.Logger(t, "join")); err != nil {
		t.Fatal(err)
	}
	n4 := "http://" + httpL.Addr().String()
	testkit.WaitFor(t, 15*time.Second, "n4 to apply the grant made before it joined", func() bool {
		v := node.FSM().Lock("before-join")
		return v.Held && v.Token == g.Token
	})
	var s api.LockStatus
	if st, code := call(t, "GET", n4+"/v1/locks/before-join", "", &s); st != 200 || s.Token != g.Token {
		t.Fatalf("linearizable read through the new node: %d %s %+v", st, code, s)
	}
	var ci api.Cluster
	call(t, "GET", n4+"/v1/cluster", "", &ci)
	if len(ci.Nodes) != 4 {
		t.Fatalf("cluster after join: %+v", ci)
	}
	if st, code := call(t, "DELETE", f+"/v1/cluster/nodes/n4", "", nil); st != 200 {
		t.Fatalf("remove n4: %d %s", st, code)
	}
	testkit.WaitFor(t, 15*time.Second, "n4 to leave the configuration", func() bool {
		info, err := rawhttp.ClusterInfo(nil, f)
		return err == nil && len(info.Nodes) == 3
	})
}

// Removing the leader hands leadership over first; the new leader removes it.
// Transferring leadership to a named voter makes it the leader.
func TestAPI_TransferLeaderAndRemoveLeader(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	li := c.Leader(10 * time.Second)
	target := c.Config((li + 1) % 3).ID
	var out map[string]string
	if st, code := call(t, "POST", c.URL(li)+"/v1/cluster/transfer-leader", `{"to":"`+target+`"}`, &out); st != 200 {
		t.Fatalf("transfer: %d %s", st, code)
	}
	c.WaitFor(10*time.Second, target+" to lead", func() bool {
		i := c.LeaderIndex()
		return i >= 0 && c.Config(i).ID == target
	})
	c.WaitForwarding()
	if st, code := call(t, "POST", c.URL(li)+"/v1/cluster/transfer-leader", `{"to":"nope"}`, nil); st != 404 || code != api.CodeNotFound {
		t.Fatalf("transfer to a non-member: %d %s", st, code)
	}

	li = c.Leader(10 * time.Second)
	leaderID := c.Config(li).ID
	f := (li + 1) % 3
	// The leader hands over first, so the forwarding follower may see leadership move
	// mid-request and answer 503 (safe to retry), as clients do.
	for attempt := 1; ; attempt++ {
		st, code := call(t, "DELETE", c.URL(f)+"/v1/cluster/nodes/"+leaderID, "", nil)
		if st == 200 || (st == 404 && attempt > 1) {
			break
		}
		if st != 503 || attempt == 20 {
			t.Fatalf("remove the leader: %d %s (attempt %d)", st, code, attempt)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.WaitFor(10*time.Second, "the removed leader to leave the configuration", func() bool {
		return !c.Nodes[f].Members().Has(leaderID)
	})
	if i := c.LeaderIndex(); i == li || i < 0 {
		t.Fatalf("leader index %d after removing n%d", i, li+1)
	}
}
