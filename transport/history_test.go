package transport_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
)

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
