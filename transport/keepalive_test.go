package transport_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
