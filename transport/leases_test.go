package transport_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// keepAliveBody is a batch keepalive body listing ids.
func keepAliveBody(t *testing.T, ids ...string) string {
	t.Helper()
	b, err := json.Marshal(api.KeepAliveRequest{LeaseIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// One batch keepalive, sent to a follower and forwarded, renews the live leases and lists
// the unknown ones (never created, revoked) in not_found, in request order.
func TestAPI_KeepAliveBatchMixedLiveAndUnknown(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	f := c.URL(c.Follower())
	var live []string
	for i := 0; i < 3; i++ {
		var l api.Lease
		if st, code := call(t, "POST", f+"/v1/leases", fmt.Sprintf(`{"ttl_ms":%d}`, 5000+1000*i), &l); st != 201 {
			t.Fatalf("create lease: %d %s", st, code)
		}
		live = append(live, l.LeaseID)
	}
	var revoked api.Lease
	call(t, "POST", f+"/v1/leases", `{"ttl_ms":5000}`, &revoked)
	call(t, "DELETE", f+"/v1/leases/"+revoked.LeaseID, "", nil)
	never := strings.Repeat("ab", api.LeaseIDLen/2)

	var got api.KeepAliveBatch
	body := keepAliveBody(t, live[0], never, live[1], revoked.LeaseID, live[2], live[0])
	if st, code := call(t, "POST", f+"/v1/leases/keepalive", body, &got); st != 200 {
		t.Fatalf("batch keepalive: %d %s", st, code)
	}
	if len(got.Leases) != 3 {
		t.Fatalf("renewed %+v, want the 3 live leases once each", got.Leases)
	}
	for i, l := range got.Leases {
		if l.LeaseID != live[i] || l.TTLMs != int64(5000+1000*i) {
			t.Fatalf("renewed[%d] = %+v, want %s with TTL %d", i, l, live[i], 5000+1000*i)
		}
	}
	if len(got.NotFound) != 2 || got.NotFound[0] != never || got.NotFound[1] != revoked.LeaseID {
		t.Fatalf("not_found = %v, want [never, revoked]", got.NotFound)
	}

	// Nothing live at all is still a 200: the answer says which leases are gone.
	var none api.KeepAliveBatch
	if st, _ := call(t, "POST", f+"/v1/leases/keepalive", keepAliveBody(t, never), &none); st != 200 || len(none.Leases) != 0 || len(none.NotFound) != 1 {
		t.Fatalf("batch of one unknown lease: %d %+v", st, none)
	}
	// The single form still answers a Lease, and 404 for an unknown lease.
	var one api.Lease
	if st, code := call(t, "POST", f+"/v1/leases/keepalive", `{"lease_id":"`+live[1]+`"}`, &one); st != 200 || one.LeaseID != live[1] || one.TTLMs != 6000 {
		t.Fatalf("single keepalive: %d %s %+v", st, code, one)
	}
	if st, code := call(t, "POST", f+"/v1/leases/keepalive", `{"lease_id":"`+never+`"}`, nil); st != 404 || code != api.CodeLeaseNotFound {
		t.Fatalf("single keepalive of an unknown lease: %d %s", st, code)
	}
}

// Batch keepalives refuse bad input as a whole, naming a bad ID by position, never by value.
func TestAPI_KeepAliveBatchBadInput(t *testing.T) {
	c := testcluster.StartInProcess(t, 1, nil)
	u := c.URL(0) + "/v1/leases/keepalive"
	live := strings.Repeat("cd", api.LeaseIDLen/2)
	tooMany := make([]string, api.MaxKeepAliveBatch+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("%032x", i)
	}
	secretish := "ZZ" + strings.Repeat("0", api.LeaseIDLen-2)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"empty list", `{"lease_ids":[]}`, 400, api.CodeInvalidArgument},
		{"both forms", `{"lease_id":"` + live + `","lease_ids":["` + live + `"]}`, 400, api.CodeInvalidArgument},
		{"bad id", keepAliveBody(t, live, secretish), 400, api.CodeInvalidArgument},
		{"too many", keepAliveBody(t, tooMany...), 400, api.CodeInvalidArgument},
		{"unknown field", `{"lease_ids":["` + live + `"],"x":1}`, 400, api.CodeInvalidJSON},
		{"single form over 64 KiB", `{"lease_id":"` + live + `"` + strings.Repeat(" ", api.MaxBodyBytes) + `}`, 413, api.CodeBodyTooLarge},
		{"over 512 KiB", `{"lease_ids":["` + live + `"]` + strings.Repeat(" ", api.MaxKeepAliveBodyBytes) + `}`, 413, api.CodeBodyTooLarge},
	} {
		if st, code := call(t, "POST", u, tc.body, nil); st != tc.status || code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, code, tc.status, tc.code)
		}
	}
	// The message names the position of the bad ID and does not echo it.
	raw := rawCall(t, "POST", u, keepAliveBody(t, live, secretish))
	if !strings.Contains(raw, "lease_ids[1]") || strings.Contains(raw, secretish) {
		t.Fatalf("bad id answer %s: want the position, not the value", raw)
	}
	// The largest batch fits the body limit and is served.
	var got api.KeepAliveBatch
	if st, code := call(t, "POST", u, keepAliveBody(t, tooMany[:api.MaxKeepAliveBatch]...), &got); st != 200 || len(got.NotFound) != api.MaxKeepAliveBatch {
		t.Fatalf("batch of %d: %d %s, %d not found", api.MaxKeepAliveBatch, st, code, len(got.NotFound))
	}
}

// rawCall sends a request and returns the answer's body as text.
func rawCall(t *testing.T, method, url, body string) string {
	t.Helper()
	a := rawhttp.Client{}.Do(method, url, body)
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	return string(a.Raw)
}

// startACLClusterV3 is startACLCluster waiting for the newest protocol version, which
// every node speaks: version 3 binds leases, version 4 checks them at apply.
func startACLClusterV3(t testing.TB) *testcluster.InProcess {
	c := startACLCluster(t)
	c.WaitFor(30*time.Second, "the newest protocol version", func() bool {
		for _, n := range c.Nodes {
			if n.FSM().Version() < n.FSM().MaxVersion() {
				return false
			}
		}
		return true
	})
	return c
}

// A lease is bound to the token that created it: another token with the same lock rights
// that knows its ID gets 404 lease_not_found on every use (keepalive, lookup, revoke, an
// acquire or a release with it, the request_id that names it, a batch keepalive), and
// nothing changes; an admin may use it; the lease's lookup shows no lock outside the
// caller's prefixes.
func TestACL_LeaseBoundToItsCreator(t *testing.T) {
	c := startACLClusterV3(t)
	pol := `{"rules":[{"prefix":"jobs/","access":"lock"}]}`
	m, toks := aclSetup(t, c, map[string]string{"a": pol, "b": pol})
	a, b := toks["a"], toks["b"]
	f := c.URL(c.Follower())
	var g api.Grant
	reqID := "req-0123456789abcdef-a"
	if st, code := callAs(t, a, "PUT", f+"/v1/locks/jobs/a", `{"ttl_ms":60000,"request_id":"`+reqID+`"}`, &g); st != 200 {
		t.Fatalf("a acquires: %d %s", st, code)
	}
	lease := g.LeaseID
	// The admin may use a's lease, here to take a lock outside a's prefixes.
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/other/x", `{"lease_id":"`+lease+`"}`, nil); st != 200 {
		t.Fatalf("admin acquires with a's lease: %d %s", st, code)
	}
	renewsBefore := c.Nodes[c.Leader(10*time.Second)].FSM().RenewEntries()
	for _, tc := range []struct{ what, method, path, body string }{
		{"keepalive", "POST", "/v1/leases/" + lease + "/keepalive", ``},
		{"keepalive (body)", "POST", "/v1/leases/keepalive", `{"lease_id":"` + lease + `"}`},
		{"lookup", "GET", "/v1/leases/" + lease, ``},
		{"lookup (body)", "POST", "/v1/leases/lookup", `{"lease_id":"` + lease + `"}`},
		{"revoke", "DELETE", "/v1/leases/" + lease, ``},
		{"revoke (body)", "POST", "/v1/leases/revoke", `{"lease_id":"` + lease + `"}`},
		{"acquire with lease_id", "PUT", "/v1/locks/jobs/b", `{"lease_id":"` + lease + `"}`},
		{"release", "DELETE", "/v1/locks/jobs/a", `{"lease_id":"` + lease + `","token":` + itoa64(g.Token) + `}`},
		{"semaphore with lease_id", "PUT", "/v1/semaphores/jobs/s", `{"limit":2,"lease_id":"` + lease + `"}`},
		{"campaign with lease_id", "PUT", "/v1/elections/jobs/e", `{"value":"v","lease_id":"` + lease + `"}`},
		{"lockset with lease_id", "POST", "/v1/locksets", `{"names":["jobs/b","jobs/c"],"lease_id":"` + lease + `"}`},
		{"lockset release", "DELETE", "/v1/locksets", `{"lease_id":"` + lease + `","locks":[{"name":"jobs/a","token":` + itoa64(g.Token) + `}]}`},
	} {
		if st, code := callAs(t, b, tc.method, f+tc.path, tc.body, nil); st != 404 || code != api.CodeLeaseNotFound {
			t.Errorf("b's %s with a's lease: %d %s, want 404 lease_not_found", tc.what, st, code)
		}
	}
	// The same request_id from b names b's own lease (from protocol version 4 the implicit
	// lease is derived from the caller too): b can neither reach a's lease by it nor
	// squat it for a.
	var gb api.Grant
	if st, code := callAs(t, b, "PUT", f+"/v1/locks/jobs/d", `{"ttl_ms":60000,"request_id":"`+reqID+`"}`, &gb); st != 200 || gb.LeaseID == lease {
		t.Errorf("b's acquire with a's request_id: %d %s on lease %s (a's: %s), want a grant on a lease of its own", st, code, gb.LeaseID, lease)
	}
	// a's retry with its request_id still names its own lease and grant.
	var again api.Grant
	if st, code := callAs(t, a, "PUT", f+"/v1/locks/jobs/a", `{"ttl_ms":60000,"request_id":"`+reqID+`"}`, &again); st != 200 || again.LeaseID != lease || again.Token != g.Token {
		t.Errorf("a's retry: %d %s %+v, want lease %s token %d", st, code, again, lease, g.Token)
	}
	var batch api.KeepAliveBatch
	if st, code := callAs(t, b, "POST", f+"/v1/leases/keepalive", `{"lease_ids":["`+lease+`"]}`, &batch); st != 200 || len(batch.Leases) != 0 || !slices.Equal(batch.NotFound, []string{lease}) {
		t.Errorf("b's batch keepalive of a's lease: %d %s %+v, want it not found", st, code, batch)
	}
	if n := c.Nodes[c.Leader(10*time.Second)].FSM().RenewEntries(); n != renewsBefore {
		t.Errorf("b's keepalives of a's lease proposed %d Renew entries, want none", n-renewsBefore)
	}
	// Nothing changed: a's lease holds what it held; jobs/b, jobs/c, the semaphore and
	// the election are untouched.
	var v struct {
		api.Lease
		Locks []string `json:"locks"`
	}
	if st, code := callAs(t, m, "GET", f+"/v1/leases/"+lease, "", &v); st != 200 || strings.Join(v.Locks, ",") != "jobs/a,other/x" {
		t.Fatalf("admin's lookup: %d %s %+v, want jobs/a and other/x", st, code, v)
	}
	for _, name := range []string{"jobs/a", "jobs/b", "jobs/c"} {
		var st api.LockStatus
		callAs(t, m, "GET", f+"/v1/locks/"+name, "", &st)
		if st.Held != (name == "jobs/a") || (name == "jobs/a" && st.Token != g.Token) {
			t.Errorf("%s after b's attempts: %+v", name, st)
		}
	}
	// A lease that a lockset creates is bound too: b cannot take more locks with it.
	var set api.LockSetGrant
	if st, code := callAs(t, a, "POST", f+"/v1/locksets", `{"names":["jobs/s1","jobs/s2"],"ttl_ms":60000}`, &set); st != 200 || len(set.Locks) != 2 {
		t.Fatalf("a's lockset: %d %s %+v", st, code, set)
	}
	if st, code := callAs(t, b, "PUT", f+"/v1/locks/jobs/s3", `{"lease_id":"`+set.LeaseID+`"}`, nil); st != 404 || code != api.CodeLeaseNotFound {
		t.Errorf("b's acquire with the lease of a's lockset: %d %s, want 404 lease_not_found", st, code)
	}
	// So is one that a semaphore permit or a campaign creates.
	for _, tc := range []struct{ what, path, body string }{
		{"semaphore", "/v1/semaphores/jobs/sem", `{"limit":2,"ttl_ms":60000}`},
		{"campaign", "/v1/elections/jobs/el", `{"value":"v","ttl_ms":60000}`},
	} {
		var made struct {
			LeaseID string `json:"lease_id"`
		}
		if st, code := callAs(t, a, "PUT", f+tc.path, tc.body, &made); st != 200 || made.LeaseID == "" {
			t.Fatalf("a's %s: %d %s %+v", tc.what, st, code, made)
		}
		if st, code := callAs(t, b, "PUT", f+"/v1/locks/jobs/"+tc.what, `{"lease_id":"`+made.LeaseID+`"}`, nil); st != 404 || code != api.CodeLeaseNotFound {
			t.Errorf("b's acquire with the lease of a's %s: %d %s, want 404 lease_not_found", tc.what, st, code)
		}
	}
	// a itself still uses its lease; its lookup and revoke show only names under jobs/.
	if st, code := callAs(t, a, "POST", f+"/v1/leases/"+lease+"/keepalive", "", nil); st != 200 {
		t.Fatalf("a's keepalive: %d %s", st, code)
	}
	if st, code := callAs(t, a, "GET", f+"/v1/leases/"+lease, "", &v); st != 200 || strings.Join(v.Locks, ",") != "jobs/a" {
		t.Fatalf("a's lookup: %d %s %+v, want jobs/a only", st, code, v)
	}
	var rv api.RevokeResult
	if st, code := callAs(t, a, "POST", f+"/v1/leases/revoke", `{"lease_id":"`+lease+`"}`, &rv); st != 200 || strings.Join(rv.Released, ",") != "jobs/a" {
		t.Fatalf("a's revoke: %d %s %+v, want jobs/a only", st, code, rv)
	}
}

// A batch keepalive of 10,000 made-up lease IDs from a lock token proposes no Raft entry:
// the leader drops the IDs that name no lease before proposing.
func TestACL_BatchKeepaliveOfUnknownIDsProposesNothing(t *testing.T) {
	c := startACLClusterV3(t)
	_, toks := aclSetup(t, c, map[string]string{"a": `{"rules":[{"prefix":"jobs/","access":"lock"}]}`})
	li := c.Leader(10 * time.Second)
	var lease api.Lease
	if st, code := callAs(t, toks["a"], "POST", c.URL(li)+"/v1/leases", `{"ttl_ms":60000}`, &lease); st != 201 {
		t.Fatalf("create: %d %s", st, code)
	}
	ids := make([]string, api.MaxKeepAliveBatch)
	for i := range ids {
		var b [16]byte
		_, _ = rand.Read(b[:])
		ids[i] = hex.EncodeToString(b[:])
	}
	before := c.Nodes[li].FSM().RenewEntries()
	for _, node := range []int{li, c.Follower()} {
		var batch api.KeepAliveBatch
		if st, code := callAs(t, toks["a"], "POST", c.URL(node)+"/v1/leases/keepalive", `{"lease_ids":["`+strings.Join(ids, `","`)+`"]}`, &batch); st != 200 || len(batch.NotFound) != len(ids) {
			t.Fatalf("batch of unknown IDs: %d %s, %d not found", st, code, len(batch.NotFound))
		}
	}
	if n := c.Nodes[li].FSM().RenewEntries(); n != before {
		t.Fatalf("a batch of unknown IDs proposed %d Renew entries", n-before)
	}
	// With one real lease among them, one entry renews only that one.
	var batch api.KeepAliveBatch
	if st, code := callAs(t, toks["a"], "POST", c.URL(li)+"/v1/leases/keepalive", `{"lease_ids":["`+strings.Join(append(ids[:100], lease.LeaseID), `","`)+`"]}`, &batch); st != 200 || len(batch.Leases) != 1 || len(batch.NotFound) != 100 {
		t.Fatalf("batch with one real lease: %d %s %d renewed %d not found", st, code, len(batch.Leases), len(batch.NotFound))
	}
	if n := c.Nodes[li].FSM().RenewEntries(); n != before+1 {
		t.Fatalf("%d Renew entries for one real lease, want 1", n-before)
	}
}

func itoa64(v uint64) string { return strconv.FormatUint(v, 10) }
