package transport_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// Until every member speaks protocol version 3, locksets, max_hold_ms and lock_delay_ms
// are refused with 409 version_inactive naming the version, nothing applied, while the
// version 2 requests go on; once the old member is upgraded they work.
func TestAPI_LockSetsWaitForVersion3(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, func(i int, cfg *cluster.Config) {
		if i == 2 {
			cfg.MaxVersion = 2 // n3 runs the previous release
		}
	})
	c.WaitFor(30*time.Second, "protocol version 2", func() bool { return c.Nodes[0].FSM().Version() == 2 })
	hc := rawhttp.Client{}
	url := c.Endpoints()[1]
	for _, req := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/locksets", `{"names":["v3/a","v3/b"]}`},
		{http.MethodPut, "/v1/locks/v3/a", `{"max_hold_ms":1500}`},
		{http.MethodPut, "/v1/locks/v3/a", `{"lock_delay_ms":1500}`},
		{http.MethodPut, "/v1/semaphores/v3/s", `{"limit":2,"max_hold_ms":1500}`},
	} {
		a := hc.Do(req.method, url+req.path, req.body)
		code, _ := a.Body["error"].(map[string]any)["code"].(string)
		if a.Status != 409 || code != "version_inactive" || !strings.Contains(string(a.Raw), "version 3") || !strings.Contains(string(a.Raw), "n3") {
			t.Fatalf("%s %s %s at version 2: %d %s", req.method, req.path, req.body, a.Status, a.Raw)
		}
	}
	if v := c.Nodes[0].FSM().Lock("v3/a"); v.Held || c.Nodes[0].FSM().LeaseCount() != 0 {
		t.Fatal("a refused request applied something")
	}
	if a := hc.Do(http.MethodPut, url+"/v1/locks/v3/a", `{}`); a.Status != 200 {
		t.Fatalf("a version 2 acquire: %d %s", a.Status, a.Raw)
	}
	cfg := c.Config(2)
	cfg.MaxVersion = 0
	c.SetConfig(2, cfg)
	c.RestartNode(2)
	c.WaitFor(30*time.Second, "protocol version 3", func() bool { return c.Nodes[0].FSM().Version() >= 3 })
	if a := hc.Do(http.MethodPost, url+"/v1/locksets", `{"names":["v3/b","v3/c"],"max_hold_ms":60000}`); a.Status != 200 {
		t.Fatalf("lockset at version 3: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodPut, url+"/v1/semaphores/v3/s", `{"limit":2,"max_hold_ms":60000}`); a.Status != 200 {
		t.Fatalf("semaphore with a maximum hold at version 3: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodPost, url+"/v1/locksets", `{"names":[]}`); a.Status != 400 {
		t.Fatalf("empty lockset: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodPut, url+"/v1/locks/v3/d", `{"mode":"shared","lock_delay_ms":100}`); a.Status != 400 {
		t.Fatalf("shared with a lock delay: %d %s", a.Status, a.Raw)
	}
}

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

// A lock granted by a lockset reads as one group (protocol version 7): each holder names
// the locks its lockset holds with that grant, in status reads, lists and the overview;
// with ACLs on, the names a token may not read are left out and counted.
func TestLockSet_GroupInStatusAndOverview(t *testing.T) {
	c := startACLClusterV3(t)
	f := c.URL(c.Follower())
	m, toks := aclSetup(t, c, map[string]string{"jobs-read": `{"rules":[{"prefix":"jobs/","access":"read"}]}`})
	ro := toks["jobs-read"]
	var g api.LockSetGrant
	if st, code := callAs(t, m, "POST", f+"/v1/locksets", `{"names":["jobs/x","jobs/y","secret/z"],"owner":"mover","ttl_ms":60000}`, &g); st != 200 {
		t.Fatalf("lockset: %d %s", st, code)
	}
	var ls api.LockStatus
	if st, code := callAs(t, m, "GET", f+"/v1/locks/jobs/x", "", &ls); st != 200 || len(ls.Holders) != 1 || !slices.Equal(ls.Holders[0].LockSet, []string{"jobs/x", "jobs/y", "secret/z"}) || ls.Holders[0].LockSetHidden != 0 {
		t.Fatalf("the admin's status of jobs/x: %d %s %+v", st, code, ls.Holders)
	}
	testkit.WaitFor(t, 10*time.Second, "the read token's view of the group, on the follower", func() bool {
		ls = api.LockStatus{}
		st, _ := callAs(t, ro, "GET", f+"/v1/locks/jobs/y?stale", "", &ls)
		return st == 200 && len(ls.Holders) == 1
	})
	if !slices.Equal(ls.Holders[0].LockSet, []string{"jobs/x", "jobs/y"}) || ls.Holders[0].LockSetHidden != 1 {
		t.Fatalf("the read token's status of jobs/y: %+v", ls.Holders)
	}
	// The overview is the follower's applied state (it is not forwarded once the follower
	// knows the token): wait until the follower has applied the lockset.
	var o api.Overview
	testkit.WaitFor(t, 10*time.Second, "the read token's overview on the follower, with both locks", func() bool {
		o = api.Overview{}
		st, _ := callAs(t, ro, "GET", f+"/v1/overview", "", &o)
		return st == 200 && len(o.Locks) == 2
	})
	if !slices.Equal(o.Locks[1].Holders[0].LockSet, []string{"jobs/x", "jobs/y"}) || o.Locks[1].Holders[0].LockSetHidden != 1 {
		t.Fatalf("the read token's overview: %+v", o.Locks)
	}
	// The overview above may have been forwarded to the leader (while the follower did not
	// know the read token yet, forwardUnknownTokens), so the follower's stale list waits
	// for the lockset to be applied there too.
	var list api.LockList
	testkit.WaitFor(t, 10*time.Second, "the read token's stale list on the follower, with both locks", func() bool {
		list = api.LockList{}
		st, _ := callAs(t, ro, "GET", f+"/v1/locks?prefix=jobs/&stale", "", &list)
		return st == 200 && len(list.Locks) == 2
	})
	if list.Locks[0].Holders[0].LockSetHidden != 1 {
		t.Fatalf("the read token's list: %+v", list.Locks)
	}
	// Released alone, a lock leaves the group; the others stay one.
	if st, code := callAs(t, m, "DELETE", f+"/v1/locks/jobs/y", `{"lease_id":"`+g.LeaseID+`","token":`+jsonNum(g.Locks[0].Token)+`}`, nil); st != 200 {
		t.Fatalf("release: %d %s", st, code)
	}
	if st, code := callAs(t, m, "GET", f+"/v1/locks/jobs/x", "", &ls); st != 200 || !slices.Equal(ls.Holders[0].LockSet, []string{"jobs/x", "secret/z"}) {
		t.Fatalf("after jobs/y's release: %d %s %+v", st, code, ls.Holders)
	}
}
