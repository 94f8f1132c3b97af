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
	"github.com/raftlock/raftlock/transport"
)

// dataLines reads the stream's data lines until one contains until, and returns them.
func dataLines(t *testing.T, lines <-chan string, until string) []string {
	t.Helper()
	var out []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended before a line with %s", until)
			}
			if strings.HasPrefix(line, "data:") {
				out = append(out, line)
				if strings.Contains(line, until) {
					return out
				}
			}
		case <-timeout:
			t.Fatalf("no line with %s within 20 s (had %q)", until, out)
		}
	}
}

// The overview lists the semaphores and elections in use under the prefix (with
// include=), paged; with wait_ms it blocks until a name under the prefix changes after
// wait_index, and not for a change elsewhere; with members=self it asks no other member.
func TestOverview_PanelsBlockingAndMembersSelf(t *testing.T) {
	router := newOARouter(t, oaDoc(t))
	c := startV2(t)
	c.WaitForwarding()
	f := c.URL(c.Follower())
	for _, name := range []string{"db/pool", "db/cache"} {
		if st, code := callAs(t, "", "PUT", f+"/v1/semaphores/"+name, `{"limit":3,"owner":"`+name+`-1","ttl_ms":60000}`, nil); st != 200 {
			t.Fatalf("permit: %d %s", st, code)
		}
	}
	if st, code := callAs(t, "", "PUT", f+"/v1/semaphores/web/pool", `{"limit":3,"ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("permit: %d %s", st, code)
	}
	if st, code := callAs(t, "", "PUT", f+"/v1/elections/db/leader", `{"value":"10.0.0.1","owner":"L","ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("campaign: %d %s", st, code)
	}
	var o api.Overview
	testkit.WaitFor(t, 10*time.Second, "the follower's overview with both semaphores", func() bool {
		o = api.Overview{}
		getValid(t, router, f, "", "/v1/overview?prefix=db/&include=semaphores,elections&members=self", &o)
		return len(o.Semaphores) == 2 && len(o.Elections) == 1
	})
	if o.Semaphores[0].Name != "db/cache" || o.Semaphores[1].Permits[0].Owner != "db/pool-1" || o.Semaphores[0].Limit != 3 ||
		o.Elections[0].Owner != "L" || o.Elections[0].Value != "10.0.0.1" || len(o.Elections[0].LeaseFingerprint) != 8 {
		t.Fatalf("panels: %+v %+v", o.Semaphores, o.Elections)
	}
	asked := 0
	for _, n := range o.Nodes {
		if n.ID != o.NodeID && (n.Reachable || n.Error != "not asked (members=self)") {
			t.Fatalf("members=self asked %s: %+v", n.ID, n)
		}
		if n.ID == o.NodeID && n.Reachable {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("members=self does not report the node itself: %+v", o.Nodes)
	}
	if getValid(t, router, f, "", "/v1/overview?prefix=db/&include=semaphores&limit=1", &o); len(o.Semaphores) != 1 || !o.SemaphoresTruncated {
		t.Fatalf("a page of one semaphore: %+v", o)
	}

	// Blocking: nothing under db/ changes, so the read waits; a change elsewhere leaves it
	// waiting; one under db/ answers it.
	events := c.Nodes[c.Follower()].Events()
	before := events.Watches()
	done := make(chan api.Overview, 1)
	go func() {
		var o2 api.Overview
		getValid(t, router, f, "", "/v1/overview?prefix=db/&include=semaphores&members=self&wait_ms=60000&wait_index="+jsonNum(o.AppliedIndex), &o2)
		done <- o2
	}()
	testkit.WaitFor(t, 10*time.Second, "the blocking overview's watch", func() bool { return events.Watches() == before+1 })
	if st, code := callAs(t, "", "PUT", f+"/v1/locks/web/x", `{"ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	testkit.WaitFor(t, 10*time.Second, "the follower to apply the change elsewhere", func() bool {
		return c.Nodes[c.Follower()].FSM().LockCount() == 1
	})
	if events.Watches() != before+1 || len(done) != 0 {
		t.Fatal("a change under web/ answered a blocking overview of db/")
	}
	sent := time.Now()
	if st, code := callAs(t, "", "PUT", f+"/v1/semaphores/db/pool", `{"limit":3,"owner":"db/pool-2","ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("permit: %d %s", st, code)
	}
	select {
	case o2 := <-done:
		if o2.Semaphores[1].Name != "db/pool" || len(o2.Semaphores[1].Permits) != 2 {
			t.Fatalf("the blocking overview answered %+v", o2.Semaphores)
		}
		t.Logf("the blocking overview answered %v after the change was sent", time.Since(sent).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the change under db/ did not answer the blocking overview within 30 s")
	}
	// An answered wait_index older than the change answers at once.
	start := time.Now()
	if getValid(t, router, f, "", "/v1/overview?prefix=db/&wait_ms=60000&wait_index="+jsonNum(o.AppliedIndex), &o); time.Since(start) > 20*time.Second {
		t.Fatalf("a wait after an index the change passed took %v", time.Since(start))
	}
	// A leader other than the one the caller last saw answers at once too.
	start = time.Now()
	if getValid(t, router, f, "", "/v1/overview?prefix=db/&wait_ms=60000&wait_leader=nobody&wait_index="+jsonNum(o.AppliedIndex+1000), &o); time.Since(start) > 20*time.Second {
		t.Fatalf("a wait for another leader than the one there is took %v", time.Since(start))
	}
	if st, code := callAs(t, "", "GET", f+"/v1/overview?members=none", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("members=none: %d %s", st, code)
	}
}

// The overview carries what the dashboard shows of protocol version 3: a grant's maximum
// hold end (max_hold_remaining_ms) and a lock delay's (lock_delay_remaining_ms), and the
// page reads both.
func TestOverview_MaxHoldAndLockDelay(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	c.WaitFor(30*time.Second, "protocol version 3", func() bool { return c.Nodes[0].FSM().Version() >= 3 })
	c.WaitForwarding()
	hc := rawhttp.Client{}
	url := c.Endpoints()[0]
	if a := hc.Do(http.MethodPut, url+"/v1/locks/d/held", `{"ttl_ms":60000,"max_hold_ms":60000}`); a.Status != 200 {
		t.Fatalf("acquire with a maximum hold: %d %s", a.Status, a.Raw)
	}
	var g api.Grant
	a := hc.Do(http.MethodPut, url+"/v1/locks/d/delayed", `{"ttl_ms":60000,"lock_delay_ms":60000}`)
	if a.Status != 200 || json.Unmarshal(a.Raw, &g) != nil {
		t.Fatalf("acquire with a lock delay: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodDelete, url+"/v1/leases/"+g.LeaseID, ``); a.Status/100 != 2 {
		t.Fatalf("revoke: %d %s", a.Status, a.Raw)
	}
	var o api.Overview
	c.WaitFor(10*time.Second, "the overview to show the maximum hold and the lock delay", func() bool {
		a := hc.Do(http.MethodGet, url+"/v1/overview?prefix=d/", ``)
		if a.Status != 200 || json.Unmarshal(a.Raw, &o) != nil {
			return false
		}
		var hold, delay bool
		for _, l := range o.Locks {
			hold = hold || l.Name == "d/held" && l.MaxHoldRemainingMs > 0
			delay = delay || l.Name == "d/delayed" && l.LockDelayRemainingMs > 0 && !l.Held
		}
		return hold && delay
	})
	js, err := transport.UIFile("app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"max_hold_remaining_ms", "lock_delay_remaining_ms"} {
		if !strings.Contains(string(js), "l."+field) {
			t.Errorf("the dashboard does not read %s", field)
		}
	}
}

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
	m, toks := aclSetup(t, c, map[string]string{"jobs-read": `{"rules":[{"prefix":"jobs/","access":"read"}]}`})
	ro := toks["jobs-read"]
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
		st, _ := callAs(t, ro, "GET", f+"/v1/overview?include=waits_for&queue=5", "", &o)
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
