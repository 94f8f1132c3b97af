package netns_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// roundTwo runs the cases of the second security round that need ACLs: the
// cursor walk, a lease used by another token, a revoked event stream and a stream-slot
// flood by one token. Each checks the kind of refusal and that nothing changed (the
// cluster's leader, terms and members; the locks and leases involved); what the cases set
// up themselves is revoked at the end, so that the suite's final checks (no lock, no
// lease) hold.
func roundTwo(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, w, other *client) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }

	// Set-up: the admin holds three locks under netns/secret/ with its own lease; the
	// worker holds netns/w with its own.
	al := admin.do("POST", at(0), "/v1/leases", `{"ttl_ms":120000}`)
	if al.Status != 201 {
		t.Fatalf("admin lease: %v", al)
	}
	adminLease, _ := al.Body["lease_id"].(string)
	for _, name := range []string{"netns/secret/k1", "netns/secret/k2", "netns/secret/k3"} {
		if a := admin.do("PUT", at(0), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q}`, adminLease)); a.Status != 200 {
			t.Fatalf("admin acquires %s: %v", name, a)
		}
	}
	wl := w.do("POST", at(1), "/v1/leases", `{"ttl_ms":120000}`)
	if wl.Status != 201 {
		t.Fatalf("worker lease: %v", wl)
	}
	workerLease, _ := wl.Body["lease_id"].(string)
	g := w.do("PUT", at(1), "/v1/locks/netns/w", fmt.Sprintf(`{"lease_id":%q}`, workerLease))
	if g.Status != 200 {
		t.Fatalf("worker acquires netns/w: %v", g)
	}
	token := g.Body["token"]
	// Every node must have applied the set-up before it is asked.
	waitAll(t, c, admin, "/v1/locks/netns/w", `"held":true`)

	// 13. The cursor walk: a token with rights on other/ only pages through
	// netns/secret/ one lock at a time, and through the overview.
	for i := 0; i < n; i++ {
		for _, path := range []string{"/v1/locks?prefix=netns/secret/&limit=1", "/v1/locks?prefix=netns/secret/&limit=1&after=netns/secret/k1", "/v1/overview?prefix=netns/secret/&limit=1"} {
			a := other.do("GET", at(i), path, "")
			ty.check("cursor walk of netns/secret/ by an other/ token: nothing shown", c.ID(i),
				a.Status == 200 && !strings.Contains(string(a.Raw), "netns/secret/") && !strings.Contains(string(a.Raw), `"next"`) && strings.Contains(string(a.Raw), `"truncated":false`),
				path+": "+a.String())
		}
		a := other.do("GET", at(i), "/v1/overview", "")
		ty.check("overview by an other/ token: lease counts withheld", c.ID(i),
			a.Status == 200 && strings.Contains(string(a.Raw), `"withheld":true`) && strings.Contains(string(a.Raw), `"count":0`), a.String())
	}

	// 14. A lease used by another token that learnt its ID (other has lock on other/).
	for i := 0; i < n; i++ {
		for _, tc := range []struct{ what, method, path, body string }{
			{"keepalive", "POST", "/v1/leases/keepalive", fmt.Sprintf(`{"lease_id":%q}`, workerLease)},
			{"lookup", "POST", "/v1/leases/lookup", fmt.Sprintf(`{"lease_id":%q}`, workerLease)},
			{"revoke", "POST", "/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, workerLease)},
			{"acquire other/x with it", "PUT", "/v1/locks/other/x", fmt.Sprintf(`{"lease_id":%q}`, workerLease)},
		} {
			a := other.do(tc.method, at(i), tc.path, tc.body)
			// The lease must still live and hold netns/w after each attempt: a 404 that
			// came because an earlier attempt revoked it is no refusal.
			lv := admin.do("POST", at(0), "/v1/leases/lookup", fmt.Sprintf(`{"lease_id":%q}`, workerLease))
			ty.check("another token's lease: "+tc.what+": 404 lease_not_found", c.ID(i),
				a.Status == 404 && a.Code() == "lease_not_found" && lv.Status == 200 && strings.Contains(string(lv.Raw), `"netns/w"`) && unmoved(t, c, admin, base),
				a.String()+"; the lease now: "+lv.String())
		}
	}
	lk := admin.do("GET", at(0), "/v1/locks/netns/w", "")
	ox := admin.do("GET", at(0), "/v1/locks/other/x", "")
	lu := admin.do("POST", at(0), "/v1/leases/lookup", fmt.Sprintf(`{"lease_id":%q}`, workerLease))
	ty.check("another token's lease: nothing changed (netns/w held, same token; other/x free; the lease lives)", "cluster",
		lk.Body["held"] == true && lk.Body["token"] == token && ox.Body["held"] == false && lu.Status == 200, fmt.Sprintf("%v / %v / %v", lk, ox, lu))

	// 15. A revoked token's open event stream ends at its next event with a last error
	// event (unauthenticated), and the event after the revocation is not sent.
	for i := 0; i < n; i++ {
		secret, accessor := newToken(t, c, admin, "netns-reader")
		lines, stop := stream(t, w.withToken(secret), at(i), "/v1/events?prefix=netns/")
		revokeToken(t, admin, at(0), accessor, "the stream's token")
		name := fmt.Sprintf("netns/after-revoke-%d", i)
		// Node i applies the revocation before this acquire, which comes after it in
		// the log: the acquire's event is the first the stream meets revoked.
		if a := admin.do("PUT", at(0), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q}`, adminLease)); a.Status != 200 {
			t.Fatalf("acquire %s: %v", name, a)
		}
		code, leaked := streamEnd(lines, name, 20*time.Second)
		stop()
		ty.check("revoked token's event stream: ends with error unauthenticated, nothing after", c.ID(i),
			code == "unauthenticated" && !leaked && unmoved(t, c, admin, base), fmt.Sprintf("last error %q, leaked %v", code, leaked))
	}

	// 16. A stream-slot flood by one token: past its own cap (32 per node) the worker's
	// next stream gets 429 too_many_requests with Retry-After, and another token still
	// gets one.
	for i := 0; i < n; i++ {
		var stops []func()
		var opened int
		for range 32 {
			_, stop, ok := tryStream(w, at(i), "/v1/events?prefix=netns/")
			if !ok {
				break
			}
			opened++
			stops = append(stops, stop)
		}
		a := w.Do("GET", "https://"+at(i)+"/v1/events?prefix=netns/", "")
		_, ostop, otherOK := tryStream(other, at(i), "/v1/events?prefix=other/")
		if otherOK {
			ostop()
		}
		for _, s := range stops {
			s()
		}
		ty.check("stream-slot flood by one token: its 33rd stream 429, another token served", c.ID(i),
			opened == 32 && a.Status == 429 && a.Code() == "too_many_requests" && a.Header.Get("Retry-After") != "" && otherOK && unmoved(t, c, admin, base),
			fmt.Sprintf("opened %d, 33rd: %v, other token served: %v", opened, a, otherOK))
	}

	// Clean up what the cases set up.
	for _, l := range []struct {
		cl *client
		id string
	}{{admin, adminLease}, {w, workerLease}} {
		if a := l.cl.do("POST", at(0), "/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, l.id)); a.Status != 200 {
			t.Fatalf("revoke a set-up lease: %v", a)
		}
	}
}

// waitAll waits (10 s at most) until every node answers path with 200 and a body that
// contains want.
func waitAll(t *testing.T, c *testcluster.Processes, cl *client, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < c.N(); i++ {
		for {
			a := cl.do("GET", c.HTTPAddr(i), path, "")
			if a.Status == 200 && strings.Contains(string(a.Raw), want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("n%d: GET %s: %v, want 200 with %s", i+1, path, a, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// tryStream opens an event stream; ok is false when it is not answered 200.
func tryStream(cl *client, addr, path string) (lines <-chan string, stop func(), ok bool) {
	lines, stop, why := openSSE(cl, addr, path)
	return lines, stop, why == ""
}

// openSSE opens an event stream; why says why not ("" when it is open).
func openSSE(cl *client, addr, path string) (lines <-chan string, stop func(), why string) {
	return cl.OpenStream("https://" + addr + path)
}

// stream is tryStream that fails the test when the stream is not opened.
func stream(t *testing.T, cl *client, addr, path string) (<-chan string, func()) {
	t.Helper()
	// A token created a moment ago through the leader may not have reached this node yet,
	// and a stream is never forwarded: it answers 401 until then.
	lines, stop, why := openSSE(cl, addr, path)
	for deadline := time.Now().Add(10 * time.Second); strings.Contains(why, "401") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		lines, stop, why = openSSE(cl, addr, path)
	}
	if why != "" {
		t.Fatalf("stream %s on %s not opened: %s", path, addr, why)
	}
	return lines, stop
}

// streamEnd reads a stream until it ends (or timeout) and returns the code of its last
// error event and whether a data line named forbidden.
func streamEnd(lines <-chan string, forbidden string, timeout time.Duration) (code string, leaked bool) {
	code, leaked, ended := rawhttp.StreamEnd(lines, forbidden, timeout)
	if !ended {
		code = "(still open after " + timeout.String() + ")"
	}
	return code, leaked
}
