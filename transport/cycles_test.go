package transport_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
)

// A token with rights on a/ only closes a wait-for cycle through secret/payroll: its 409
// deadlock answer, the history of a/2 (read by an a/ read-only token, on the leader and
// with ?stale on a follower) and its event stream say that a cycle exists, through "a
// lock outside your prefixes", and never name secret/payroll; an admin's history does.
func TestACL_DeadlockNamesOnlyReadableLocks(t *testing.T) {
	c := startACLCluster(t)
	waitVersion(c, 3)
	m, toks := aclSetup(t, c, map[string]string{"a-lock": `{"rules":[{"prefix":"a/","access":"lock"}]}`, "a-read": `{"rules":[{"prefix":"a/","access":"read"}]}`})
	l := c.URL(c.Leader(10e9))
	as := func(token string) rawhttp.Client {
		return rawhttp.Client{Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
	}
	lease := func(token string) string {
		a := as(token).Do("POST", l+"/v1/leases", `{"ttl_ms":60000}`)
		id, _ := a.Body["lease_id"].(string)
		if a.Status != 201 || id == "" {
			t.Fatalf("lease: %v", a)
		}
		return id
	}
	take := func(token, name, id string) {
		if a := as(token).Do("PUT", l+"/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q}`, id)); a.Status != 200 {
			t.Fatalf("acquire %s: %v", name, a)
		}
	}
	waiters := func(name string) int {
		a := as(m).Do("GET", l+"/v1/locks/"+name, "")
		n, _ := a.Body["waiters"].(float64)
		return int(n)
	}
	la, lb, lc := lease(toks["a-lock"]), lease(m), lease(m)
	take(toks["a-lock"], "a/1", la)
	take(m, "a/2", lb)
	take(m, "secret/payroll", lc)
	var wg sync.WaitGroup
	defer wg.Wait()
	wait := func(name, id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			as(m).Do("PUT", l+"/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q,"wait_ms":20000}`, id))
		}()
		c.WaitFor(10*time.Second, "a waiter on "+name, func() bool { return waiters(name) == 1 })
	}
	wait("a/1", lc)
	wait("secret/payroll", lb)
	defer func() {
		for _, id := range []string{lb, lc} {
			as(m).Do("POST", l+"/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, id))
		}
	}()

	a := as(toks["a-lock"]).Do("PUT", l+"/v1/locks/a/2", fmt.Sprintf(`{"lease_id":%q,"wait_ms":5000}`, la))
	if a.Status != 409 || a.Code() != "deadlock" {
		t.Fatalf("closing the cycle: %v, want 409 deadlock", a)
	}
	msg := string(a.Raw)
	if strings.Contains(msg, "secret/") || !strings.Contains(msg, "a lock outside your prefixes") || !strings.Contains(msg, "cycle") || !strings.Contains(msg, "lock a/1") {
		t.Fatalf("a/ token's deadlock answer: %s", msg)
	}

	ro := toks["a-read"]
	f := c.URL(c.Follower())
	for _, u := range []string{l + "/v1/history/a/2", f + "/v1/history/a/2?stale=true"} {
		var got string
		c.WaitFor(10*time.Second, "the refusal in "+u, func() bool {
			got = string(as(ro).Do("GET", u, "").Raw)
			return strings.Contains(got, "deadlock_refused")
		})
		if strings.Contains(got, "secret/") || !strings.Contains(got, "a lock outside your prefixes") {
			t.Fatalf("a/ reader: GET %s: %s", u, got)
		}
	}
	if got := string(as(m).Do("GET", l+"/v1/history/a/2", "").Raw); !strings.Contains(got, "secret/payroll") {
		t.Fatalf("admin's history of a/2 does not name secret/payroll: %s", got)
	}

	lines, stop, why := as(ro).OpenStream(l + "/v1/events?prefix=a/&from_index=1")
	if why != "" {
		t.Fatalf("stream: %s", why)
	}
	defer stop()
	for timeout := time.After(10 * time.Second); ; {
		select {
		case line := <-lines:
			if strings.Contains(line, "secret/") {
				t.Fatalf("a/ reader's event stream names secret/: %s", line)
			}
			if strings.Contains(line, "deadlock_refused") {
				if !strings.Contains(line, "a lock outside your prefixes") {
					t.Fatalf("the stream's refusal: %s", line)
				}
				return
			}
		case <-timeout:
			t.Fatal("no deadlock_refused event on the a/ stream within 10 s")
		}
	}
}
