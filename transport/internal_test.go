package transport_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/raftlock/raftlock/transport"
)

// A client that sets the hop header itself does not pass for a forwarded request: its
// streams still count against its identity's cap (here the anonymous identity's 2). With
// TLS off nothing proves a node, so the hop count exempts nobody from a cap.
func TestACL_ClientHopHeaderLiftsNoCap(t *testing.T) {
	c := startACLClusterWith(t, func(cfg *transport.Config) { cfg.MaxStreamsPerIdentity = 2 })
	m, _ := aclSetup(t, c, nil)
	l := c.URL(c.Leader(10e9))
	if st, code := callAs(t, m, "PUT", l+"/v1/acl/policies/anonymous", `{"rules":[{"prefix":"jobs/","access":"read"}]}`, nil); st != 200 {
		t.Fatalf("anonymous policy: %d %s", st, code)
	}
	open := func() int {
		req, _ := http.NewRequest("GET", l+"/v1/events?prefix=jobs/", nil)
		req.Header.Set("X-Raftlock-Hops", "1")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		} else {
			t.Cleanup(func() { resp.Body.Close() })
		}
		return resp.StatusCode
	}
	for i := range 2 {
		if st := open(); st != 200 {
			t.Fatalf("anonymous stream %d with a hop header: %d, want 200", i+1, st)
		}
	}
	if st := open(); st != http.StatusTooManyRequests {
		t.Fatalf("third anonymous stream with a hop header: %d, want 429", st)
	}
}
