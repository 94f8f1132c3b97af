package blackbox_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// Three nodes on IPv6 loopback: addresses in brackets are registered, forwarded to and
// listed as they are.
func TestBlackbox_IPv6(t *testing.T) {
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		testkit.Unavailable(t, "no IPv6 loopback on this machine: %v", err)
	} else {
		l.Close()
	}
	const n = 3
	p := testcluster.NewProcessesWith(t, n, testcluster.Options{Host: "[::1]"})
	p.StartAll()
	waitAllReady(t, p, n)
	for i := 0; i < n; i++ {
		if a := do("PUT", p.URL(i)+"/v1/locks/v6/lock", `{"owner":"six","ttl_ms":60000}`); a.Status != 200 && !(i > 0 && a.Status == 409) {
			t.Fatalf("acquire through n%d: %v", i+1, a)
		}
	}
	testkit.WaitFor(t, 20*time.Second, "every node registered at its [::1] address", func() bool {
		a := do("GET", p.URL(0)+"/v1/cluster", "")
		nodes, _ := a.Body["nodes"].([]any)
		for _, node := range nodes {
			if addr, _ := node.(map[string]any)["http_addr"].(string); !strings.HasPrefix(addr, "[::1]:") {
				return false
			}
		}
		return len(nodes) == n
	})
}
