package transport_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// startV2 starts an in-process cluster and waits until every node runs protocol version
// 2, which the primitives need.
func startV2(t *testing.T) *testcluster.InProcess {
	t.Helper()
	c := testcluster.StartInProcess(t, 3, nil)
	waitVersion(c, 2)
	return c
}

// waitVersion waits until every node of c runs protocol version v or a later one; the
// leader raises the version only once every member registered, so this can take a while.
func waitVersion(c *testcluster.InProcess, v uint64) {
	c.WaitFor(30*time.Second, fmt.Sprintf("protocol version %d", v), func() bool {
		for _, n := range c.Nodes {
			if n.FSM().Version() < v {
				return false
			}
		}
		return true
	})
}

type grantResult[T any] struct {
	g    T
	st   int
	code string
}

// Shared locks through a follower: readers share, a writer waits, a queued writer holds
// later readers back, and the writer's release admits every queued reader in one commit.
func TestAPI_SharedLockThroughFollower(t *testing.T) {
	c := startV2(t)
	f := c.URL(c.Follower())

	var r1, r2 api.Grant
	if st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"mode":"shared","owner":"r1"}`, &r1); st != 200 || r1.Mode != api.ModeShared {
		t.Fatalf("shared acquire: %d %s %+v", st, code, r1)
	}
	if st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"mode":"shared","owner":"r2"}`, &r2); st != 200 || r2.Token <= r1.Token {
		t.Fatalf("second shared acquire: %d %s %+v", st, code, r2)
	}
	var s api.LockStatus
	call(t, "GET", f+"/v1/locks/db/users", "", &s)
	if !s.Held || s.Mode != api.ModeShared || s.HolderCount != 2 || len(s.Holders) != 2 || s.Holders[0].Owner != "r1" || s.Holders[1].Token != r2.Token || s.Token != r2.Token || s.Owner != "r1" {
		t.Fatalf("status of a lock held shared: %+v", s)
	}
	if st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"owner":"w"}`, nil); st != 409 || code != api.CodeLockHeld {
		t.Fatalf("exclusive beside readers: %d %s", st, code)
	}
	if st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"lease_id":"`+r1.LeaseID+`"}`, nil); st != 409 || code != api.CodeModeConflict {
		t.Fatalf("upgrade: %d %s", st, code)
	}
	if st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"mode":"read"}`, nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("bad mode: %d %s", st, code)
	}

	writer := make(chan grantResult[api.Grant], 1)
	go func() {
		var g api.Grant
		st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"owner":"w","wait_ms":20000}`, &g)
		writer <- grantResult[api.Grant]{g, st, code}
	}()
	rawhttp.WaitStatus(t, f, "db/users", func(s api.LockStatus) bool { return s.Waiters == 1 })
	// A reader arriving behind the queued writer waits too (writers do not starve).
	if st, code := call(t, "PUT", f+"/v1/locks/db/users", `{"mode":"shared"}`, nil); st != 409 || code != api.CodeLockHeld {
		t.Fatalf("reader behind a queued writer: %d %s", st, code)
	}
	readers := make(chan grantResult[api.Grant], 2)
	for i := 0; i < 2; i++ {
		go func() {
			var g api.Grant
			st, code := call(t, "PUT", f+"/v1/locks/db/users", fmt.Sprintf(`{"mode":"shared","owner":"q%d","wait_ms":20000}`, i), &g)
			readers <- grantResult[api.Grant]{g, st, code}
		}()
	}
	rawhttp.WaitStatus(t, f, "db/users", func(s api.LockStatus) bool { return s.Waiters == 3 })
	for _, g := range []api.Grant{r1, r2} {
		if st, code := call(t, "DELETE", f+"/v1/locks/db/users", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, g.LeaseID, g.Token), nil); st != 200 {
			t.Fatalf("release reader: %d %s", st, code)
		}
	}
	w := <-writer
	if w.st != 200 || w.g.Mode != api.ModeExclusive || w.g.Token <= r2.Token {
		t.Fatalf("writer: %+v", w)
	}
	call(t, "DELETE", f+"/v1/locks/db/users", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, w.g.LeaseID, w.g.Token), nil)
	a, b := <-readers, <-readers
	if a.st != 200 || b.st != 200 || a.g.Token != b.g.Token || a.g.Token <= w.g.Token {
		t.Fatalf("queued readers are granted together by one commit: %+v %+v", a, b)
	}
}

// Semaphores: permits up to the limit, one permit per lease, a clear refusal when full or
// with another limit, FIFO waiting with handover by the releasing commit, and status.
func TestAPI_SemaphoreLifecycle(t *testing.T) {
	c := startV2(t)
	f := c.URL(c.Follower())

	var p1, p2 api.SemaphoreGrant
	if st, code := call(t, "PUT", f+"/v1/semaphores/pool/db", `{"limit":2,"owner":"a"}`, &p1); st != 200 || p1.Limit != 2 || p1.Token == 0 || len(p1.LeaseID) != api.LeaseIDLen {
		t.Fatalf("first permit: %d %s %+v", st, code, p1)
	}
	var again api.SemaphoreGrant
	call(t, "PUT", f+"/v1/semaphores/pool/db", `{"limit":2,"lease_id":"`+p1.LeaseID+`"}`, &again)
	if again.Token != p1.Token {
		t.Fatalf("a repeat by the holder answers the same permit: %+v vs %+v", again, p1)
	}
	call(t, "PUT", f+"/v1/semaphores/pool/db", `{"limit":2,"owner":"b"}`, &p2)
	if st, code := call(t, "PUT", f+"/v1/semaphores/pool/db", `{"limit":2}`, nil); st != 409 || code != api.CodeSemaphoreFull {
		t.Fatalf("full: %d %s", st, code)
	}
	if st, code := call(t, "PUT", f+"/v1/semaphores/pool/db", `{"limit":3}`, nil); st != 409 || code != api.CodeLimitConflict {
		t.Fatalf("other limit: %d %s", st, code)
	}
	for body, want := range map[string]string{
		`{}`:                              api.CodeInvalidArgument,
		`{"limit":0}`:                     api.CodeInvalidArgument,
		`{"limit":10001}`:                 api.CodeInvalidArgument,
		`{"limit":2,"bogus":1}`:           api.CodeInvalidJSON,
		`{"limit":2,"wait_ms":-1}`:        api.CodeInvalidArgument,
		`{"limit":2,"lease_id":"nothex"}`: api.CodeInvalidArgument,
		`{"limit":2,"ttl_ms":1}`:          api.CodeInvalidTTL,
		`{"limit":2,"lease_id":"` + strings.Repeat("ab", 16) + `"}`: api.CodeLeaseNotFound,
	} {
		if st, code := call(t, "PUT", f+"/v1/semaphores/pool/db", body, nil); code != want || st != api.Status(want) {
			t.Errorf("PUT %s: %d %s, want %s", body, st, code, want)
		}
	}

	waiter := make(chan grantResult[api.SemaphoreGrant], 1)
	go func() {
		var g api.SemaphoreGrant
		st, code := call(t, "PUT", f+"/v1/semaphores/pool/db", `{"limit":2,"owner":"c","wait_ms":20000}`, &g)
		waiter <- grantResult[api.SemaphoreGrant]{g, st, code}
	}()
	var s api.SemaphoreStatus
	c.WaitFor(10*time.Second, "a semaphore waiter", func() bool {
		call(t, "GET", f+"/v1/semaphores/pool/db", "", &s)
		return s.Waiters == 1
	})
	if s.Limit != 2 || len(s.Permits) != 2 || s.Permits[0].Owner != "a" || s.Permits[1].Token != p2.Token {
		t.Fatalf("status: %+v", s)
	}
	blocked := make(chan api.SemaphoreStatus, 1)
	go func() {
		var b api.SemaphoreStatus
		call(t, "GET", fmt.Sprintf("%s/v1/semaphores/pool/db?wait_index=%d&wait_ms=20000", f, s.ModifyIndex), "", &b)
		blocked <- b
	}()
	if st, code := call(t, "DELETE", f+"/v1/semaphores/pool/db", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, p1.LeaseID, p1.Token+1000), nil); st != 409 || code != api.CodeNotHolder {
		t.Fatalf("stale release: %d %s", st, code)
	}
	var rel api.ReleaseResult
	if st, code := call(t, "DELETE", f+"/v1/semaphores/pool/db", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, p1.LeaseID, p1.Token), &rel); st != 200 || !rel.Released {
		t.Fatalf("release: %d %s", st, code)
	}
	w := <-waiter
	if w.st != 200 || w.g.Token <= p2.Token || w.g.Owner != "c" {
		t.Fatalf("waiter: %+v", w)
	}
	if b := <-blocked; b.ModifyIndex <= s.ModifyIndex || b.Permits[1].Token != w.g.Token {
		t.Fatalf("blocking query: %+v", b)
	}
	// Revoking the leases frees the semaphore; one not in use reports limit 0.
	for _, id := range []string{p2.LeaseID, w.g.LeaseID} {
		call(t, "DELETE", f+"/v1/leases/"+id, "", nil)
	}
	call(t, "GET", f+"/v1/semaphores/pool/db", "", &s)
	if s.Limit != 0 || len(s.Permits) != 0 || s.Waiters != 0 || s.Permits == nil {
		t.Fatalf("semaphore not in use: %+v", s)
	}
}

// Elections: campaign, proclaim, a candidate waiting, resign electing it in one commit with
// its own value, and a blocking query that sees every change.
func TestAPI_ElectionLifecycle(t *testing.T) {
	c := startV2(t)
	f := c.URL(c.Follower())

	var l1 api.ElectionGrant
	if st, code := call(t, "PUT", f+"/v1/elections/svc/primary", `{"value":"10.0.0.1","owner":"n1"}`, &l1); st != 200 || l1.Value != "10.0.0.1" || l1.Token == 0 || l1.ModifyIndex != l1.Token {
		t.Fatalf("campaign: %d %s %+v", st, code, l1)
	}
	if st, code := call(t, "PUT", f+"/v1/elections/svc/primary", `{"value":"x"}`, nil); st != 409 || code != api.CodeElectionHeld {
		t.Fatalf("second campaign: %d %s", st, code)
	}
	var e api.ElectionStatus
	call(t, "GET", f+"/v1/elections/svc/primary", "", &e)
	blocked := make(chan api.ElectionStatus, 1)
	go func() {
		var b api.ElectionStatus
		call(t, "GET", fmt.Sprintf("%s/v1/elections/svc/primary?wait_index=%d&wait_ms=20000", f, e.ModifyIndex), "", &b)
		blocked <- b
	}()
	var p api.ElectionGrant
	if st, code := call(t, "PUT", f+"/v1/elections/svc/primary", fmt.Sprintf(`{"value":"10.0.0.2","lease_id":%q,"token":%d}`, l1.LeaseID, l1.Token), &p); st != 200 || p.Token != l1.Token || p.Value != "10.0.0.2" || p.ModifyIndex <= l1.ModifyIndex {
		t.Fatalf("proclaim: %d %s %+v", st, code, p)
	}
	if b := <-blocked; b.Value != "10.0.0.2" || b.ModifyIndex != p.ModifyIndex || !b.Elected || b.Owner != "n1" {
		t.Fatalf("observer saw %+v", b)
	}
	if st, code := call(t, "PUT", f+"/v1/elections/svc/primary", fmt.Sprintf(`{"value":"v","lease_id":%q,"token":%d}`, l1.LeaseID, l1.Token+1), nil); st != 409 || code != api.CodeNotHolder {
		t.Fatalf("proclaim with a wrong token: %d %s", st, code)
	}
	if st, code := call(t, "PUT", f+"/v1/elections/svc/primary", `{"value":"`+strings.Repeat("v", api.MaxElectionValueLen+1)+`"}`, nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("value too long: %d %s", st, code)
	}
	if st, code := call(t, "PUT", f+"/v1/elections/svc/primary", `{"value":"v","token":3}`, nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("proclaim without a lease: %d %s", st, code)
	}

	cand := make(chan grantResult[api.ElectionGrant], 1)
	go func() {
		var g api.ElectionGrant
		st, code := call(t, "PUT", f+"/v1/elections/svc/primary", `{"value":"10.0.0.3","owner":"n2","wait_ms":20000}`, &g)
		cand <- grantResult[api.ElectionGrant]{g, st, code}
	}()
	c.WaitFor(10*time.Second, "a candidate", func() bool {
		call(t, "GET", f+"/v1/elections/svc/primary", "", &e)
		return e.Candidates == 1
	})
	if st, code := call(t, "DELETE", f+"/v1/elections/svc/primary", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, l1.LeaseID, l1.Token), nil); st != 200 {
		t.Fatalf("resign: %d %s", st, code)
	}
	g := <-cand
	if g.st != 200 || g.g.Token <= l1.Token || g.g.Value != "10.0.0.3" || g.g.Owner != "n2" || g.g.ModifyIndex != g.g.Token {
		t.Fatalf("candidate: %+v", g)
	}
	call(t, "GET", f+"/v1/elections/svc/primary", "", &e)
	if !e.Elected || e.Token != g.g.Token || e.Value != "10.0.0.3" || e.Candidates != 0 {
		t.Fatalf("status after resign: %+v", e)
	}
}

// ACL rules apply to a primitive's name as to a lock's: lock rights on the prefix to take,
// release or campaign, read rights to read; a refused request applies nothing.
func TestACL_PrimitivesFollowNameRules(t *testing.T) {
	c := startACLCluster(t)
	f := c.URL(c.Follower())
	m, toks := aclSetup(t, c, map[string]string{
		"jobs-read": `{"rules":[{"prefix":"jobs/","access":"read"}]}`,
		"jobs-lock": `{"rules":[{"prefix":"jobs/","access":"lock"}]}`,
	})
	ro, rw := toks["jobs-read"], toks["jobs-lock"]
	var sg api.SemaphoreGrant
	if st, code := callAs(t, rw, "PUT", f+"/v1/semaphores/jobs/s", `{"limit":1}`, &sg); st != 200 {
		t.Fatalf("semaphore with a lock token: %d %s", st, code)
	}
	var eg api.ElectionGrant
	if st, code := callAs(t, rw, "PUT", f+"/v1/elections/jobs/e", `{"value":"v"}`, &eg); st != 200 {
		t.Fatalf("campaign with a lock token: %d %s", st, code)
	}
	cases := []struct {
		what, token, method, path, body string
		status                          int
	}{
		{"no token", "", "PUT", "/v1/semaphores/jobs/t", `{"limit":1}`, 401},
		{"read token taking a permit", ro, "PUT", "/v1/semaphores/jobs/t", `{"limit":1}`, 403},
		{"lock token on another prefix", rw, "PUT", "/v1/semaphores/other/t", `{"limit":1}`, 403},
		{"read token campaigning", ro, "PUT", "/v1/elections/jobs/f", `{"value":"v"}`, 403},
		{"read token resigning", ro, "DELETE", "/v1/elections/jobs/e", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, eg.LeaseID, eg.Token), 403},
		{"read token releasing", ro, "DELETE", "/v1/semaphores/jobs/s", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, sg.LeaseID, sg.Token), 403},
		{"read token on another prefix", ro, "GET", "/v1/elections/other/e", ``, 403},
		{"read token reading", ro, "GET", "/v1/elections/jobs/e", ``, 200},
		{"read token reading a semaphore", ro, "GET", "/v1/semaphores/jobs/s", ``, 200},
	}
	for _, tc := range cases {
		if st, code := callAs(t, tc.token, tc.method, f+tc.path, tc.body, nil); st != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.what, st, code, tc.status)
		}
	}
	var e api.ElectionStatus
	callAs(t, m, "GET", f+"/v1/elections/jobs/e", "", &e)
	var s api.SemaphoreStatus
	callAs(t, m, "GET", f+"/v1/semaphores/jobs/s", "", &s)
	if !e.Elected || e.Token != eg.Token || len(s.Permits) != 1 {
		t.Fatalf("refused requests changed state: %+v %+v", e, s)
	}
}

// While a member speaks only protocol version 1 (a rolling upgrade in progress), the
// primitives answer 503 with Retry-After and say that every node must be upgraded;
// nothing is applied, and exclusive locks work as before.
func TestAPI_PrimitivesWaitForVersion2(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, func(i int, cfg *cluster.Config) {
		if i == 2 {
			cfg.MaxVersion = 1
		}
	})
	f := c.URL(c.Follower())
	for _, r := range []struct{ method, path, body string }{
		{"PUT", "/v1/semaphores/s", `{"limit":2}`},
		{"PUT", "/v1/elections/e", `{"value":"v"}`},
		{"PUT", "/v1/locks/l", `{"mode":"shared"}`},
	} {
		req, _ := http.NewRequest(r.method, f+r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || eb.Error.Code != api.CodeNoLeader || !strings.Contains(eb.Error.Message, "every node") {
			t.Fatalf("%s %s at version 1: %d %+v", r.method, r.path, resp.StatusCode, eb)
		}
	}
	if st, code := call(t, "PUT", f+"/v1/locks/l", `{}`, nil); st != 200 {
		t.Fatalf("exclusive lock at version 1: %d %s", st, code)
	}
	var s api.SemaphoreStatus
	call(t, "GET", f+"/v1/semaphores/s", "", &s)
	if s.Limit != 0 {
		t.Fatalf("refused semaphore request applied: %+v", s)
	}
}
