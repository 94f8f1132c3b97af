package blackbox_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// num reads a JSON number of an answer's body.
func num(a rawhttp.Answer, key string) int64 {
	v, _ := a.Body[key].(float64)
	return int64(v)
}

// errCode reads the error code of an answer.
func errCode(a rawhttp.Answer) string {
	e, _ := a.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// waitVersion3 waits until every node reports protocol version 3 (each registers its
// version with the leader after it starts).
func waitVersion3(t *testing.T, p *testcluster.Processes) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "protocol version 3 on every node", func() bool {
		for i := 0; i < p.N(); i++ {
			if a := do("GET", p.URL(i)+"/v1/cluster", ""); a.Status != 200 || num(a, "protocol_version") < 3 {
				return false
			}
		}
		return true
	})
}

// Deadlock detection, locksets, the maximum hold and the lock delay, from outside, with
// plain HTTP against three raftlock processes, the checks the locksets promise.
func TestBlackbox_LockSetsDeadlockMaxHoldLockDelay(t *testing.T) {
	p := testcluster.StartProcesses(t, 3)
	waitAllReady(t, p, 3)
	waitVersion3(t, p)
	url := func(i int) string { return p.URL(i%3) + "/v1" }
	lease := func(i int, ttl int) string {
		a := do("POST", url(i)+"/leases", fmt.Sprintf(`{"ttl_ms":%d}`, ttl))
		if a.Status != 201 {
			t.Fatalf("create lease: %v", a)
		}
		return a.Body["lease_id"].(string)
	}

	// Two leases holding a and b, each asking for the other's lock: one 409 deadlock, at once.
	la, lb := lease(0, 30000), lease(1, 30000)
	for i, x := range [][2]string{{la, "dl-a"}, {lb, "dl-b"}} {
		if a := do("PUT", url(i)+"/locks/"+x[1], `{"lease_id":"`+x[0]+`"}`); a.Status != 200 {
			t.Fatalf("take %s: %v", x[1], a)
		}
	}
	var wg sync.WaitGroup
	var first rawhttp.Answer
	wg.Add(1)
	go func() {
		defer wg.Done()
		first = do("PUT", url(2)+"/locks/dl-b", `{"lease_id":"`+la+`","wait_ms":15000}`)
	}()
	testkit.WaitFor(t, 10*time.Second, "a queued for dl-b", func() bool {
		a := do("GET", url(0)+"/locks/dl-b", "")
		return num(a, "waiters") == 1
	})
	second := do("PUT", url(1)+"/locks/dl-a", `{"lease_id":"`+lb+`","wait_ms":15000}`)
	if second.Status != 409 || errCode(second) != "deadlock" || strings.Contains(string(second.Raw), la) || strings.Contains(string(second.Raw), lb) {
		t.Fatalf("the closing request: %v", second)
	}
	t.Logf("deadlock answered in %v: %s", second.Took, second.Raw)
	if second.Took > 5*time.Second {
		t.Logf("note: the deadlock answer took %v (a wait timeout would be 15 s)", second.Took)
	}
	if a := do("DELETE", url(0)+"/leases/"+lb, ""); a.Status != 200 {
		t.Fatalf("revoke b: %v", a)
	}
	wg.Wait()
	if first.Status != 200 {
		t.Fatalf("a's wait: %v", first)
	}

	// A lockset of three free names: three tokens from one commit.
	set := do("POST", url(1)+"/locksets", `{"names":["ls-c","ls-a","ls-b"],"ttl_ms":30000}`)
	if set.Status != 200 {
		t.Fatalf("lockset: %v", set)
	}
	locks := set.Body["locks"].([]any)
	tok := func(i int) float64 { return locks[i].(map[string]any)["token"].(float64) }
	if len(locks) != 3 || tok(0) != tok(1) || tok(1) != tok(2) {
		t.Fatalf("lockset tokens: %s", set.Raw)
	}
	t.Logf("lockset: %s", set.Raw)
	// A lockset with one held name takes nothing.
	held := do("POST", url(2)+"/locksets", `{"names":["ls-free","ls-b"],"ttl_ms":30000}`)
	if held.Status != 409 || errCode(held) != "lock_held" || !strings.Contains(string(held.Raw), "ls-b") {
		t.Fatalf("lockset with a held name: %v", held)
	}
	if a := do("GET", url(0)+"/locks/ls-free", ""); a.Body["held"] != false {
		t.Fatalf("ls-free taken by a refused set: %v", a)
	}
	rel := fmt.Sprintf(`{"lease_id":%q,"locks":[{"name":"ls-a","token":%d},{"name":"ls-b","token":%d},{"name":"ls-c","token":%d}]}`,
		set.Body["lease_id"], int64(tok(0)), int64(tok(1)), int64(tok(2)))
	if a := do("DELETE", url(0)+"/locksets", rel); a.Status != 200 {
		t.Fatalf("release the set: %v", a)
	}

	// max_hold_ms 1500 kept alive every 300 ms: a waiter is granted about 1.5 s after the
	// grant, with a higher token.
	holder := lease(0, 3000)
	// Measured from before the grant was asked for: the grant's stamp is later, and cluster
	// time runs no faster than this clock, so the waiter cannot come sooner than 1.5 s.
	granted := time.Now()
	g := do("PUT", url(0)+"/locks/mh", `{"lease_id":"`+holder+`","max_hold_ms":1500}`)
	if g.Status != 200 {
		t.Fatalf("max hold grant: %v", g)
	}
	stop := make(chan struct{})
	var kw sync.WaitGroup
	kw.Add(1)
	go func() {
		defer kw.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
				do("POST", url(i)+"/leases/"+holder+"/keepalive", "")
			}
		}
	}()
	// The waits name a request_id, as a client that waits through a follower should: a
	// leader that moves meanwhile leaves the first attempt's outcome unknown, and the node
	// repeats only a request that a repeat cannot apply twice (else: 503 unknown_outcome).
	w := do("PUT", url(1)+"/locks/mh", `{"ttl_ms":10000,"wait_ms":20000,"request_id":"`+rand.Text()+`"}`)
	after := time.Since(granted)
	close(stop)
	kw.Wait()
	if w.Status != 200 || num(w, "token") <= num(g, "token") {
		t.Fatalf("waiter after the maximum hold: %v (first token %d)", w, num(g, "token"))
	}
	if after < 1500*time.Millisecond-10*time.Millisecond { // 10 ms: the clocks' granularity
		t.Fatalf("waiter granted %v after the grant, before the maximum hold", after)
	}
	t.Logf("max hold: waiter granted %v after the grant, token %d > %d", after, num(w, "token"), num(g, "token"))
	if a := do("DELETE", url(2)+"/locks/mh", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, holder, num(g, "token"))); a.Status != 409 || errCode(a) != "not_holder" {
		t.Fatalf("old holder's release: %v", a)
	}

	// lock_delay_ms 2000 whose lease expires: no grant for 2 s after the expiry.
	// The lease is created with the grant (one entry), so it cannot expire before the grant
	// under a slow machine; measured from before the request, as above.
	start := time.Now()
	if a := do("PUT", url(0)+"/locks/ld", `{"ttl_ms":1000,"lock_delay_ms":2000}`); a.Status != 200 {
		t.Fatalf("lock delay grant: %v", a)
	}
	ld := do("PUT", url(1)+"/locks/ld", `{"ttl_ms":10000,"wait_ms":20000,"request_id":"`+rand.Text()+`"}`)
	waited := time.Since(start)
	if ld.Status != 200 {
		t.Fatalf("waiter after the lock delay: %v", ld)
	}
	if waited < 3000*time.Millisecond-10*time.Millisecond {
		t.Fatalf("granted %v after the grant was asked for: before its expiry (1 s) + the delay (2 s)", waited)
	}
	t.Logf("lock delay: waiter granted %v after the grant of a 1 s lease with a 2 s delay", waited)
	hist := do("GET", url(2)+"/history/ld", "")
	if !strings.Contains(string(hist.Raw), `"lock_delay"`) {
		t.Fatalf("history of ld: %s", hist.Raw)
	}
}
