package transport_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/transport"
)

// One token cannot take every held-request or stream slot of a node: past its own cap
// (here 2 of each) it gets 429 too_many_requests with Retry-After, changing nothing (no
// waiter queued), while another token still gets both.
func TestACL_PerIdentityCaps(t *testing.T) {
	c := startACLClusterWith(t, func(cfg *transport.Config) {
		cfg.MaxHeldPerIdentity, cfg.MaxStreamsPerIdentity = 2, 2
	})
	pol := `{"rules":[{"prefix":"jobs/","access":"lock"}]}`
	m, toks := aclSetup(t, c, map[string]string{"a": pol, "b": pol})
	fi := c.Follower()
	f := c.URL(fi)
	c.WaitFor(10*time.Second, "the tokens on the follower", func() bool {
		_, a := c.Nodes[fi].ACL().Resolve(toks["a"])
		_, b := c.Nodes[fi].ACL().Resolve(toks["b"])
		return a && b
	})
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	refused := func(what string, a rawhttp.Answer) {
		t.Helper()
		var eb api.ErrorBody
		_ = a.Decode(&eb)
		if a.Status != http.StatusTooManyRequests || eb.Error.Code != api.CodeTooManyRequests || a.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %d %s (Retry-After %q), want 429 too_many_requests with Retry-After", what, a.Status, a.Raw, a.Header.Get("Retry-After"))
		}
	}

	// Streams: a's two, then a's third refused, b's first served.
	for range 2 {
		openStream(t, f, toks["a"], "/v1/events?prefix=jobs/")
	}
	refused("a's third stream", rawhttp.Client{Token: toks["a"], HTTP: &http.Client{Timeout: 5 * time.Second}}.Do("GET", f+"/v1/events?prefix=jobs/", ""))
	openStream(t, f, toks["b"], "/v1/events?prefix=jobs/")

	// Held requests: a's two waiting acquires wait; its third is refused at once, and b's
	// still waits.
	var wg sync.WaitGroup
	defer wg.Wait()
	wait := func(token string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rawhttp.Client{Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}.Do("PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000,"wait_ms":4000}`)
		}()
	}
	waiters := func() int {
		var st api.LockStatus
		callAs(t, m, "GET", f+"/v1/locks/jobs/held", "", &st)
		return st.Waiters
	}
	wait(toks["a"])
	wait(toks["a"])
	c.WaitFor(10*time.Second, "a's two waiters queued", func() bool { return waiters() == 2 })
	refused("a's third waiting acquire", rawhttp.Client{Token: toks["a"], HTTP: &http.Client{Timeout: 10 * time.Second}}.Do("PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000,"wait_ms":4000}`))
	if n := waiters(); n != 2 {
		t.Fatalf("after the refusal %d waiters, want 2", n)
	}
	wait(toks["b"])
	c.WaitFor(10*time.Second, "b's waiter queued", func() bool { return waiters() == 3 })
}
