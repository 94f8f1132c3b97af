package netns_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// ownershipRounds is how many times two tokens race one request_id: the race gave both
// one lease in 11 of 40 rounds before the state machine checked ownership.
const ownershipRounds = 40

// leaseOwnership runs the third security round's cases on lease ownership and on what a
// revoked token keeps, as the outside client that found them (TLS + ACL only):
//
//   - two tokens send the same request_id at the same moment, each for a lock under its
//     own prefix: never one lease for both, and the lease the first one was granted,
//     revoked by it, takes nothing of the other's;
//   - a token revoked while its acquire waits: answered 401 at once, never granted;
//   - a token revoked while its blocking query waits: answered 401 at once, no data;
//   - a token revoked while its event stream is open and quiet: the stream ends at once
//     with an unauthenticated error event, not at its next ping.
//
// Everything a case sets up is revoked before it returns, so that the suite's final
// checks (no lock, no lease) hold.
func leaseOwnership(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, w, other *client) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }

	// 18. The raced request_id: other (lock on other/) and w (lock on netns/) send the
	// same request_id to the same node at once.
	bad := make([][]string, n)
	for r := range ownershipRounds {
		i := r % n
		reqID := "race-" + randomHex(t, 12)
		var ga, gb rawhttp.Answer
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			ga = other.do("PUT", at(i), fmt.Sprintf("/v1/locks/other/race-%d", r), fmt.Sprintf(`{"ttl_ms":60000,"request_id":%q}`, reqID))
		}()
		go func() {
			defer wg.Done()
			<-start
			gb = w.do("PUT", at(i), fmt.Sprintf("/v1/locks/netns/race-%d", r), fmt.Sprintf(`{"ttl_ms":60000,"request_id":%q}`, reqID))
		}()
		close(start)
		wg.Wait()
		la, _ := ga.Body["lease_id"].(string)
		lb, _ := gb.Body["lease_id"].(string)
		if ga.Status != 200 || gb.Status != 200 {
			bad[i] = append(bad[i], fmt.Sprintf("round %d: not both granted (%v / %v)", r, ga, gb))
			revokeAs(admin, at(0), la, lb)
			continue
		}
		if la == lb {
			bad[i] = append(bad[i], fmt.Sprintf("round %d: both granted on one lease", r))
		}
		// other revokes the lease it was granted: w's lock and lease must not notice.
		other.do("DELETE", at(i), "/v1/leases/"+la, "")
		tokB := int64(gb.Body["token"].(float64))
		lk := admin.do("GET", at(i), fmt.Sprintf("/v1/locks/netns/race-%d", r), "")
		ka := w.do("POST", at(i), "/v1/leases/"+lb+"/keepalive", "")
		rel := w.do("DELETE", at(i), fmt.Sprintf("/v1/locks/netns/race-%d", r), fmt.Sprintf(`{"lease_id":%q,"token":%d}`, lb, tokB))
		if lk.Body["held"] != true || int64(lk.Body["token"].(float64)) != tokB || ka.Status != 200 || rel.Status != 200 {
			bad[i] = append(bad[i], fmt.Sprintf("round %d: after the other token revoked its lease: lock %v, keepalive %v, release %v", r, lk, ka, rel))
		}
		revokeAs(admin, at(0), la, lb)
	}
	for i := range n {
		ty.check("two tokens race one request_id: never one lease; the other's revoke leaves the lock", c.ID(i),
			len(bad[i]) == 0 && unmoved(t, c, admin, base), strings.Join(bad[i], "; "))
	}

	// The holder of the locks the revoked tokens wait for.
	hl := admin.do("POST", at(0), "/v1/leases", `{"ttl_ms":120000}`)
	if hl.Status != 201 {
		t.Fatalf("holder lease: %v", hl)
	}
	holder, _ := hl.Body["lease_id"].(string)

	// 19. A token revoked while its acquire waits for a held lock.
	for i := range n {
		name := fmt.Sprintf("netns/held-%d", i)
		g := admin.do("PUT", at(0), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q}`, holder))
		if g.Status != 200 {
			t.Fatalf("holder acquires %s: %v", name, g)
		}
		tok := int64(g.Body["token"].(float64))
		secret, accessor := newToken(t, c, admin, "netns-worker")
		answer := make(chan rawhttp.Answer, 1)
		go func() {
			answer <- w.withToken(secret).do("PUT", at(i), "/v1/locks/"+name, `{"ttl_ms":60000,"wait_ms":25000,"owner":"revoked"}`)
		}()
		waitAll(t, c, admin, "/v1/locks/"+name, `"waiters":1`)
		revokeToken(t, admin, at(0), accessor, "the waiting token")
		a, atOnce := answerWithin(answer, 10*time.Second) // well within its wait_ms
		if rel := admin.do("DELETE", at(0), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q,"token":%d}`, holder, tok)); rel.Status != 200 {
			t.Fatalf("holder releases %s: %v", name, rel)
		}
		if !atOnce {
			a = <-answer
		}
		if l, _ := a.Body["lease_id"].(string); l != "" {
			revokeAs(admin, at(0), l)
		}
		lk := admin.do("GET", at(0), "/v1/locks/"+name, "")
		ty.check("revoked token's waiting acquire: 401 at the revocation, never a grant", c.ID(i),
			atOnce && a.Status == 401 && a.Code() == "unauthenticated" && lk.Body["held"] == false && unmoved(t, c, admin, base),
			fmt.Sprintf("answered at the revocation %v: %v; the lock after the holder's release: %v", atOnce, a, lk))
	}

	// 20. A token revoked while its blocking query waits for a change that never comes.
	for i := range n {
		name := fmt.Sprintf("netns/watched-%d", i)
		secret, accessor := newToken(t, c, admin, "netns-reader")
		rd := w.withToken(secret)
		waitAll(t, c, rd, "/v1/acl/token/self", accessor)
		st := rd.do("GET", at(i), "/v1/locks/"+name, "")
		idx, _ := st.Body["modify_index"].(float64)
		answer := make(chan rawhttp.Answer, 1)
		go func() {
			answer <- rd.do("GET", at(i), fmt.Sprintf("/v1/locks/%s?wait_index=%d&wait_ms=25000", name, int64(idx)), "")
		}()
		// The query must be waiting before the revocation: nothing changes the lock, so
		// an answer within a second is a failed set-up, not the case.
		if a, early := answerWithin(answer, time.Second); early {
			t.Fatalf("the blocking query answered before anything changed: %v", a)
		}
		revokeToken(t, admin, at(0), accessor, "the querying token")
		a, atOnce := answerWithin(answer, 10*time.Second)
		if !atOnce {
			a = <-answer
		}
		ty.check("revoked token's blocking query: 401 at the revocation, no data", c.ID(i),
			atOnce && a.Status == 401 && a.Code() == "unauthenticated" && !strings.Contains(string(a.Raw), "modify_index") && unmoved(t, c, admin, base),
			fmt.Sprintf("answered at the revocation %v: %v", atOnce, a))
	}

	// 21. A token revoked while its event stream is open and nothing happens.
	for i := range n {
		secret, accessor := newToken(t, c, admin, "netns-reader")
		lines, stop := stream(t, w.withToken(secret), at(i), "/v1/events?prefix=netns/quiet/")
		revokeToken(t, admin, at(0), accessor, "the stream's token")
		// Within a third of the 15 s ping that ended it before.
		code, _ := streamEnd(lines, "", 5*time.Second)
		stop()
		ty.check("revoked token's quiet event stream: ends at the revocation with error unauthenticated", c.ID(i),
			code == "unauthenticated" && unmoved(t, c, admin, base), fmt.Sprintf("last error %q", code))
	}

	revokeAs(admin, at(0), holder)
}

// newToken creates a token with policy through the admin and waits until every node
// knows it; it returns its secret and accessor.
func newToken(t *testing.T, c *testcluster.Processes, admin *client, policy string) (secret, accessor string) {
	t.Helper()
	a := admin.do("POST", c.HTTPAddr(0), "/v1/acl/tokens", fmt.Sprintf(`{"description":"netns revoked","policies":[%q]}`, policy))
	secret, _ = a.Body["secret_id"].(string)
	accessor, _ = a.Body["accessor_id"].(string)
	if a.Status != 200 || secret == "" {
		t.Fatalf("create a token: %v", a)
	}
	waitAll(t, c, admin.withToken(secret), "/v1/acl/token/self", accessor)
	return secret, accessor
}

// revokeToken revokes the token of accessor through the admin at addr; what names the
// token in a failure.
func revokeToken(t *testing.T, admin *client, addr, accessor, what string) {
	t.Helper()
	if a := admin.do("DELETE", addr, "/v1/acl/tokens/"+accessor, ""); a.Status != 200 {
		t.Fatalf("revoke %s: %v", what, a)
	}
}

// answerWithin returns the answer when it comes within d, and whether it did.
func answerWithin(answer <-chan rawhttp.Answer, d time.Duration) (rawhttp.Answer, bool) {
	select {
	case a := <-answer:
		return a, true
	case <-time.After(d):
		return rawhttp.Answer{}, false
	}
}

// revokeAs revokes each non-empty lease through addr, ignoring leases already gone.
func revokeAs(cl *client, addr string, leases ...string) {
	for _, l := range leases {
		if l != "" {
			cl.do("DELETE", addr, "/v1/leases/"+l, "")
		}
	}
}
