package transport_test

import (
	"net/http"
	"testing"

	"github.com/raftlock/raftlock/transport"
)

// BenchmarkStreamCheck measures the check an event stream makes before each event (and
// each ping) with ACLs on: the token resolved again (SHA-256 of the secret, a map lookup
// under the state's read lock) and its rules matched against the prefix. One op is one
// event's check; at 10,000 events/s a stream spends 10,000 x ns/op of CPU per second on it.
func BenchmarkStreamCheck(b *testing.B) {
	c := startACLCluster(b)
	_, toks := aclSetup(b, c, map[string]string{"jobs-read": `{"rules":[{"prefix":"jobs/","access":"read"},{"prefix":"jobs/secret/","access":"deny"}]}`})
	r, _ := http.NewRequest("GET", "http://x/v1/events?prefix=jobs/", nil)
	r.Header.Set("Authorization", "Bearer "+toks["jobs-read"])
	var acl transport.Identities = c.Nodes[c.Follower()].ACL()
	c.WaitFor(10e9, "the token on the follower", func() bool {
		_, ok := acl.Resolve(toks["jobs-read"])
		return ok
	})
	check := transport.StreamCheck(acl, r, "jobs/")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := check(); err != nil {
			b.Fatal(err)
		}
	}
}
