package transport_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
)

// With ACLs on, a lockset needs lock rights on every one of its names, to take it and to
// release it; a refused set takes nothing.
func TestACL_LockSetNeedsLockRightsOnEveryName(t *testing.T) {
	c := startACLCluster(t)
	c.WaitFor(30*time.Second, "protocol version 3", func() bool { return c.Nodes[0].FSM().Version() >= 3 })
	f := c.URL(c.Follower())
	_, toks := aclSetup(t, c, map[string]string{"jobs-lock": `{"rules":[{"prefix":"jobs/","access":"lock"},{"prefix":"other/","access":"read"}]}`})
	rw := toks["jobs-lock"]
	if st, code := callAs(t, rw, "POST", f+"/v1/locksets", `{"names":["jobs/a","other/b"],"ttl_ms":60000}`, nil); st != 403 || code != api.CodePermissionDenied {
		t.Fatalf("a set with a name the token may only read: %d %s", st, code)
	}
	if c.Nodes[0].FSM().Lock("jobs/a").Held {
		t.Fatal("a refused set took jobs/a")
	}
	var g api.LockSetGrant
	if st, code := callAs(t, rw, "POST", f+"/v1/locksets", `{"names":["jobs/a","jobs/b"],"ttl_ms":60000}`, &g); st != 200 || len(g.Locks) != 2 {
		t.Fatalf("a set inside the token's rights: %d %s %+v", st, code, g)
	}
	rel := `{"lease_id":"` + g.LeaseID + `","locks":[{"name":"jobs/a","token":` + strconv.FormatUint(g.Locks[0].Token, 10) + `},{"name":"other/b","token":1}]}`
	if st, code := callAs(t, rw, "DELETE", f+"/v1/locksets", rel, nil); st != 403 || code != api.CodePermissionDenied {
		t.Fatalf("releasing a set with a name outside the rights: %d %s", st, code)
	}
}
