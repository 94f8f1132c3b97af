package transport_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/transport"
)

// callAs is call with a bearer token ("" sends none).
func callAs(t testing.TB, token, method, url, body string, out any) (int, string) {
	t.Helper()
	a := rawhttp.Client{Token: token}.Do(method, url, body)
	if a.Err != nil {
		t.Fatalf("%s %s: %v", method, url, a.Err)
	}
	if token != "" && strings.Contains(string(a.Raw), token) && !strings.Contains(url, "/v1/acl/") {
		t.Fatalf("%s %s: the answer echoes the token", method, url)
	}
	if a.Status >= 300 {
		var eb api.ErrorBody
		if err := a.Decode(&eb); err != nil || eb.Error.Code == "" {
			t.Fatalf("%s %s: %d with a body that is not an API error: %s", method, url, a.Status, a.Raw)
		}
		return a.Status, eb.Error.Code
	}
	if out != nil {
		if err := a.Decode(out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, url, a.Raw, err)
		}
	}
	return a.Status, ""
}

// startACLCluster starts three in-process nodes with ACLs on, once they can serve ACLs.
func startACLCluster(t testing.TB) *testcluster.InProcess {
	return startACLClusterWith(t, func(*transport.Config) {})
}

// startACLClusterWith is startACLCluster with tune applied to every node's configuration,
// for the tests of a limit that only applies with ACLs on.
func startACLClusterWith(t testing.TB, tune func(cfg *transport.Config)) *testcluster.InProcess {
	c := testcluster.StartInProcessWith(t, 3, nil, func(i int, cfg *transport.Config) {
		cfg.ACL = true
		tune(cfg)
	})
	// ACLs need protocol version 2, which the leader raises once every member registered.
	waitVersion(c, 2)
	return c
}

// With ACLs on, nothing works without a token but the bootstrap, which works once; tokens
// carry rights per lock-name prefix, checked on every route, and a refused request applies
// nothing.
func TestACL_TokensAndRights(t *testing.T) {
	c := startACLCluster(t)
	f := c.URL(c.Follower())

	if st, code := callAs(t, "", "PUT", f+"/v1/locks/jobs/a", `{}`, nil); st != 401 || code != api.CodeUnauthenticated {
		t.Fatalf("acquire before bootstrap: %d %s", st, code)
	}
	// What a web page of another site could make a browser send is refused, and uses
	// nothing up: an Origin header, a form's content types.
	for _, h := range [][]string{{"Origin", "https://evil.example"}, {"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Type", "text/plain;charset=UTF-8"}, {"Content-Type", "multipart/form-data; boundary=x"}} {
		a := rawhttp.Client{}.Do("POST", f+"/v1/acl/bootstrap", "", h...)
		if a.Status != 403 && a.Status != 400 && a.Status != 415 || strings.Contains(string(a.Raw), "secret") {
			t.Fatalf("bootstrap with %s: %s: %d %s, want refused", h[0], h[1], a.Status, a.Raw)
		}
	}
	var mgmt api.ACLToken
	if st, code := callAs(t, "", "POST", f+"/v1/acl/bootstrap", "", &mgmt); st != 200 || len(mgmt.SecretID) < 32 {
		t.Fatalf("bootstrap: %d %s %+v", st, code, mgmt)
	}
	if st, code := callAs(t, "", "POST", f+"/v1/acl/bootstrap", "", nil); st != 409 || code != api.CodeConflict {
		t.Fatalf("second bootstrap: %d %s", st, code)
	}
	m := mgmt.SecretID

	for _, p := range []struct{ name, body string }{
		{"jobs-read", `{"rules":[{"prefix":"jobs/","access":"read"}]}`},
		{"jobs-lock", `{"rules":[{"prefix":"jobs/","access":"lock"},{"prefix":"jobs/secret/","access":"deny"}]}`},
	} {
		if st, code := callAs(t, m, "PUT", f+"/v1/acl/policies/"+p.name, p.body, nil); st != 200 {
			t.Fatalf("policy %s: %d %s", p.name, st, code)
		}
	}
	token := func(policy string) string {
		var tok api.ACLToken
		if st, code := callAs(t, m, "POST", f+"/v1/acl/tokens", `{"policies":["`+policy+`"]}`, &tok); st != 200 || tok.SecretID == "" {
			t.Fatalf("token for %s: %d %s", policy, st, code)
		}
		return tok.SecretID
	}
	ro, rw := token("jobs-read"), token("jobs-lock")

	var g api.Grant
	if st, code := callAs(t, rw, "PUT", f+"/v1/locks/jobs/a", `{"ttl_ms":60000}`, &g); st != 200 {
		t.Fatalf("lock token acquiring jobs/a: %d %s", st, code)
	}
	cases := []struct {
		what, token, method, path, body string
		status                          int
		code                            string
	}{
		{"no token", "", "PUT", "/v1/locks/jobs/b", `{}`, 401, api.CodeUnauthenticated},
		{"unknown token", "0123456789abcdef0123456789abcdef", "PUT", "/v1/locks/jobs/b", `{}`, 401, api.CodeUnauthenticated},
		{"read token acquiring", ro, "PUT", "/v1/locks/jobs/b", `{}`, 403, api.CodePermissionDenied},
		{"lock token on another prefix", rw, "PUT", "/v1/locks/other/b", `{}`, 403, api.CodePermissionDenied},
		{"deny carved out of a grant", rw, "PUT", "/v1/locks/jobs/secret/x", `{}`, 403, api.CodePermissionDenied},
		{"read token releasing", ro, "DELETE", "/v1/locks/jobs/a", `{"lease_id":"` + g.LeaseID + `","token":1}`, 403, api.CodePermissionDenied},
		{"read token creating a lease", ro, "POST", "/v1/leases", `{}`, 403, api.CodePermissionDenied},
		{"lock token adding a member", rw, "POST", "/v1/cluster/nodes", `{"id":"n9","raft_addr":"127.0.0.1:9","http_addr":"127.0.0.1:9"}`, 403, api.CodePermissionDenied},
		{"lock token removing a member", rw, "DELETE", "/v1/cluster/nodes/n1", ``, 403, api.CodePermissionDenied},
		{"lock token making tokens", rw, "POST", "/v1/acl/tokens", `{"policies":["jobs-lock"]}`, 403, api.CodePermissionDenied},
		{"read token taking a snapshot", ro, "GET", "/v1/snapshot", ``, 403, api.CodePermissionDenied},
		{"read token reading another prefix", ro, "GET", "/v1/locks/other/x", ``, 403, api.CodePermissionDenied},
	}
	for _, tc := range cases {
		if st, code := callAs(t, tc.token, tc.method, f+tc.path, tc.body, nil); st != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.what, st, code, tc.status, tc.code)
		}
	}
	// Nothing refused was applied.
	for _, name := range []string{"jobs/b", "other/b", "jobs/secret/x"} {
		var st api.LockStatus
		callAs(t, m, "GET", f+"/v1/locks/"+name, "", &st)
		if st.Held {
			t.Errorf("%s is held after refused acquires", name)
		}
	}
	if !c.Nodes[0].Members().Has("n1") || c.Nodes[0].Members().Has("n9") {
		t.Error("membership changed by refused requests")
	}

	// A read token reads, and a list shows only what it may read.
	var st api.LockStatus
	if code, _ := callAs(t, ro, "GET", f+"/v1/locks/jobs/a", "", &st); code != 200 || !st.Held {
		t.Fatalf("read token status: %d %+v", code, st)
	}
	callAs(t, m, "PUT", f+"/v1/locks/other/visible-to-admin", `{"ttl_ms":60000}`, nil)
	var list api.LockList
	callAs(t, ro, "GET", f+"/v1/locks", "", &list)
	for _, l := range list.Locks {
		if !strings.HasPrefix(l.Name, "jobs/") {
			t.Errorf("read token's list shows %s", l.Name)
		}
	}
	// Revoked tokens stop working.
	var toks api.ACLTokenList
	callAs(t, m, "GET", f+"/v1/acl/tokens", "", &toks)
	for _, tok := range toks.Tokens {
		if tok.SecretID != "" {
			t.Fatal("a token listing shows a secret")
		}
	}
	var self api.ACLToken
	callAs(t, ro, "GET", f+"/v1/acl/token/self", "", &self)
	if st, code := callAs(t, m, "DELETE", f+"/v1/acl/tokens/"+self.AccessorID, "", nil); st != 200 {
		t.Fatalf("revoke: %d %s", st, code)
	}
	c.WaitFor(10e9, "the revoked token to stop working on the follower", func() bool {
		st, _ := callAs(t, ro, "GET", f+"/v1/locks/jobs/a", "", nil)
		return st == 401
	})
}

// A token created through the leader works at once through a follower that has not yet
// applied it: the follower asks the leader instead of refusing.
func TestACL_NewTokenWorksThroughFollowers(t *testing.T) {
	c := startACLCluster(t)
	l := c.URL(c.Leader(10e9))
	var mgmt api.ACLToken
	callAs(t, "", "POST", l+"/v1/acl/bootstrap", "", &mgmt)
	callAs(t, mgmt.SecretID, "PUT", l+"/v1/acl/policies/all", `{"rules":[{"prefix":"","access":"lock"}]}`, nil)
	for i := 0; i < 20; i++ {
		var tok api.ACLToken
		callAs(t, mgmt.SecretID, "POST", l+"/v1/acl/tokens", `{"policies":["all"]}`, &tok)
		for j := range c.Nodes {
			if st, code := callAs(t, tok.SecretID, "POST", c.URL(j)+"/v1/leases", `{}`, nil); st != 201 {
				t.Fatalf("new token %d through n%d: %d %s", i, j+1, st, code)
			}
		}
	}
}

// Without --acl a node does not answer the bootstrap: the token would protect nothing
// there, and whoever asked first would hold the management token once ACLs were turned on.
func TestACL_BootstrapRefusedWithACLsOff(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	if st, code := callAs(t, "", "POST", c.URL(c.Follower())+"/v1/acl/bootstrap", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("bootstrap with ACLs off: %d %s, want 400 invalid_argument", st, code)
	}
	for _, n := range c.Nodes {
		if n.ACL().Bootstrapped() {
			t.Fatalf("%s: bootstrapped with ACLs off", n.ID())
		}
	}
}

// Deleting a token ends what it started, through a follower: its waiting acquire and its
// blocking query answer 401 unauthenticated at the deletion (long before their wait_ms),
// the lock it held is free at once (its lease was revoked in the deletion's entry), and
// the holder's release afterwards hands nothing to it. Two tokens are deleted: w, whose
// query is woken by the deletion's own entry (it frees w's lock, which moves the modify
// index of every free name) and must still not answer with data, and r, a reader that
// holds nothing, whose query only the deletion itself can end.
func TestACL_RevokedTokenEndsWhatItStarted(t *testing.T) {
	c := startACLClusterV3(t)
	m, toks := aclSetup(t, c, map[string]string{"w": `{"rules":[{"prefix":"jobs/","access":"lock"}]}`, "r": `{"rules":[{"prefix":"","access":"read"}]}`})
	w, r := toks["w"], toks["r"]
	f := c.URL(c.Follower())
	var self, rself api.ACLToken
	if st, code := callAs(t, w, "GET", f+"/v1/acl/token/self", "", &self); st != 200 {
		t.Fatalf("token self: %d %s", st, code)
	}
	if st, code := callAs(t, r, "GET", f+"/v1/acl/token/self", "", &rself); st != 200 {
		t.Fatalf("token self: %d %s", st, code)
	}
	var held, own api.Grant
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000}`, &held); st != 200 {
		t.Fatalf("the holder acquires: %d %s", st, code)
	}
	if st, code := callAs(t, w, "PUT", f+"/v1/locks/jobs/own", `{"ttl_ms":60000}`, &own); st != 200 {
		t.Fatalf("w acquires jobs/own: %d %s", st, code)
	}
	var quiet api.LockStatus
	callAs(t, w, "GET", f+"/v1/locks/jobs/quiet", "", &quiet)

	type answer struct {
		status int
		code   string
		at     time.Time
	}
	waited, queried, rqueried := make(chan answer, 1), make(chan answer, 1), make(chan answer, 1)
	go func() {
		st, code := callAs(t, w, "PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000,"wait_ms":20000}`, nil)
		waited <- answer{st, code, time.Now()}
	}()
	go func() {
		st, code := callAs(t, w, "GET", fmt.Sprintf("%s/v1/locks/jobs/quiet?wait_index=%d&wait_ms=20000", f, quiet.ModifyIndex), "", nil)
		queried <- answer{st, code, time.Now()}
	}()
	go func() {
		st, code := callAs(t, r, "GET", fmt.Sprintf("%s/v1/locks/jobs/quiet?wait_index=%d&wait_ms=20000", f, quiet.ModifyIndex), "", nil)
		rqueried <- answer{st, code, time.Now()}
	}()
	c.WaitFor(10*time.Second, "the acquire to wait and the query to block", func() bool {
		watches := 0
		for _, n := range c.Nodes {
			watches += n.Events().Watches()
		}
		return watches >= 4 && c.Nodes[c.Leader(10*time.Second)].FSM().Lock("jobs/held").Waiters != nil
	})
	// Every wait is 20 s: an answer within 5 s came from the deletion. r is deleted
	// first, alone: that entry changes no lock, so only the deletion can end its query.
	for _, del := range []struct {
		accessor string
		open     map[string]chan answer
	}{
		{rself.AccessorID, map[string]chan answer{"blocking query (r)": rqueried}},
		{self.AccessorID, map[string]chan answer{"waiting acquire": waited, "blocking query (w)": queried}},
	} {
		revoked := time.Now()
		if st, code := callAs(t, m, "DELETE", f+"/v1/acl/tokens/"+del.accessor, "", nil); st != 200 {
			t.Fatalf("delete a token: %d %s", st, code)
		}
		for what, ch := range del.open {
			select {
			case a := <-ch:
				if a.status != 401 || a.code != api.CodeUnauthenticated {
					t.Errorf("%s of the deleted token: %d %s, want 401 unauthenticated", what, a.status, a.code)
				}
				t.Logf("%s answered %v after the deletion", what, a.at.Sub(revoked).Round(time.Millisecond))
			case <-time.After(5 * time.Second):
				t.Fatalf("%s of the deleted token still open 5 s after the deletion", what)
			}
		}
	}
	var st api.LockStatus
	if callAs(t, m, "GET", f+"/v1/locks/jobs/own", "", &st); st.Held {
		t.Errorf("the deleted token's lock is still held: %+v", st)
	}
	if code, _ := callAs(t, m, "DELETE", f+"/v1/locks/jobs/held", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, held.LeaseID, held.Token), nil); code != 200 {
		t.Fatalf("the holder releases: %d", code)
	}
	if callAs(t, m, "GET", f+"/v1/locks/jobs/held", "", &st); st.Held {
		t.Errorf("the release handed the lock on after the token's deletion: %+v", st)
	}
}
