package transport_test

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/transport"
)

// openStream opens GET path on base with token and returns its lines as they come; the
// channel closes when the stream ends.
func openStream(t *testing.T, base, token, path string) <-chan string {
	t.Helper()
	lines, stop, why := rawhttp.Client{Token: token}.OpenStream(base + path)
	if why != "" {
		t.Fatalf("stream %s: %s", path, why)
	}
	t.Cleanup(stop)
	return lines
}

// streamEnd reads lines until the stream ends (or 30 s pass) and returns the code of its
// last error event ("" for none) and whether a data line contained forbidden.
func streamEnd(t *testing.T, lines <-chan string, forbidden string) (code string, leaked bool) {
	t.Helper()
	code, leaked, ended := rawhttp.StreamEnd(lines, forbidden, 30*time.Second)
	if !ended {
		t.Fatal("the stream did not end within 30 s")
	}
	return code, leaked
}

// waitLine waits for a line containing s.
func waitLine(t *testing.T, lines <-chan string, s string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended before a line with %s", s)
			}
			if strings.Contains(line, s) {
				return
			}
		case <-timeout:
			t.Fatalf("no line with %s within 20 s", s)
		}
	}
}

// An open event stream checks its token before each event and each ping: revoking the
// token, or narrowing its policy so that it no longer reads the prefix, ends the stream
// with a last error event (unauthenticated, permission_denied), and the event that came
// after the change is not sent.
func TestACL_StreamEndsWhenRightsShrink(t *testing.T) {
	defer transport.SetStreamPing(300 * time.Millisecond)()
	c := startACLCluster(t)
	m, _ := aclSetup(t, c, map[string]string{"jobs-read": `{"rules":[{"prefix":"jobs/","access":"read"}]}`})
	fi := c.Follower()
	f := c.URL(fi)
	newToken := func() (secret, accessor string) {
		var tok api.ACLToken
		if st, code := callAs(t, m, "POST", f+"/v1/acl/tokens", `{"policies":["jobs-read"]}`, &tok); st != 200 {
			t.Fatalf("token: %d %s", st, code)
		}
		c.WaitFor(10*time.Second, "the token on the follower", func() bool {
			_, ok := c.Nodes[fi].ACL().Resolve(tok.SecretID)
			return ok
		})
		return tok.SecretID, tok.AccessorID
	}
	acquire := func(name string) {
		if st, code := callAs(t, m, "PUT", f+"/v1/locks/"+name, `{"ttl_ms":60000}`, nil); st != 200 {
			t.Fatalf("acquire %s: %d %s", name, st, code)
		}
	}

	t.Run("revoked, then an event", func(t *testing.T) {
		tok, acc := newToken()
		lines := openStream(t, f, tok, "/v1/events?prefix=jobs/")
		acquire("jobs/before-revoke")
		waitLine(t, lines, `"name":"jobs/before-revoke"`)
		if st, code := callAs(t, m, "DELETE", f+"/v1/acl/tokens/"+acc, "", nil); st != 200 {
			t.Fatalf("revoke: %d %s", st, code)
		}
		acquire("jobs/after-revoke")
		if code, leaked := streamEnd(t, lines, "jobs/after-revoke"); code != api.CodeUnauthenticated || leaked {
			t.Fatalf("revoked token's stream: last error %q, event after the revocation sent: %v", code, leaked)
		}
	})
	t.Run("revoked, idle", func(t *testing.T) {
		tok, acc := newToken()
		lines := openStream(t, f, tok, "/v1/events?prefix=jobs/")
		waitLine(t, lines, ": ping")
		if st, code := callAs(t, m, "DELETE", f+"/v1/acl/tokens/"+acc, "", nil); st != 200 {
			t.Fatalf("revoke: %d %s", st, code)
		}
		if code, _ := streamEnd(t, lines, "\x00"); code != api.CodeUnauthenticated {
			t.Fatalf("idle revoked stream: last error %q, want %s", code, api.CodeUnauthenticated)
		}
	})
	t.Run("policy narrowed", func(t *testing.T) {
		tok, _ := newToken()
		lines := openStream(t, f, tok, "/v1/events?prefix=jobs/")
		acquire("jobs/before-deny")
		waitLine(t, lines, `"name":"jobs/before-deny"`)
		if st, code := callAs(t, m, "PUT", f+"/v1/acl/policies/jobs-read", `{"rules":[{"prefix":"jobs/","access":"deny"}]}`, nil); st != 200 {
			t.Fatalf("policy: %d %s", st, code)
		}
		acquire("jobs/after-deny")
		if code, leaked := streamEnd(t, lines, "jobs/after-deny"); code != api.CodePermissionDenied || leaked {
			t.Fatalf("narrowed stream: last error %q, event after the change sent: %v", code, leaked)
		}
	})
}

// With ACLs on, a history needs read on the lock's name, and an event stream read on its
// prefix; names under the prefix that a longer deny rule covers are left out of it.
func TestACL_HistoryAndEvents(t *testing.T) {
	c := startACLCluster(t)
	f := c.URL(c.Follower())
	m, toks := aclSetup(t, c, map[string]string{"jobs-read": `{"rules":[{"prefix":"jobs/","access":"read"},{"prefix":"jobs/secret/","access":"deny"}]}`})
	ro := toks["jobs-read"]
	// A stream is served by the node it is sent to, from its own state: wait until the
	// follower has applied the token (a forward would have to buffer the stream).
	fi := c.Follower()
	c.WaitFor(10*time.Second, "the token on the follower", func() bool {
		_, ok := c.Nodes[fi].ACL().Resolve(ro)
		return ok
	})
	f = c.URL(fi)

	// Open a stream on jobs/ with the read token before anything happens.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f+"/v1/events?prefix=jobs/", nil)
	req.Header.Set("Authorization", "Bearer "+ro)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	for _, name := range []string{"jobs/secret/x", "jobs/a"} {
		if st, code := callAs(t, m, "PUT", f+"/v1/locks/"+name, `{"ttl_ms":60000,"owner":"w"}`, nil); st != 200 {
			t.Fatalf("acquire %s: %d %s", name, st, code)
		}
	}
	var h api.History
	if st, code := callAs(t, ro, "GET", f+"/v1/history/jobs/a", "", &h); st != 200 || len(h.Events) != 1 || h.Events[0].Kind != "granted" || h.Events[0].Owner != "w" {
		t.Fatalf("history with read: %d %s %+v", st, code, h)
	}
	for _, tc := range []struct{ what, token, path string }{
		{"history without a token", "", "/v1/history/jobs/a"},
		{"history of a denied name", ro, "/v1/history/jobs/secret/x"},
		{"history of another prefix", ro, "/v1/history/other/x"},
		{"stream of another prefix", ro, "/v1/events?prefix=other/"},
		{"stream of everything", ro, "/v1/events"},
	} {
		want, wantCode := 403, api.CodePermissionDenied
		if tc.token == "" {
			want, wantCode = 401, api.CodeUnauthenticated
		}
		if st, code := callAs(t, tc.token, "GET", f+tc.path, "", nil); st != want || code != wantCode {
			t.Errorf("%s: %d %s, want %d %s", tc.what, st, code, want, wantCode)
		}
	}
	// The stream shows jobs/a and never jobs/secret/x, applied before it.
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "jobs/secret/") {
			t.Fatalf("the stream shows a denied name: %s", line)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"name":"jobs/a"`) {
			return
		}
	}
	t.Fatalf("stream ended without jobs/a: %v", sc.Err())
}

// A semaphore's and an election's history (protocol version 7) are read with ?kind=, as
// a lock's is: their own kinds, leases by fingerprint.
func TestHistory_SemaphoreAndElectionByKind(t *testing.T) {
	router := newOARouter(t, oaDoc(t))
	c := startNewest(t)
	base := c.URL(0)
	var sg api.SemaphoreGrant
	if st, code := callAs(t, "", "PUT", base+"/v1/semaphores/db/pool", `{"limit":3,"owner":"p1","ttl_ms":60000}`, &sg); st != 200 {
		t.Fatalf("permit: %d %s", st, code)
	}
	if st, code := callAs(t, "", "DELETE", base+"/v1/semaphores/db/pool", `{"lease_id":"`+sg.LeaseID+`","token":`+jsonNum(sg.Token)+`}`, nil); st != 200 {
		t.Fatalf("release: %d %s", st, code)
	}
	if st, code := callAs(t, "", "PUT", base+"/v1/elections/db/pool", `{"value":"v","owner":"L","ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("campaign: %d %s", st, code)
	}
	kinds := func(h api.History) (out []string) {
		for _, e := range h.Events {
			out = append(out, e.Kind)
		}
		return out
	}
	var h api.History
	raw := getValid(t, router, base, "", "/v1/history/db/pool?kind=semaphore&stale", &h)
	if !slices.Equal(kinds(h), []string{"permit_granted", "permit_released"}) || h.Events[0].Token != sg.Token || h.Events[0].Lease != fpOf(t, sg.LeaseID) || strings.Contains(string(raw), sg.LeaseID) {
		t.Fatalf("the semaphore's history: %s", raw)
	}
	h = api.History{}
	if getValid(t, router, base, "", "/v1/history/db/pool?kind=election", &h); !slices.Equal(kinds(h), []string{"elected"}) {
		t.Fatalf("the election's history: %+v", h)
	}
	h = api.History{}
	if getValid(t, router, base, "", "/v1/history/db/pool", &h); len(h.Events) != 0 {
		t.Fatalf("the lock db/pool has a history: %+v", h)
	}
	for _, bad := range []string{"mutex", "lock,semaphore", ""} {
		if st, code := callAs(t, "", "GET", base+"/v1/history/db/pool?kind="+bad, "", nil); st != 400 || code != api.CodeInvalidArgument {
			t.Fatalf("kind=%s: %d %s", bad, st, code)
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
