package transport_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// call sends a request and decodes a JSON answer into out (when non-nil). It returns the
// status and, for errors, the error code.
func call(t *testing.T, method, url, body string, out any) (int, string) {
	t.Helper()
	a := rawhttp.Client{}.Do(method, url, body)
	if a.Err != nil {
		t.Fatalf("%s %s: %v", method, url, a.Err)
	}
	if a.Status >= 300 {
		var eb api.ErrorBody
		if err := a.Decode(&eb); err != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Fatalf("%s %s: status %d with a body that is not an API error: %s", method, url, a.Status, a.Raw)
		}
		if a.Status == http.StatusServiceUnavailable && a.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: 503 without Retry-After", method, url)
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

func TestAPI_LockLifecycleThroughFollower(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	leader := c.URL(c.Leader(10 * time.Second))

	var g1 api.Grant
	if st, code := call(t, "PUT", f+"/v1/locks/accounts/A", `{"owner":"worker-1"}`, &g1); st != 200 {
		t.Fatalf("acquire through a follower: %d %s", st, code)
	}
	if g1.Token == 0 || len(g1.LeaseID) != api.LeaseIDLen || g1.TTLMs != api.DefaultTTLMs || g1.Owner != "worker-1" {
		t.Fatalf("grant = %+v", g1)
	}
	// Idempotent: the same lease acquiring again gets the same grant.
	var again api.Grant
	call(t, "PUT", f+"/v1/locks/accounts/A", `{"lease_id":"`+g1.LeaseID+`"}`, &again)
	if again.Token != g1.Token {
		t.Fatalf("re-acquire by the holder: token %d, want %d", again.Token, g1.Token)
	}
	if st, code := call(t, "PUT", f+"/v1/locks/accounts/A", `{}`, nil); st != 409 || code != api.CodeLockHeld {
		t.Fatalf("conflict: %d %s", st, code)
	}

	// A waiter queues, and the release hands over in one commit with a higher token.
	type result struct {
		g    api.Grant
		st   int
		code string
	}
	waiter := make(chan result, 1)
	go func() {
		var g api.Grant
		st, code := call(t, "PUT", f+"/v1/locks/accounts/A", `{"owner":"worker-2","wait_ms":20000}`, &g)
		waiter <- result{g, st, code}
	}()
	var st0 api.LockStatus
	rawhttp.WaitStatus(t, leader, "accounts/A", func(s api.LockStatus) bool { st0 = s; return s.Waiters == 1 })

	// A blocking query returns as soon as the lock changes.
	blocked := make(chan api.LockStatus, 1)
	go func() {
		var s api.LockStatus
		call(t, "GET", fmt.Sprintf("%s/v1/locks/accounts/A?wait_index=%d&wait_ms=20000", f, st0.ModifyIndex), "", &s)
		blocked <- s
	}()

	if st, code := call(t, "DELETE", f+"/v1/locks/accounts/A", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, g1.LeaseID, g1.Token-1), nil); st != 409 || code != api.CodeNotHolder {
		t.Fatalf("stale release: %d %s", st, code)
	}
	var rel api.ReleaseResult
	if st, code := call(t, "DELETE", f+"/v1/locks/accounts/A", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, g1.LeaseID, g1.Token), &rel); st != 200 || !rel.Released {
		t.Fatalf("release: %d %s %+v", st, code, rel)
	}
	w := <-waiter
	if w.st != 200 || w.g.Token <= g1.Token || w.g.Owner != "worker-2" {
		t.Fatalf("waiter: %+v", w)
	}
	b := <-blocked
	if b.ModifyIndex <= st0.ModifyIndex {
		t.Fatalf("blocking query returned modify index %d, not above %d", b.ModifyIndex, st0.ModifyIndex)
	}
	var s api.LockStatus
	call(t, "GET", f+"/v1/locks/accounts/A", "", &s)
	if !s.Held || s.Token != w.g.Token || s.Owner != "worker-2" || s.Waiters != 0 {
		t.Fatalf("status after handover: %+v", s)
	}
	var list api.LockList
	call(t, "GET", f+"/v1/locks?prefix=accounts/", "", &list)
	if len(list.Locks) != 1 || list.Locks[0].Name != "accounts/A" {
		t.Fatalf("list: %+v", list)
	}
}

func TestAPI_LeasesThroughFollower(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	var l api.Lease
	if st, code := call(t, "POST", f+"/v1/leases", `{"ttl_ms":5000}`, &l); st != 201 || l.TTLMs != 5000 {
		t.Fatalf("create lease: %d %s %+v", st, code, l)
	}
	var g api.Grant
	call(t, "PUT", f+"/v1/locks/jobs/nightly", `{"lease_id":"`+l.LeaseID+`"}`, &g)
	var ka api.Lease
	if st, code := call(t, "POST", f+"/v1/leases/"+l.LeaseID+"/keepalive", "", &ka); st != 200 || ka.TTLMs != 5000 {
		t.Fatalf("keepalive: %d %s %+v", st, code, ka)
	}
	var got api.Lease
	call(t, "GET", f+"/v1/leases/"+l.LeaseID, "", &got)
	if len(got.Locks) != 1 || got.Locks[0] != "jobs/nightly" {
		t.Fatalf("get lease: %+v", got)
	}
	var rv api.RevokeResult
	call(t, "DELETE", f+"/v1/leases/"+l.LeaseID, "", &rv)
	if len(rv.Released) != 1 || rv.Released[0] != "jobs/nightly" {
		t.Fatalf("revoke: %+v", rv)
	}
	for _, probe := range []struct{ method, path string }{
		{"POST", "/v1/leases/" + l.LeaseID + "/keepalive"},
		{"GET", "/v1/leases/" + l.LeaseID},
		{"DELETE", "/v1/leases/" + l.LeaseID},
	} {
		if st, code := call(t, probe.method, f+probe.path, "", nil); st != 404 || code != api.CodeLeaseNotFound {
			t.Fatalf("%s %s after revoke: %d %s", probe.method, probe.path, st, code)
		}
	}
	var s api.LockStatus
	call(t, "GET", f+"/v1/locks/jobs/nightly", "", &s)
	if s.Held {
		t.Fatalf("lock still held after its lease was revoked: %+v", s)
	}
}

func TestAPI_WaitTimeoutLeavesQueue(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	call(t, "PUT", f+"/v1/locks/q", `{}`, nil)
	start := time.Now()
	if st, code := call(t, "PUT", f+"/v1/locks/q", `{"wait_ms":600}`, nil); st != 409 || code != api.CodeWaitTimeout {
		t.Fatalf("wait: %d %s", st, code)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("wait ended after %v, before its 600 ms", d)
	}
	var s api.LockStatus
	call(t, "GET", f+"/v1/locks/q", "", &s)
	if s.Waiters != 0 {
		t.Fatalf("waiter still queued after its wait ended: %+v", s)
	}
}

func TestAPI_BadInput(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	lease := strings.Repeat("ab", 16)
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"PUT", "/v1/locks/x", `{"ttl_ms":100}`, 400, api.CodeInvalidTTL},
		{"PUT", "/v1/locks/x", `{"wait_ms":1`, 400, api.CodeInvalidJSON},
		{"PUT", "/v1/locks/x", `{"lease_id":"` + lease + `"}`, 404, api.CodeLeaseNotFound},
		{"PUT", "/v1/locks/", `{}`, 400, api.CodeInvalidName},
		{"PUT", "/v1/locks/a%01b", `{}`, 400, api.CodeInvalidName},
		{"PUT", "/v1/locks/x", `{"owner":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`, 413, api.CodeBodyTooLarge},
		{"DELETE", "/v1/locks/x", `{"lease_id":"` + lease + `","token":1}`, 404, api.CodeLeaseNotFound},
		{"DELETE", "/v1/locks/x", ``, 400, api.CodeInvalidJSON},
		{"POST", "/v1/leases", `{"ttl_ms":86400001}`, 400, api.CodeInvalidTTL},
		{"POST", "/v1/leases", `{"ttl_ms":1000,"x":1}`, 400, api.CodeInvalidJSON},
		{"POST", "/v1/leases/zz/keepalive", ``, 400, api.CodeInvalidArgument},
		{"GET", "/v1/locks/x?wait_ms=300001", ``, 400, api.CodeInvalidArgument},
		{"GET", "/v1/locks/x?wait_index=-1", ``, 400, api.CodeInvalidArgument},
		{"GET", "/v1/locks/x?stale=maybe", ``, 400, api.CodeInvalidArgument},
		{"GET", "/v1/locks/x?waitindex=3", ``, 400, api.CodeInvalidArgument},
		{"POST", "/v1/cluster/nodes", `{"id":"n9"}`, 400, api.CodeInvalidArgument},
		{"PATCH", "/v1/locks/x", ``, 405, api.CodeMethodNotAllowed},
		{"GET", "/v2/nothing", ``, 404, api.CodeNotFound},
	}
	for _, tc := range cases {
		st, code := call(t, tc.method, f+tc.path, tc.body, nil)
		if st != tc.status || code != tc.code {
			t.Errorf("%s %s %.40s: %d %s, want %d %s", tc.method, tc.path, tc.body, st, code, tc.status, tc.code)
		}
	}
}

func TestAPI_NoLeaderIs503NotAHang(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	survivor := c.Follower()
	for i := range c.Nodes {
		if i != survivor {
			c.StopNode(i)
		}
	}
	client := http.Client{Timeout: 20 * time.Second}
	for _, probe := range []struct{ method, path, body string }{
		{"PUT", "/v1/locks/x", `{}`},
		{"GET", "/v1/locks/x", ``},
		{"POST", "/v1/leases", `{}`},
	} {
		req, _ := http.NewRequest(probe.method, c.URL(survivor)+probe.path, bytes.NewBufferString(probe.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s without a quorum: %v (want a prompt 503)", probe.method, probe.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s without a quorum: %d, want 503 with Retry-After", probe.method, probe.path, resp.StatusCode)
		}
	}
	// A stale read is still served from local state.
	if st, _ := call(t, "GET", c.URL(survivor)+"/v1/locks/x?stale", "", nil); st != 200 {
		t.Fatalf("stale read without a quorum: %d", st)
	}
	if st, _ := call(t, "GET", c.URL(survivor)+"/healthz", "", nil); st != 200 {
		t.Fatalf("healthz: %d", st)
	}
	// Until its heartbeat timeout the survivor cannot tell the leader is gone; after it,
	// readiness must say so.
	c.WaitFor(10*time.Second, "readyz to answer 503 no_leader without a quorum", func() bool {
		st, code := call(t, "GET", c.URL(survivor)+"/readyz", "", nil)
		return st == 503 && code == api.CodeNoLeader
	})
}

func TestAPI_Metrics(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	l := c.URL(c.Leader(10 * time.Second))
	call(t, "PUT", l+"/v1/locks/m", `{}`, nil)
	resp, err := http.Get(l + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"raftlock_locks_held 1",
		"raftlock_is_leader 1",
		`raftlock_http_requests_total{code="200",route="PUT /v1/locks/{name...}"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// GET /v1/locks pages from the ordered index: limit, the after cursor, truncated and next.
func TestAPI_ListLocksPages(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	var lease api.Lease
	if st, code := call(t, "POST", f+"/v1/leases", `{"ttl_ms":60000}`, &lease); st != 201 {
		t.Fatalf("create lease: %d %s", st, code)
	}
	var want []string
	for i := 0; i < 25; i++ {
		name := fmt.Sprintf("jobs/%02d", i)
		want = append(want, name)
		if st, code := call(t, "PUT", f+"/v1/locks/"+name, `{"lease_id":"`+lease.LeaseID+`"}`, nil); st != 200 {
			t.Fatalf("acquire %s: %d %s", name, st, code)
		}
		call(t, "PUT", f+"/v1/locks/other/"+name, `{"lease_id":"`+lease.LeaseID+`"}`, nil)
	}
	var got []string
	after, pages := "", 0
	for {
		var page api.LockList
		if st, code := call(t, "GET", f+"/v1/locks?prefix=jobs/&limit=10&after="+after, "", &page); st != 200 {
			t.Fatalf("list: %d %s", st, code)
		}
		pages++
		for _, l := range page.Locks {
			got = append(got, l.Name)
		}
		if !page.Truncated {
			if page.Next != "" {
				t.Fatalf("last page has next %q", page.Next)
			}
			break
		}
		if page.Next != page.Locks[len(page.Locks)-1].Name {
			t.Fatalf("next %q is not the page's last name", page.Next)
		}
		after = page.Next
	}
	if pages != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d pages, names %v; want 3 pages of %v", pages, got, want)
	}
	if st, code := call(t, "GET", f+"/v1/locks?limit=10001", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("limit over the maximum: %d %s", st, code)
	}
}
