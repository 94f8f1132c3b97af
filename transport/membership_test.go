package transport_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/transport"
)

// A fourth node joins through a follower's HTTP API, catches up, serves reads of the same
// state, and is removed again.
func TestAPI_JoinThroughFollowerAndRemove(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	var g api.Grant
	call(t, "PUT", f+"/v1/locks/before-join", `{"ttl_ms":60000}`, &g)

	httpL := clustertest.Listen(t)
	node, err := cluster.New(cluster.Config{
		ID:       "n4",
		RaftBind: clustertest.FreePort(t),
		HTTPAddr: httpL.Addr().String(),
		DataDir:  filepath.Join(t.TempDir(), "n4"),
		Logger:   clustertest.Logger(t, "n4"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Shutdown() })
	srv, err := transport.NewServer(transport.Config{Node: node, Logger: clustertest.Logger(t, "n4-http")})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(httpL)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	info := node.SelfInfo()
	ctx := clustertest.Ctx(t, 30*time.Second)
	if err := transport.Join(ctx, f, api.AddNodeRequest{ID: info.ID, RaftAddr: info.RaftAddr, HTTPAddr: info.HTTPAddr}, nil, clustertest.Logger(t, "join")); err != nil {
		t.Fatal(err)
	}
	n4 := "http://" + httpL.Addr().String()
	clustertest.WaitFor(t, 15*time.Second, "n4 to apply the grant made before it joined", func() bool {
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
	clustertest.WaitFor(t, 15*time.Second, "n4 to leave the configuration", func() bool {
		info, err := testcluster.ClusterInfo(f)
		return err == nil && len(info.Nodes) == 3
	})
}
