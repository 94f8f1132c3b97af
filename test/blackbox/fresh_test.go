package blackbox_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// A cluster bootstrapped by this release serves all of it from the first moment any node
// answers /readyz 200: a shared lock taken at once is granted and has a history. There is
// no upgrade in progress, so nothing may answer "need protocol version 2".
func TestBlackbox_FreshClusterServesEverythingWhenReady(t *testing.T) {
	const n = 3
	p := testcluster.StartProcessesNoWait(t, n)
	ready := -1
	start := time.Now()
	testkit.Poll(30*time.Second, 5*time.Millisecond, func() bool {
		for i := 0; i < n; i++ {
			if do("GET", p.URL(i)+"/readyz", "").Status == 200 {
				ready = i
				return true
			}
		}
		return false
	})
	if ready < 0 {
		t.Fatal("no node answered /readyz 200 within 30 s")
	}
	t.Logf("n%d ready %v after start", ready+1, time.Since(start).Round(time.Millisecond))
	a := do("PUT", p.URL(ready)+"/v1/locks/fresh/x", `{"mode":"shared","ttl_ms":10000}`)
	if a.Status != 200 {
		t.Fatalf("shared lock at the first ready moment: %v", a)
	}
	h := do("GET", p.URL(ready)+"/v1/history/fresh/x", "")
	if h.Status != 200 || !strings.Contains(string(h.Raw), `"granted"`) {
		t.Fatalf("history of a lock taken at the first ready moment: %v", h)
	}
	for _, path := range []string{"/v1/semaphores/fresh/s", "/v1/elections/fresh/e"} {
		body := `{"ttl_ms":10000}`
		if strings.Contains(path, "semaphores") {
			body = `{"ttl_ms":10000,"limit":2}`
		}
		if a := do("PUT", p.URL(ready)+path, body); a.Status != 200 {
			t.Fatalf("PUT %s at the first ready moment: %v", path, a)
		}
	}
}

// A member that speaks only the previous protocol version (as a node of the previous
// release would) keeps a fresh cluster at that version: shared locks are refused, the
// answer names that node, and nothing halts.
func TestBlackbox_FreshClusterWithAnOlderMember(t *testing.T) {
	const n = 3
	p := testcluster.NewProcesses(t, n)
	p.NodeArgs = func(i int) []string {
		if i == 2 {
			return []string{"--max-protocol-version", "1"}
		}
		return nil
	}
	p.StartAll()
	waitAllReady(t, p, n)
	// The refusal names the members that have not registered version 2: n3 always (a
	// leader at version 1, n3 itself, skips the others' registrations and names them too).
	a := do("PUT", p.URL(0)+"/v1/locks/old/x", `{"mode":"shared","ttl_ms":10000}`)
	if a.Status != 503 || a.Code() != "no_leader" || !regexp.MustCompile(`nodes? [^;]*n3[^;]* not registered it`).Match(a.Raw) {
		t.Fatalf("shared lock with n3 at protocol version 1: %v, want 503 naming n3", a)
	}
	if a := do("PUT", p.URL(2)+"/v1/locks/old/y", `{"ttl_ms":10000}`); a.Status != 200 {
		t.Fatalf("exclusive lock through the older member: %v", a)
	}
}
