package transport_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// queueWaiter sends a waiting request in the background (its answer comes when it is
// granted or its wait ends); the returned channel is closed then.
func queueWaiter(t *testing.T, token, method, url, body string) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rawhttp.Client{Token: token}.Do(method, url, body)
	}()
	return done
}

// fpOf is the fingerprint the API shows for the lease ID of a grant.
func fpOf(t *testing.T, leaseID string) string {
	t.Helper()
	id, err := cluster.ParseLeaseID(leaseID)
	if err != nil {
		t.Fatal(err)
	}
	return cluster.LeaseFingerprint(id).String()
}

// getValid GETs target with token, checks the answer against the OpenAPI document and
// decodes it into out; it returns the raw body.
func getValid(t *testing.T, router *oaRouter, base, token, target string, out any) []byte {
	t.Helper()
	a := rawhttp.Client{Token: token}.Do("GET", base+target, "")
	if a.Err != nil || a.Status != 200 {
		t.Fatalf("GET %s: %d %v %s", target, a.Status, a.Err, a.Raw)
	}
	op, _, err := router.operation("GET", target)
	if err != nil {
		t.Fatal(err)
	}
	if _, schema := successSchema(op); oaValidate(schema, a.Raw) != nil {
		t.Fatalf("GET %s: the answer does not match the document: %v\n%s", target, oaValidate(schema, a.Raw), a.Raw)
	}
	if err := json.Unmarshal(a.Raw, out); err != nil {
		t.Fatal(err)
	}
	return a.Raw
}

// startNewest starts a one-node cluster at the newest protocol version.
func startNewest(t *testing.T) *testcluster.InProcess {
	c := testcluster.StartInProcess(t, 1, nil)
	c.WaitFor(30*time.Second, "the newest protocol version", func() bool {
		return c.Nodes[0].FSM().Version() == c.Nodes[0].FSM().MaxVersion()
	})
	return c
}

// Status reads with ?queue=N list the waiters of a lock, a semaphore and an election in
// order (owner, since when, until when, lease fingerprint, never the ID); the overview
// with ?include=waits_for draws who waits for whom by the deadlock detector's rules and
// lists the refusals it made.
func TestWaits_QueuesEdgesAndRefusals(t *testing.T) {
	router := newOARouter(t, oaDoc(t))
	c := startNewest(t)
	base := c.URL(0)
	var ga, gb api.Grant
	if st, code := callAs(t, "", "PUT", base+"/v1/locks/jobs/x", `{"owner":"A","ttl_ms":60000}`, &ga); st != 200 {
		t.Fatalf("acquire x: %d %s", st, code)
	}
	if st, code := callAs(t, "", "PUT", base+"/v1/locks/jobs/y", `{"owner":"B","ttl_ms":60000}`, &gb); st != 200 {
		t.Fatalf("acquire y: %d %s", st, code)
	}
	queueWaiter(t, "", "PUT", base+"/v1/locks/jobs/x", `{"owner":"w1","ttl_ms":60000,"wait_ms":60000}`)
	rawhttp.WaitStatus(t, base, "jobs/x", func(s api.LockStatus) bool { return s.Waiters == 1 })
	queueWaiter(t, "", "PUT", base+"/v1/locks/jobs/x", `{"owner":"w2","mode":"shared","ttl_ms":60000,"wait_ms":60000}`)
	rawhttp.WaitStatus(t, base, "jobs/x", func(s api.LockStatus) bool { return s.Waiters == 2 })
	queueWaiter(t, "", "PUT", base+"/v1/locks/jobs/y", `{"owner":"A","lease_id":"`+ga.LeaseID+`","wait_ms":60000}`)
	rawhttp.WaitStatus(t, base, "jobs/y", func(s api.LockStatus) bool { return s.Waiters == 1 })
	// B asking for x would close a cycle: refused, and recorded.
	if st, code := callAs(t, "", "PUT", base+"/v1/locks/jobs/x", `{"owner":"B","lease_id":"`+gb.LeaseID+`","wait_ms":60000}`, nil); st != 409 || code != api.CodeDeadlock {
		t.Fatalf("B waiting for x: %d %s", st, code)
	}
	var sg api.SemaphoreGrant
	if st, code := callAs(t, "", "PUT", base+"/v1/semaphores/db/pool", `{"limit":1,"owner":"p1","lease_id":"`+ga.LeaseID+`"}`, &sg); st != 200 {
		t.Fatalf("permit: %d %s", st, code)
	}
	queueWaiter(t, "", "PUT", base+"/v1/semaphores/db/pool", `{"limit":1,"owner":"sw","ttl_ms":60000,"wait_ms":60000}`)
	var eg api.ElectionGrant
	if st, code := callAs(t, "", "PUT", base+"/v1/elections/sched", `{"value":"10.0.0.1","owner":"L","ttl_ms":60000}`, &eg); st != 200 {
		t.Fatalf("campaign: %d %s", st, code)
	}
	queueWaiter(t, "", "PUT", base+"/v1/elections/sched", `{"value":"10.0.0.2","owner":"C","ttl_ms":60000,"wait_ms":60000}`)

	var ls api.LockStatus
	raw := getValid(t, router, base, "", "/v1/locks/jobs/x?queue=10", &ls)
	if len(ls.Queue) != 2 || ls.Waiters != 2 || ls.Queue[0].Owner != "w1" || ls.Queue[0].Mode != "exclusive" || ls.Queue[1].Owner != "w2" || ls.Queue[1].Mode != "shared" ||
		ls.Queue[0].SinceMs == nil || ls.Queue[0].DeadlineMs != *ls.Queue[0].SinceMs+60000 || len(ls.Queue[0].LeaseFingerprint) != 8 || ls.Holders[0].LeaseFingerprint != fpOf(t, ga.LeaseID) {
		t.Fatalf("lock status with its queue: %s", raw)
	}
	if strings.Contains(string(raw), ga.LeaseID) {
		t.Fatalf("a lease ID in %s", raw)
	}
	if ls = (api.LockStatus{}); getValid(t, router, base, "", "/v1/locks/jobs/x?queue=1", &ls) != nil && (len(ls.Queue) != 1 || ls.Waiters != 2) {
		t.Fatalf("queue=1: %+v", ls)
	}
	if ls = (api.LockStatus{}); getValid(t, router, base, "", "/v1/locks/jobs/x", &ls) != nil && ls.Queue != nil {
		t.Fatalf("a status read without ?queue lists the queue: %+v", ls.Queue)
	}
	var ss api.SemaphoreStatus
	testkit.WaitFor(t, 10*time.Second, "the semaphore's waiter", func() bool {
		raw = getValid(t, router, base, "", "/v1/semaphores/db/pool?queue=5", &ss)
		return len(ss.Queue) == 1
	})
	if ss.Queue[0].Owner != "sw" || ss.Queue[0].Mode != "" || ss.Permits[0].LeaseFingerprint != fpOf(t, ga.LeaseID) || ss.Permits[0].Owner != "p1" {
		t.Fatalf("semaphore: %s", raw)
	}
	var es api.ElectionStatus
	testkit.WaitFor(t, 10*time.Second, "the election's candidate", func() bool {
		raw = getValid(t, router, base, "", "/v1/elections/sched?queue=5", &es)
		return len(es.Queue) == 1
	})
	if es.Queue[0].Owner != "C" || es.LeaseFingerprint != fpOf(t, eg.LeaseID) || es.Owner != "L" || es.Candidates != 1 {
		t.Fatalf("election: %s", raw)
	}

	var o api.Overview
	raw = getValid(t, router, base, "", "/v1/overview?include=waits_for&queue=5", &o)
	type edge struct{ lock, waiter, blocker, by string }
	var got []edge
	for _, lw := range o.WaitsFor {
		for _, e := range lw.Edges {
			got = append(got, edge{lw.Lock, e.WaiterOwner, e.BlockerOwner, e.By})
		}
	}
	want := []edge{{"jobs/x", "w1", "A", "holder"}, {"jobs/x", "w2", "w1", "queued_ahead"}, {"jobs/y", "A", "B", "holder"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("waits-for %v, want %v\n%s", got, want, raw)
	}
	if len(o.Locks) != 2 || len(o.Locks[0].Queue) != 2 || o.Locks[0].Queue[1].Owner != "w2" {
		t.Fatalf("overview locks with their queues: %s", raw)
	}
	if len(o.Refusals) != 1 {
		t.Fatalf("refusals: %s", raw)
	}
	r := o.Refusals[0]
	fa, fb := fpOf(t, ga.LeaseID), fpOf(t, gb.LeaseID)
	// B's exclusive request waits for the requests queued ahead on x, the nearest
	// exclusive one (w1) waits for A, and A for y, held by B: the shortest cycle.
	if r.Lock != "jobs/x" || r.Owner != "B" || r.LeaseFingerprint != fb || len(r.Cycle) != 3 ||
		r.Cycle[0] != (api.CycleStep{LeaseFingerprint: fb, Lock: "jobs/x"}) || r.Cycle[1].Lock != "jobs/x" || r.Cycle[1].LeaseFingerprint != o.Locks[0].Queue[0].LeaseFingerprint ||
		r.Cycle[2] != (api.CycleStep{LeaseFingerprint: fa, Lock: "jobs/y"}) || !strings.Contains(r.Detail, fa) {
		t.Fatalf("refusal %+v", r)
	}
	if strings.Contains(string(raw), ga.LeaseID) || strings.Contains(string(raw), gb.LeaseID) {
		t.Fatalf("a lease ID in the overview: %s", raw)
	}
	if o = (api.Overview{}); getValid(t, router, base, "", "/v1/overview", &o) != nil && (o.WaitsFor != nil || o.Refusals != nil || o.Locks[0].Queue != nil) {
		t.Fatalf("an overview without include or queue carries them: %+v", o)
	}
	if st, code := callAs(t, "", "GET", base+"/v1/overview?include=everything", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("include=everything: %d %s", st, code)
	}
	if st, code := callAs(t, "", "GET", base+"/v1/locks/jobs/x?queue=10001", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("queue=10001: %d %s", st, code)
	}
}

// With ACLs on, the waits-for view and the refusals show only what the token may read:
// a lock outside its prefixes is left out, and in a refused cycle its name is hidden, as
// is a lease tied only to such locks.
func TestWaits_ACLHidesWhatTheTokenMayNotRead(t *testing.T) {
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
	var ga, gb api.Grant
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/jobs/x", `{"owner":"A","ttl_ms":60000}`, &ga); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/secret/y", `{"owner":"B","ttl_ms":60000}`, &gb); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	queueWaiter(t, m, "PUT", f+"/v1/locks/secret/y", `{"owner":"A","lease_id":"`+ga.LeaseID+`","wait_ms":60000}`)
	testkit.WaitFor(t, 10*time.Second, "A waiting for secret/y", func() bool {
		var s api.LockStatus
		st, _ := callAs(t, m, "GET", f+"/v1/locks/secret/y", "", &s)
		return st == 200 && s.Waiters == 1
	})
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/jobs/x", `{"owner":"B","lease_id":"`+gb.LeaseID+`","wait_ms":60000}`, nil); st != 409 || code != api.CodeDeadlock {
		t.Fatalf("B waiting for jobs/x: %d %s", st, code)
	}
	var o api.Overview
	testkit.WaitFor(t, 10*time.Second, "the read token's overview on the follower", func() bool {
		o = api.Overview{}
		st, _ := callAs(t, ro.SecretID, "GET", f+"/v1/overview?include=waits_for&queue=5", "", &o)
		return st == 200 && len(o.Refusals) == 1
	})
	if len(o.WaitsFor) != 0 {
		t.Fatalf("the read token sees the queue of secret/y: %+v", o.WaitsFor)
	}
	r := o.Refusals[0]
	fa, fb := fpOf(t, ga.LeaseID), fpOf(t, gb.LeaseID)
	// B waits for jobs/x, held by A; A waits for secret/y (hidden), held by B, whose
	// fingerprint shows: it asked for jobs/x, which the token may read.
	if r.Lock != "jobs/x" || len(r.Cycle) != 2 || r.Cycle[0] != (api.CycleStep{LeaseFingerprint: fb, Lock: "jobs/x"}) ||
		r.Cycle[1] != (api.CycleStep{LeaseFingerprint: fa, Hidden: true}) || strings.Contains(r.Detail, "secret/y") {
		t.Fatalf("refusal as the read token sees it: %+v", r)
	}
	// The admin sees everything.
	o = api.Overview{}
	if st, code := callAs(t, m, "GET", f+"/v1/overview?include=waits_for", "", &o); st != 200 || len(o.WaitsFor) != 1 || o.WaitsFor[0].Lock != "secret/y" || o.Refusals[0].Cycle[1].Lock != "secret/y" {
		t.Fatalf("the admin's overview: %d %s %+v", st, code, o)
	}
	resp, err := http.Get(f + "/v1/overview?include=waits_for")
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("without a token: %d", resp.StatusCode)
		}
	}
}
