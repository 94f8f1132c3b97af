package netns_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/test/testcluster"
)

// The ports every node listens on inside its own namespace: each "host" has its own port
// space, so all three use the same ones, as real hosts would.
const (
	httpPort = "7001"
	raftPort = "8001"
)

// newCluster prepares (but does not start) a node per namespace of nw: a `raftlock serve`
// process started with `ip netns exec`, bound to 0.0.0.0 and advertising its namespace's
// address. extra are serve flags every node gets.
//
// It is made after the network, so its cleanup (which kills the nodes) runs before the
// network's: no process may outlive its namespace. Should the test binary itself die (a
// -timeout panic runs no cleanups), the nodes die with it rather than living on in a
// namespace nobody removes.
func newCluster(t *testing.T, nw *network, extra ...string) *testcluster.Processes {
	t.Helper()
	return testcluster.NewProcessesWith(t, len(nw.ns), testcluster.Options{
		Addrs: func(i int, a *testcluster.Addrs) error {
			*a = testcluster.Addrs{
				HTTP: "0.0.0.0:" + httpPort, HTTPAdvertise: nw.IP(i) + ":" + httpPort,
				Raft: "0.0.0.0:" + raftPort, RaftAdvertise: nw.IP(i) + ":" + raftPort,
			}
			return nil
		},
		Exec:         func(i int, argv []string) *exec.Cmd { return nw.command(context.Background(), i, argv...) },
		Env:          nodeEnv(),
		KillWithTest: true,
		Extra:        extra,
	})
}

// startCluster starts newCluster's nodes, with k's certificates (mutual TLS between them,
// client certificates on the API) unless k is nil, and has their logs written out when the
// test fails.
func startCluster(t *testing.T, nw *network, k *pki, extra ...string) *testcluster.Processes {
	t.Helper()
	c := newCluster(t, nw, extra...)
	if k != nil {
		c.NodeArgs = k.ServeFlags
	}
	c.StartAll()
	t.Cleanup(func() {
		if t.Failed() {
			c.DumpLogs()
		}
	})
	return c
}

// nodeEnv is the test's environment without RAFTLOCK_* settings (which would change how
// serve starts) and without proxy settings (a node must never send a forward elsewhere).
func nodeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAFTLOCK_") || strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
