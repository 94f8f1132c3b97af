package transport_test

import (
	"context"
	"path/filepath"
	"strconv"
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
	// The hand-over makes the removal cost no election timeout: the leader transfers
	// leadership (the target campaigns at once, term+1) and the new leader removes it.
	// Without it the leader removes itself and steps down, and the others wait an election
	// timeout (500 ms-1 s) before they elect. So require the 200 within one election
	// timeout plus removalSlack for the HTTP round trips (follower -> old leader -> new
	// leader, a retried 503 included), the term moved by exactly one, and the registration
	// gone.
	const removalSlack = 150 * time.Millisecond
	// Every node's registration settled first: a node removed while its own registration
	// is still on its way to the leader re-registers after the removal (raft AddVoter, or
	// a RegisterNode committed after the RemoveNode), which is not what this test is about.
	c.WaitFor(10*time.Second, "every node registered on every node", func() bool {
		for _, n := range c.Nodes {
			if n.Members().NeedsRegistration() || n.Members().NeedsVersionRegistration() {
				return false
			}
			for _, m := range c.Nodes {
				if reg, ok := n.FSM().Node(m.ID()); !ok || reg != m.Members().Self() {
					return false
				}
			}
		}
		return true
	})
	li = c.Leader(10 * time.Second)
	leaderID = c.Config(li).ID
	f = (li + 1) % 3
	et := c.Nodes[li].ElectionTimeout()
	term0 := c.Nodes[li].Raft().CurrentTerm()
	for i, n := range c.Nodes {
		if got := n.Raft().CurrentTerm(); got != term0 {
			t.Fatalf("before the removal n%d is at term %d, the leader at %d", i+1, got, term0)
		}
	}
	// The leader hands over first, so the forwarding follower may see leadership move
	// mid-request and answer 503 (safe to retry), as clients do; after a 503
	// unknown_outcome the retry may find the node already removed (404).
	start := time.Now()
	attempts, last := 0, ""
	for {
		attempts++
		st, code := call(t, "DELETE", c.URL(f)+"/v1/cluster/nodes/"+leaderID, "", nil)
		t.Logf("attempt %d: %d %s after %v", attempts, st, code, time.Since(start))
		if st == 200 || (st == 404 && last == api.CodeUnknownOutcome) {
			break
		}
		last = code
		if st != 503 || attempts == 20 {
			t.Fatalf("remove the leader: %d %s (attempt %d, after %v)", st, code, attempts, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("removing the leader %s answered after %v (%d attempts; election timeout %v)", leaderID, took, attempts, et)
	if took > et+removalSlack {
		t.Fatalf("removing the leader took %v, more than one election timeout (%v) plus %v: no hand-over?", took, et, removalSlack)
	}
	nl := c.LeaderIndex()
	if nl == li || nl < 0 {
		t.Fatalf("leader index %d after removing n%d", nl, li+1)
	}
	if got := c.Nodes[nl].Raft().CurrentTerm(); got != term0+1 {
		t.Fatalf("the new leader is at term %d after removing the leader at term %d: want exactly one more (a hand-over, not an election after a timeout)", got, term0)
	}
	if _, ok := c.Nodes[nl].FSM().Node(leaderID); ok {
		t.Fatalf("the new leader still holds %s's registration after the 200", leaderID)
	}
	for i, n := range c.Nodes {
		if i == li {
			continue
		}
		c.WaitFor(2*time.Second, "n"+strconv.Itoa(i+1)+" to forget "+leaderID, func() bool {
			_, registered := n.FSM().Node(leaderID)
			return !n.Members().Has(leaderID) && !registered
		})
		var ci api.Cluster
		if st, code := call(t, "GET", c.URL(i)+"/v1/cluster", "", &ci); st != 200 {
			t.Fatalf("GET /v1/cluster from n%d: %d %s", i+1, st, code)
		}
		if len(ci.Nodes) != 2 {
			t.Fatalf("n%d lists %d nodes after removing %s: %+v", i+1, len(ci.Nodes), leaderID, ci.Nodes)
		}
		for _, m := range ci.Nodes {
			if m.ID == leaderID || m.HTTPAddr == c.Config(li).HTTPAddr {
				t.Fatalf("n%d still lists the removed leader: %+v", i+1, ci.Nodes)
			}
		}
		if ci.Term != term0+1 {
			t.Fatalf("n%d is at term %d after removing the leader at term %d: want exactly one more", i+1, ci.Term, term0)
		}
	}
	if i := c.LeaderIndex(); i != nl {
		t.Fatalf("leader index %d after the removal settled, want n%d", i, nl+1)
	}
}

// A registration (what a node's own loop sends) never adds a member: for an ID that is
// not one, as a node removed while its registration was on its way, it answers 404 and
// the membership does not change.
func TestAPI_RegistrationNeverAddsAMember(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	body := `{"id":"n9","raft_addr":"127.0.0.1:1","http_addr":"127.0.0.1:2","registration":true}`
	if st, code := call(t, "POST", f+"/v1/cluster/nodes", body, nil); st != 404 || code != api.CodeNotFound {
		t.Fatalf("registration of a non-member: %d %s, want 404 not_found", st, code)
	}
	for _, n := range c.Nodes {
		if n.Members().Has("n9") {
			t.Fatalf("%s: a registration added n9", n.ID())
		}
	}
}
