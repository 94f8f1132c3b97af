package transport_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// aclSetup bootstraps ACLs on c and makes one token per policy body: it returns the
// management token and the tokens by policy name.
func aclSetup(t testing.TB, c *testcluster.InProcess, policies map[string]string) (string, map[string]string) {
	t.Helper()
	f := c.URL(c.Follower())
	var mgmt api.ACLToken
	if st, code := callAs(t, "", "POST", f+"/v1/acl/bootstrap", "", &mgmt); st != 200 {
		t.Fatalf("bootstrap: %d %s", st, code)
	}
	toks := map[string]string{}
	for name, body := range policies {
		if st, code := callAs(t, mgmt.SecretID, "PUT", f+"/v1/acl/policies/"+name, body, nil); st != 200 {
			t.Fatalf("policy %s: %d %s", name, st, code)
		}
		var tok api.ACLToken
		if st, code := callAs(t, mgmt.SecretID, "POST", f+"/v1/acl/tokens", `{"policies":["`+name+`"]}`, &tok); st != 200 {
			t.Fatalf("token %s: %d %s", name, st, code)
		}
		toks[name] = tok.SecretID
	}
	return mgmt.SecretID, toks
}

// A token that may read only a/ learns nothing of the names under secret/ by paging: not
// from the locks listed, nor from next, nor from truncated; and paging through what it may
// read still visits every such lock exactly once, whatever the page size.
func TestACL_CursorsRevealNothingUnreadable(t *testing.T) {
	c := startACLCluster(t)
	m, toks := aclSetup(t, c, map[string]string{"a-read": `{"rules":[{"prefix":"a/","access":"read"}]}`})
	fi := c.Follower()
	f := c.URL(fi)
	names := []string{"a/1", "a/2", "b/x", "secret/k1", "secret/k2", "secret/k3", "a/3", "z/last"}
	for _, n := range names {
		if st, code := callAs(t, m, "PUT", f+"/v1/locks/"+n, `{"ttl_ms":60000}`, nil); st != 200 {
			t.Fatalf("acquire %s: %d %s", n, st, code)
		}
	}
	// The overview reads the answering node's applied state, and a follower learns of a
	// commit with the leader's next message: on a loaded machine its overview once lacked
	// a/3 well after the acquire was answered. Wait until it has applied what the leader has.
	applied := c.Nodes[c.Leader(10*time.Second)].Status().AppliedIndex
	c.WaitFor(10*time.Second, "the follower to apply every acquire", func() bool { return c.Nodes[fi].Status().AppliedIndex >= applied })
	ro := toks["a-read"]
	// The cursor walk this test is about: prefix secret/, one at a time.
	var page api.LockList
	if st, code := callAs(t, ro, "GET", f+"/v1/locks?prefix=secret/&limit=1", "", &page); st != 200 {
		t.Fatalf("list secret/: %d %s", st, code)
	}
	if len(page.Locks) != 0 || page.Next != "" || page.Truncated {
		t.Fatalf("a/ token listing secret/: %+v, want an empty last page", page)
	}
	for _, path := range []string{"/v1/locks?prefix=secret/&limit=1&after=secret/k1", "/v1/overview?prefix=secret/&limit=1", "/v1/overview?prefix=secret/&limit=1&after=secret/k1"} {
		a := getRaw(t, ro, f+path)
		if strings.Contains(a, "secret/k") {
			t.Fatalf("a/ token: GET %s shows a name under secret/: %s", path, a)
		}
	}
	// Paging the whole space with every page size: only a/ names, each once, and every
	// cursor one of them.
	for limit := 1; limit <= 4; limit++ {
		var seen []string
		after := ""
		for range 20 {
			var p api.LockList
			if st, code := callAs(t, ro, "GET", f+"/v1/locks?limit="+strconv.Itoa(limit)+"&after="+url.QueryEscape(after), "", &p); st != 200 {
				t.Fatalf("page after %q: %d %s", after, st, code)
			}
			for _, l := range p.Locks {
				seen = append(seen, l.Name)
			}
			if p.Next != "" && !strings.HasPrefix(p.Next, "a/") {
				t.Fatalf("limit %d: next names %q, which the token cannot read", limit, p.Next)
			}
			if !p.Truncated {
				break
			}
			after = p.Next
		}
		if strings.Join(seen, ",") != "a/1,a/2,a/3" {
			t.Fatalf("limit %d: paged %v, want a/1,a/2,a/3", limit, seen)
		}
		var o api.Overview
		if st, code := callAs(t, ro, "GET", f+"/v1/overview?limit="+strconv.Itoa(limit), "", &o); st != 200 {
			t.Fatalf("overview: %d %s", st, code)
		}
		if o.Next != "" && !strings.HasPrefix(o.Next, "a/") || len(o.Locks) != min(limit, 3) || o.Truncated != (limit < 3) {
			t.Fatalf("limit %d: overview page %d locks, truncated %v, next %q", limit, len(o.Locks), o.Truncated, o.Next)
		}
		// Lease counts are cluster-wide: withheld from a token that is not an admin.
		if !o.Leases.Withheld || o.Leases.Count != 0 || o.Leases.ExpiringSoon != 0 {
			t.Fatalf("a/ token's overview shows the cluster's leases: %+v", o.Leases)
		}
	}
	// (The leader has applied every acquire it answered; a follower may lag.)
	var o api.Overview
	callAs(t, m, "GET", c.URL(c.Leader(10e9))+"/v1/overview", "", &o)
	if o.Leases.Withheld || o.Leases.Count != len(names) {
		t.Fatalf("admin's overview: leases %+v, want %d", o.Leases, len(names))
	}
}

func getRaw(t *testing.T, token, u string) string {
	t.Helper()
	a := rawhttp.Client{Token: token}.Do("GET", u, "")
	if a.Status != 200 {
		t.Fatalf("GET %s: %d %s", u, a.Status, a.Raw)
	}
	return string(a.Raw)
}
