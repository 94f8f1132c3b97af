package transport_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// TestNames_RawPathRefusedNeverRedirected sends names that a path cleaner would alias or
// redirect, and names that are valid, through a client that does not follow redirects:
// every invalid one is 400 invalid_name with the rule as its message, and none locks a
// cleaned alias.
func TestNames_RawPathRefusedNeverRedirected(t *testing.T) {
	c := testcluster.StartInProcess(t, 1, nil)
	base := c.URL(0)
	raw := rawhttp.Client{HTTP: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	rule := "invalid lock name: " + api.NameRule
	for _, tc := range []struct{ method, path, body string }{
		{"PUT", "/v1/locks//abs", `{}`},
		{"PUT", "/v1/locks/a//b", `{}`},
		{"PUT", "/v1/locks/../up", `{}`},
		{"PUT", "/v1/locks/a/../b", `{}`},
		{"PUT", "/v1/locks/a/./b", `{}`},
		{"PUT", "/v1/locks/a/%2e/b", `{}`},
		{"PUT", "/v1/locks/a/%2E%2e", `{}`},
		{"PUT", "/v1/locks/a/", `{}`},
		{"PUT", "/v1/locks/a%2F", `{}`},
		{"PUT", "/v1/locks/.", `{}`},
		{"GET", "/v1/locks/a//b", ``},
		{"DELETE", "/v1/locks/a/./b", `{"lease_id":"` + strings.Repeat("ab", 16) + `","token":1}`},
		{"GET", "/v1/history/a//b", ``},
		{"POST", "/v1/locksets", `{"names":["ok","a//b"]}`},
		{"POST", "/v1/locksets", `{"names":["/abs"]}`},
		{"DELETE", "/v1/locksets", `{"lease_id":"` + strings.Repeat("ab", 16) + `","locks":[{"name":"a/./b","token":1}]}`},
	} {
		a := raw.Do(tc.method, base+tc.path, tc.body)
		if a.Err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, a.Err)
		}
		e, _ := a.Body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if a.Status != 400 || a.Code() != api.CodeInvalidName || msg != rule {
			t.Errorf("%s %s %s: %d %s %q, want 400 invalid_name %q", tc.method, tc.path, tc.body, a.Status, a.Code(), msg, rule)
		}
	}
	for _, tc := range []struct{ path, kind string }{{"/v1/semaphores/a//b", "semaphore"}, {"/v1/elections/./x", "election"}} {
		a := raw.Do("PUT", base+tc.path, `{"limit":1}`)
		if a.Status != 400 || a.Code() != api.CodeInvalidName || !strings.Contains(string(a.Raw), "invalid "+tc.kind+" name") {
			t.Errorf("PUT %s: %d %s, want 400 invalid_name naming a %s", tc.path, a.Status, a.Code(), tc.kind)
		}
	}
	// Other routes are not cleaned either: a dot or empty segment is an error, not a redirect.
	for _, p := range []string{"/v1//locks", "/v1/./cluster", "/v1/x/../cluster"} {
		if a := raw.Do("GET", base+p, ``); a.Status != 400 {
			t.Errorf("GET %s: %d %s, want 400", p, a.Status, a.Raw)
		}
	}
	// Nothing above locked the cleaned aliases.
	for _, n := range []string{"a/b", "abs", "up", "b", "a"} {
		var s api.LockStatus
		if err := raw.Get(base+"/v1/locks/"+n, &s); err != nil || s.Held {
			t.Errorf("%s: held=%v err=%v after refused aliases", n, s.Held, err)
		}
	}
	// Valid names, including ones that need escaping, still work.
	for _, p := range []string{"accounts/A", "d%C3%BCsseldorf/%E6%97%A5%E6%9C%AC", "a%20b%3Fc", "a..b/.c/d.", "x%2Fy"} {
		if a := raw.Do("PUT", base+"/v1/locks/"+p, `{}`); a.Status != 200 {
			t.Errorf("PUT %s: %d %s, want 200", p, a.Status, a.Raw)
		}
	}
	c.WaitFor(30*time.Second, "protocol version 3 or later", func() bool { return c.Nodes[0].FSM().Version() >= 3 })
	if a := raw.Do("POST", base+"/v1/locksets", `{"names":["ls/ü","ls/b"]}`); a.Status != 200 {
		t.Errorf("lockset of valid names: %d %s", a.Status, a.Raw)
	}
}
