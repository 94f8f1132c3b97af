package transport_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/transport"
)

// startQuotaCluster is a three-node cluster with ACLs on, running protocol version 5, whose
// limits are limits: every node has the same, as an operator gives them.
func startQuotaCluster(t *testing.T, limits fsm.Limits) *testcluster.InProcess {
	c := testcluster.StartInProcessWith(t, 3, func(_ int, cfg *cluster.Config) { cfg.Limits = limits },
		func(_ int, cfg *transport.Config) { cfg.ACL = true })
	c.WaitFor(30*time.Second, "protocol version 5 and the limits applied on every node", func() bool {
		for _, n := range c.Nodes {
			if n.FSM().Version() < 5 || n.FSM().Limits() != limits {
				return false
			}
		}
		return true
	})
	return c
}

// Two tenants on one cluster, as strangers would use it over HTTP through a follower: the
// tenant at its quotas is refused with 429 quota_exceeded naming the quota, its use and the
// limit, and nothing is applied; the other tenant and the admin go on; each reads its own
// usage and only the admin reads everyone's; a token's own quota, set by an update that
// keeps its secret, wins over the defaults; and quotas cannot be set before version 5.
func TestUsage_TenantsAtTheirQuotas(t *testing.T) {
	c := startQuotaCluster(t, fsm.Limits{MaxLocks: 1000, MaxWaiters: 1000, PerIdentity: fsm.Quotas{MaxLeases: 2, MaxLocks: 3, MaxWaiters: 1}})
	m, toks := aclSetup(t, c, map[string]string{
		"a": `{"rules":[{"prefix":"a/","access":"lock"}]}`,
		"b": `{"rules":[{"prefix":"b/","access":"lock"}]}`,
	})
	a, b := toks["a"], toks["b"]
	fi := c.Follower()
	f := c.URL(fi)
	c.WaitFor(10*time.Second, "the tokens on the follower", func() bool {
		_, okA := c.Nodes[fi].ACL().Resolve(a)
		_, okB := c.Nodes[fi].ACL().Resolve(b)
		return okA && okB
	})
	var g api.Grant
	if st, code := callAs(t, a, "PUT", f+"/v1/locks/a/1", `{"ttl_ms":60000}`, &g); st != 200 {
		t.Fatalf("a's first lock: %d %s", st, code)
	}
	lease := g.LeaseID
	for _, n := range []string{"a/2", "a/3"} {
		if st, code := callAs(t, a, "PUT", f+"/v1/locks/"+n, `{"lease_id":"`+lease+`"}`, nil); st != 200 {
			t.Fatalf("a takes %s: %d %s", n, st, code)
		}
	}
	refused := func(what string, ans rawhttp.Answer, quota string) {
		t.Helper()
		var eb api.ErrorBody
		_ = ans.Decode(&eb)
		if ans.Status != http.StatusTooManyRequests || eb.Error.Code != api.CodeQuotaExceeded || ans.Header.Get("Retry-After") == "" ||
			!strings.Contains(eb.Error.Message, quota) || strings.Contains(eb.Error.Message, lease) {
			t.Fatalf("%s: %d %s, want 429 quota_exceeded naming %s (and no lease ID)", what, ans.Status, ans.Raw, quota)
		}
	}
	as := func(tok string) rawhttp.Client {
		return rawhttp.Client{Token: tok, HTTP: &http.Client{Timeout: 10 * time.Second}}
	}
	ans := as(a).Do("PUT", f+"/v1/locks/a/4", `{"lease_id":"`+lease+`"}`)
	refused("a's fourth lock", ans, "max_locks_per_identity is 3")
	if !strings.Contains(string(ans.Raw), "has 3") {
		t.Fatalf("the refusal does not say the use: %s", ans.Raw)
	}
	if st := c.Nodes[c.LeaderIndex()].FSM().Lock("a/4"); st.Held {
		t.Fatal("a refused acquire took the lock")
	}
	// A retried acquire of a lock the lease holds is not a new grant.
	if st, code := callAs(t, a, "PUT", f+"/v1/locks/a/1", `{"lease_id":"`+lease+`"}`, nil); st != 200 {
		t.Fatalf("a asks again for a/1: %d %s", st, code)
	}
	callAs(t, a, "POST", f+"/v1/leases", `{"ttl_ms":60000}`, nil)
	refused("a's third lease", as(a).Do("POST", f+"/v1/leases", `{"ttl_ms":60000}`), "max_leases_per_identity is 2")
	// The other tenant and the admin are not held back.
	if st, code := callAs(t, b, "PUT", f+"/v1/locks/b/job", `{"ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("b's lock beside a at its quotas: %d %s", st, code)
	}
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/admin/x", `{"ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("the admin's lock: %d %s", st, code)
	}

	// Each reads its own use; only an admin reads everyone's.
	var ua, ub api.Usage
	c.WaitFor(10*time.Second, "the follower applied a's and b's locks", func() bool {
		callAs(t, a, "GET", f+"/v1/usage", "", &ua)
		callAs(t, b, "GET", f+"/v1/usage", "", &ub)
		return ua.Locks.Used == 3 && ub.Locks.Used == 1
	})
	if ua.Leases != (api.Use{Used: 2, Limit: 2}) || ua.Locks != (api.Use{Used: 3, Limit: 3}) || ua.Waiters != (api.Use{Used: 0, Limit: 1}) || ua.Identity == ub.Identity {
		t.Fatalf("a's usage %+v, b's %+v", ua, ub)
	}
	if st, code := callAs(t, a, "GET", f+"/v1/usage?all", "", nil); st != 403 || code != api.CodePermissionDenied {
		t.Fatalf("a reads everyone's usage: %d %s", st, code)
	}
	if st, code := callAs(t, "", "GET", f+"/v1/usage", "", nil); st != 401 {
		t.Fatalf("no token reads usage: %d %s", st, code)
	}
	var all api.UsageList
	c.WaitFor(10*time.Second, "the follower applied the admin's lock", func() bool {
		callAs(t, m, "GET", f+"/v1/usage?all", "", &all)
		return all.Cluster.Locks.Used == 5
	})
	if len(all.Identities) != 3 || all.Cluster.Locks.Limit != 1000 || all.Cluster.Leases.Used != 4 {
		t.Fatalf("the admin's usage list: %+v", all)
	}

	// /metrics has each identity's use for the admin only, as the other usage counts.
	var tokA api.ACLToken
	callAs(t, a, "GET", f+"/v1/acl/token/self", "", &tokA)
	want := `raftlock_identity_locks{identity="` + tokA.AccessorID + `"} 3`
	if got := string(as(m).Do("GET", f+"/metrics", "").Raw); !strings.Contains(got, want) || !strings.Contains(got, `raftlock_identity_quota{identity="`+tokA.AccessorID+`",kind="locks"} 3`) {
		t.Fatalf("the admin's /metrics lacks %s", want)
	}
	for _, tok := range []string{a, ""} {
		if got := string(as(tok).Do("GET", f+"/metrics", "").Raw); strings.Contains(got, "raftlock_identity_") {
			t.Fatalf("/metrics shows the identities' use to a caller without admin (token %v)", tok != "")
		}
	}

	// The admin raises a's own quota by updating its token: the secret stays valid.
	var upd api.ACLToken
	if st, code := callAs(t, m, "PUT", f+"/v1/acl/tokens/"+tokA.AccessorID, `{"policies":["a"],"quotas":{"max_locks":10}}`, &upd); st != 200 || upd.Quotas == nil || upd.Quotas.MaxLocks != 10 || upd.SecretID != "" {
		t.Fatalf("update a's token: %d %s %+v", st, code, upd)
	}
	c.WaitFor(10*time.Second, "a's new quota on the follower", func() bool {
		callAs(t, a, "GET", f+"/v1/usage", "", &ua)
		return ua.Locks.Limit == 10
	})
	if st, code := callAs(t, a, "PUT", f+"/v1/locks/a/4", `{"lease_id":"`+lease+`"}`, nil); st != 200 {
		t.Fatalf("a's fourth lock under its raised quota: %d %s", st, code)
	}
	// A policy's quotas show in its listing.
	var pol api.ACLPolicy
	if st, code := callAs(t, m, "PUT", f+"/v1/acl/policies/b", `{"rules":[{"prefix":"b/","access":"lock"}],"quotas":{"max_waiters":5}}`, &pol); st != 200 || pol.Quotas == nil || pol.Quotas.MaxWaiters != 5 {
		t.Fatalf("policy with quotas: %d %s %+v", st, code, pol)
	}
}

// Before protocol version 5 a policy or token with quotas is refused with 409
// version_inactive, naming the members that lag, and nothing is applied.
func TestUsage_QuotasNeedVersion5(t *testing.T) {
	c := testcluster.StartInProcessWith(t, 3, func(_ int, cfg *cluster.Config) { cfg.MaxVersion = 4 },
		func(_ int, cfg *transport.Config) { cfg.ACL = true })
	waitVersion(c, 4)
	m, _ := aclSetup(t, c, map[string]string{"a": `{"rules":[{"prefix":"a/","access":"lock"}]}`})
	f := c.URL(c.Follower())
	for _, r := range []struct{ method, path, body string }{
		{"PUT", "/v1/acl/policies/q", `{"rules":[{"prefix":"q/","access":"lock"}],"quotas":{"max_locks":1}}`},
		{"POST", "/v1/acl/tokens", `{"policies":["a"],"quotas":{"max_leases":1}}`},
	} {
		ans := rawhttp.Client{Token: m}.Do(r.method, f+r.path, r.body)
		var eb api.ErrorBody
		_ = ans.Decode(&eb)
		if ans.Status != http.StatusConflict || eb.Error.Code != api.CodeVersionInactive || !strings.Contains(eb.Error.Message, "version 5") {
			t.Fatalf("%s %s at version 4: %d %s", r.method, r.path, ans.Status, ans.Raw)
		}
	}
	var l api.ACLPolicyList
	callAs(t, m, "GET", f+"/v1/acl/policies", "", &l)
	for _, p := range l.Policies {
		if p.Name == "q" {
			t.Fatal("the refused policy was created")
		}
	}
}

// With ACLs off every caller is one identity, anonymous, whose quotas are the cluster's
// limits: the usage route says so, and the cluster-wide limit of grants binds it.
func TestUsage_ACLsOffIsOneIdentity(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, func(_ int, cfg *cluster.Config) { cfg.Limits = fsm.Limits{MaxLeases: 100, MaxLocks: 2} })
	c.WaitFor(30*time.Second, "version 5's limits on every node", func() bool {
		for _, n := range c.Nodes {
			if n.FSM().Limits().MaxLocks != 2 {
				return false
			}
		}
		return true
	})
	f := c.URL(c.Follower())
	for i := 0; i < 2; i++ {
		if st, code := call(t, "PUT", f+fmt.Sprintf("/v1/locks/x/%d", i), `{}`, nil); st != 200 {
			t.Fatalf("lock %d: %d %s", i, st, code)
		}
	}
	ans := rawhttp.Client{}.Do("PUT", f+"/v1/locks/x/2", `{}`)
	if ans.Status != http.StatusTooManyRequests || !strings.Contains(string(ans.Raw), "max_locks is 2") {
		t.Fatalf("third lock: %d %s", ans.Status, ans.Raw)
	}
	var u api.Usage
	c.WaitFor(10*time.Second, "the follower's usage", func() bool {
		call(t, "GET", f+"/v1/usage", "", &u)
		return u.Locks.Used == 2
	})
	if u.Identity != "anonymous" || u.Locks.Limit != 2 || u.Leases.Limit != 100 {
		t.Fatalf("usage with ACLs off: %+v", u)
	}
}
