package transport_test

import (
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
