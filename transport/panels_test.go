package transport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/testkit"
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

// The event stream carries semaphore and election events only to a consumer that asks
// for them (?kinds=): one that does not sees the lock events it saw before, nothing else.
func TestEvents_KindsAddSemaphoresAndElections(t *testing.T) {
	c := startNewest(t)
	base := c.URL(0)
	locks := openStream(t, base, "", "/v1/events?prefix=p/")
	prims := openStream(t, base, "", "/v1/events?prefix=p/&kinds=semaphore,election")
	all := openStream(t, base, "", "/v1/events?prefix=p/&kinds=lock,semaphore,election")
	var sg api.SemaphoreGrant
	if st, code := callAs(t, "", "PUT", base+"/v1/semaphores/p/pool", `{"limit":3,"owner":"s1","ttl_ms":60000}`, &sg); st != 200 {
		t.Fatalf("permit: %d %s", st, code)
	}
	if st, code := callAs(t, "", "PUT", base+"/v1/elections/p/sched", `{"value":"v","owner":"L","ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("campaign: %d %s", st, code)
	}
	if st, code := callAs(t, "", "PUT", base+"/v1/locks/p/marker", `{"owner":"m","ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	if st, code := callAs(t, "", "DELETE", base+"/v1/semaphores/p/pool", `{"lease_id":"`+sg.LeaseID+`","token":`+jsonNum(sg.Token)+`}`, nil); st != 200 {
		t.Fatalf("release: %d %s", st, code)
	}
	got := dataLines(t, locks, "p/marker")
	if len(got) != 1 || strings.Contains(got[0], "primitive") {
		t.Fatalf("a lock stream carries %q", got)
	}
	got = dataLines(t, prims, "permit_released")
	if len(got) != 3 || !strings.Contains(got[0], `"name":"p/pool","primitive":"semaphore","kind":"permit_granted"`) ||
		!strings.Contains(got[0], `"owner":"s1"`) || !strings.Contains(got[0], `"lease_fingerprint":"`+fpOf(t, sg.LeaseID)+`"`) ||
		!strings.Contains(got[1], `"primitive":"election","kind":"elected"`) || strings.Contains(strings.Join(got, ""), "p/marker") || strings.Contains(strings.Join(got, ""), sg.LeaseID) {
		t.Fatalf("a semaphore and election stream carries %q", got)
	}
	if got := dataLines(t, all, "permit_released"); len(got) != 4 || !strings.Contains(got[2], "p/marker") {
		t.Fatalf("the stream of every kind carries %q", got)
	}
	if st, code := callAs(t, "", "GET", base+"/v1/events?kinds=lock,mutex", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("kinds=lock,mutex: %d %s", st, code)
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
