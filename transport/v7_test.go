package transport_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/testkit"
)

// A semaphore's and an election's history (protocol version 7) are read with ?kind=, as
// a lock's is: their own kinds, leases by fingerprint.
func TestHistory_SemaphoreAndElectionByKind(t *testing.T) {
	router := newOARouter(t, oaDoc(t))
	c := startNewest(t)
	base := c.URL(0)
	var sg api.SemaphoreGrant
	if st, code := callAs(t, "", "PUT", base+"/v1/semaphores/db/pool", `{"limit":3,"owner":"p1","ttl_ms":60000}`, &sg); st != 200 {
		t.Fatalf("permit: %d %s", st, code)
	}
	if st, code := callAs(t, "", "DELETE", base+"/v1/semaphores/db/pool", `{"lease_id":"`+sg.LeaseID+`","token":`+jsonNum(sg.Token)+`}`, nil); st != 200 {
		t.Fatalf("release: %d %s", st, code)
	}
	if st, code := callAs(t, "", "PUT", base+"/v1/elections/db/pool", `{"value":"v","owner":"L","ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("campaign: %d %s", st, code)
	}
	kinds := func(h api.History) (out []string) {
		for _, e := range h.Events {
			out = append(out, e.Kind)
		}
		return out
	}
	var h api.History
	raw := getValid(t, router, base, "", "/v1/history/db/pool?kind=semaphore&stale", &h)
	if !slices.Equal(kinds(h), []string{"permit_granted", "permit_released"}) || h.Events[0].Token != sg.Token || h.Events[0].Lease != fpOf(t, sg.LeaseID) || strings.Contains(string(raw), sg.LeaseID) {
		t.Fatalf("the semaphore's history: %s", raw)
	}
	h = api.History{}
	if getValid(t, router, base, "", "/v1/history/db/pool?kind=election", &h); !slices.Equal(kinds(h), []string{"elected"}) {
		t.Fatalf("the election's history: %+v", h)
	}
	h = api.History{}
	if getValid(t, router, base, "", "/v1/history/db/pool", &h); len(h.Events) != 0 {
		t.Fatalf("the lock db/pool has a history: %+v", h)
	}
	for _, bad := range []string{"mutex", "lock,semaphore", ""} {
		if st, code := callAs(t, "", "GET", base+"/v1/history/db/pool?kind="+bad, "", nil); st != 400 || code != api.CodeInvalidArgument {
			t.Fatalf("kind=%s: %d %s", bad, st, code)
		}
	}
}

// A lock granted by a lockset reads as one group (protocol version 7): each holder names
// the locks its lockset holds with that grant, in status reads, lists and the overview;
// with ACLs on, the names a token may not read are left out and counted.
func TestLockSet_GroupInStatusAndOverview(t *testing.T) {
	c := startACLClusterV3(t)
	f := c.URL(c.Follower())
	var mgmt api.ACLToken
	if st, code := callAs(t, "", "POST", f+"/v1/acl/bootstrap", "", &mgmt); st != 200 {
		t.Fatalf("bootstrap: %d %s", st, code)
	}
	m := mgmt.SecretID
	c.WaitForwarding()
	if st, code := callAs(t, m, "PUT", f+"/v1/acl/policies/jobs-read", `{"rules":[{"prefix":"jobs/","access":"read"}]}`, nil); st != 200 {
		t.Fatalf("policy: %d %s", st, code)
	}
	var ro api.ACLToken
	if st, code := callAs(t, m, "POST", f+"/v1/acl/tokens", `{"policies":["jobs-read"]}`, &ro); st != 200 {
		t.Fatalf("token: %d %s", st, code)
	}
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
		st, _ := callAs(t, ro.SecretID, "GET", f+"/v1/locks/jobs/y?stale", "", &ls)
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
		st, _ := callAs(t, ro.SecretID, "GET", f+"/v1/overview", "", &o)
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
		st, _ := callAs(t, ro.SecretID, "GET", f+"/v1/locks?prefix=jobs/&stale", "", &list)
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
