//go:build verify

// The mixed-release test builds an older commit of this repository, taken from its git
// history, which a shallow checkout (CI's) does not have; and it takes a few minutes on two
// cores. It runs with the verify tag, in `make verify`, where the history is present.

package blackbox_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// forwardAfterWork is the last commit whose followers forwarded a request only after
// doing the cluster's work for it (decoded, lease ID settled, wait registered, then
// cluster.ErrNotLeader). Later followers decide where a request goes before any of that
// work, and forward it as it came: the leader must not be able to tell the two apart.
const forwardAfterWork = "3140c652221d8222d18ab385c8e477d1813c6ca3"

// During a rolling upgrade from that release, members of both forward to each other: a
// follower of the new release to a leader of the old, and followers of the old release to
// a leader of the new. Every kind of request that needs the leader goes through each such
// follower and is answered by the leader (X-Raftlock-Leader), as it would be in a cluster
// of one release; an acquire on a request_id sent twice through two followers of
// different releases names one lease.
func TestBlackbox_MixedReleasesForwardToEachOther(t *testing.T) {
	old := testcluster.BuildBinaryAt(t, forwardAfterWork)
	p := testcluster.NewProcessesWith(t, 3, testcluster.Options{Binary: old})
	p.StartAll()
	waitAllReady(t, p, 3)
	leader := p.WaitLeader(20 * time.Second)
	upgraded := (leader + 1) % 3
	p.Terminate(upgraded)
	p.SetBinary(upgraded, testcluster.Binary(t))
	p.Start(upgraded)
	waitAllReady(t, p, 3)
	if l := p.WaitLeader(20 * time.Second); l != leader {
		t.Logf("leadership moved to n%d during the upgrade of n%d", l+1, upgraded+1)
		leader = l
	}
	requestID := fmt.Sprintf("mixed-%d-0123456789abcdef", time.Now().UnixNano())
	var implicit []string // the lease of requestID, as each acquire of it answered

	// through sends every kind of request that needs the leader through follower f.
	through := func(f int, what string) {
		t.Helper()
		if f == leader {
			t.Fatalf("n%d leads: not a follower", f+1)
		}
		u := p.URL(f)
		prefix := fmt.Sprintf("mixed/n%d-%d", f+1, time.Now().UnixNano())
		relayed := func(a rawhttp.Answer, want int, op string) rawhttp.Answer {
			t.Helper()
			if a.Status != want || a.Header.Get("X-Raftlock-Leader") != p.HTTPAddr(leader) {
				t.Fatalf("%s, %s through n%d: %d %s, X-Raftlock-Leader %q; want %d relayed from the leader n%d at %s",
					what, op, f+1, a.Status, a.Raw, a.Header.Get("X-Raftlock-Leader"), want, leader+1, p.HTTPAddr(leader))
			}
			return a
		}
		g := relayed(do("PUT", u+"/v1/locks/"+prefix+"/a", `{"owner":"mixed","ttl_ms":30000}`), 200, "an acquire")
		lease, token := g.Body["lease_id"].(string), int64(g.Body["token"].(float64))
		relayed(do("POST", u+"/v1/leases/keepalive", fmt.Sprintf(`{"lease_id":%q}`, lease)), 200, "a keepalive")
		relayed(do("GET", u+"/v1/locks/"+prefix+"/a", ""), 200, "a linearizable read")
		relayed(do("PUT", u+"/v1/locks/"+prefix+"/a", `{"owner":"other"}`), 409, "an acquire of a held lock")
		// A waiting acquire, granted by the holder's release.
		// It names a request_id so that a leader moving during the wait is no unknown outcome.
		waiter := fmt.Sprintf(`{"owner":"waiter","wait_ms":20000,"request_id":"waiter-n%d-%d-0123456789"}`, f+1, time.Now().UnixNano())
		waited := make(chan rawhttp.Answer, 1)
		go func() { waited <- do("PUT", u+"/v1/locks/"+prefix+"/a", waiter) }()
		testkit.WaitFor(t, 20*time.Second, "a waiter in the queue", func() bool {
			a := do("GET", p.URL(leader)+"/v1/locks/"+prefix+"/a", "")
			w, _ := a.Body["waiters"].(float64)
			return w > 0
		})
		relayed(do("DELETE", u+"/v1/locks/"+prefix+"/a", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, lease, token)), 200, "a release")
		relayed(<-waited, 200, "a waiting acquire")
		relayed(do("POST", u+"/v1/locksets", fmt.Sprintf(`{"names":["%s/s1","%s/s2"],"ttl_ms":30000}`, prefix, prefix)), 200, "a lockset")
		relayed(do("PUT", u+"/v1/semaphores/"+prefix+"/sem", `{"limit":2,"ttl_ms":30000}`), 200, "a semaphore permit")
		relayed(do("PUT", u+"/v1/elections/"+prefix+"/el", `{"value":"v","ttl_ms":30000}`), 200, "a campaign")
		relayed(do("PUT", u+"/v1/locks/mixed/implicit", `{"request_id":"`+requestID+`","ttl_ms":60000}`), 200, "an acquire on a request_id")
		a := do("PUT", u+"/v1/locks/mixed/implicit", `{"request_id":"`+requestID+`","ttl_ms":60000}`)
		implicit = append(implicit, relayed(a, 200, "the same acquire again").Body["lease_id"].(string))
		relayed(do("POST", u+"/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, lease)), 200, "a revoke")
		relayed(do("POST", u+"/v1/leases/lookup", fmt.Sprintf(`{"lease_id":%q}`, lease)), 404, "a lookup of the revoked lease")
	}

	// A follower of the new release, to a leader of the old.
	through(upgraded, "new follower, old leader")

	// Followers of the old release, to a leader of the new.
	if a := do("POST", p.URL(leader)+"/v1/cluster/transfer-leader", fmt.Sprintf(`{"to":%q}`, p.ID(upgraded))); a.Status != 200 {
		t.Fatalf("hand leadership to the upgraded n%d: %d %s", upgraded+1, a.Status, a.Raw)
	}
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("n%d to lead", upgraded+1), func() bool { return p.LeaderIndex() == upgraded })
	waitAllReady(t, p, 3)
	leader = upgraded
	for i := 0; i < 3; i++ {
		if i != leader {
			through(i, "old follower, new leader")
		}
	}
	for _, l := range implicit[1:] {
		if l != implicit[0] {
			t.Fatalf("the acquires of one request_id through followers of both releases named leases %s", strings.Join(implicit, ", "))
		}
	}
	t.Logf("new n%d and old followers forwarded to each other's leaders; one implicit lease %s… for %d acquires of one request_id", upgraded+1, implicit[0][:8], 2*len(implicit))
}
