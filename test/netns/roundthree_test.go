package netns_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// pprofAddr is where each node serves its profiles: loopback inside its own namespace,
// reachable only from a process in that namespace (as from a browser on that host).
const pprofAddr = "127.0.0.1:6060"

// rebindHost is the Host a DNS-rebinding page's requests carry: the attacker's name,
// which resolved to the node's address a moment after the page loaded.
const rebindHost = "rebind.attacker.example"

// roundThree runs the cases of the third security round that are refused at the HTTP
// edge (docs/SECURITY.md, "Browsers, rebinding, internal headers, /metrics"), as the
// outside clients that found them sent them:
//
//   - a web page's cross-site requests (Content-Type text/plain, Origin of another site)
//     to POST /v1/locksets, /v1/leases and /v1/cluster/nodes, where ACLs are off;
//   - a DNS-rebinding page's GET /v1/backup, and its GETs of pprof's cmdline and
//     goroutine dump on the node's loopback;
//   - with ACLs, a client without a token (an anonymous policy) that sets
//     X-Raftlock-Hops to pass its 33rd event stream as a forwarded one;
//   - with ACLs, /metrics read without a token and with a token that is no admin: the
//     cluster's lease and lock counts, which the overview withholds from both;
//   - with ACLs, a wait-for cycle closed through a lock outside the token's prefixes: the
//     lock's name in the 409, in the history and in the event stream.
//
// Each case must be refused and change nothing (leader, terms, members).
func roundThree(t *testing.T, ty *tally, c *testcluster.Processes, nw *network, base view, admin, w, other, anon *client, acl bool) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }
	noCORS := func(a rawhttp.Answer) bool { return a.Header.Get("Access-Control-Allow-Origin") == "" }

	// 22. Cross-site requests from a web page (what a form with enctype text/plain, or a
	// fetch in no-cors mode, sends). With ACLs on, the page has no token to send and is
	// refused as before; the case is where ACLs are off.
	if !acl {
		bodies := map[string]string{
			"/v1/locksets":      `{"names":["attack/x","attack/y"],"ttl_ms":60000}`,
			"/v1/leases":        `{"ttl_ms":60000}`,
			"/v1/cluster/nodes": fmt.Sprintf(`{"id":"bogus","raft_addr":"%s:8001"}`, nw.Unused()),
		}
		for i := 0; i < n; i++ {
			for _, path := range []string{"/v1/locksets", "/v1/leases", "/v1/cluster/nodes"} {
				for _, v := range []struct {
					what   string
					header []string
					status int
					code   string
				}{
					{"text/plain from another origin", []string{"Content-Type", "text/plain;charset=UTF-8", "Origin", "https://evil.example"}, 403, "permission_denied"},
					{"text/plain without an Origin", []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
					{"JSON from another origin", []string{"Origin", "https://evil.example"}, 403, "permission_denied"},
				} {
					a := anon.do("POST", at(i), path, bodies[path], v.header...)
					ty.check(fmt.Sprintf("cross-site POST (%s): %d %s", v.what, v.status, v.code), c.ID(i)+" "+path,
						a.Status == v.status && a.Code() == v.code && noCORS(a) && unmoved(t, c, admin, base), a.String())
				}
			}
		}
	}

	// 23. DNS rebinding: the API's backup and the pprof listener's command line and
	// goroutine dump, asked for by a name the node does not go by.
	for i := 0; i < n; i++ {
		for _, path := range []string{"/v1/backup", "/v1/snapshot"} {
			a := admin.do("GET", at(i), path, "", "Host", rebindHost+":"+httpPort)
			ty.check("DNS rebinding: GET "+path+" by the attacker's name: 421 misdirected_request", c.ID(i),
				a.Status == 421 && a.Code() == "misdirected_request" && strings.Contains(string(a.Raw), "--allowed-hosts") && unmoved(t, c, admin, base), fmt.Sprintf("%d %.200s", a.Status, a.Raw))
		}
		for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1"} {
			if st, line := loopbackGet(t, nw, i, path, pprofAddr); st != 200 {
				t.Fatalf("%s: GET %s on its own loopback: %s", c.ID(i), path, line)
			}
			st, line := loopbackGet(t, nw, i, path, rebindHost+":6060")
			ty.check("DNS rebinding: pprof "+path+" by the attacker's name: 421", c.ID(i), st == 421, line)
		}
	}
	if !acl {
		return
	}

	// 24. X-Raftlock-Hops from a client: with an anonymous policy, a client without a
	// token sets the header on its streams; its 33rd stream on a node must still be 429.
	if a := admin.do("PUT", at(0), "/v1/acl/policies/anonymous", `{"rules":[{"prefix":"netns/","access":"read"}]}`); a.Status != 200 {
		t.Fatalf("anonymous policy: %v", a)
	}
	waitAll(t, c, admin, "/v1/acl/policies/anonymous", `"netns/"`)
	for i := 0; i < n; i++ {
		var stops []func()
		var opened int
		var last string
		for range 33 {
			st, stop := hopStream(anon, at(i))
			if st != 200 {
				last = fmt.Sprint(st)
				break
			}
			opened++
			stops = append(stops, stop)
		}
		for _, s := range stops {
			s()
		}
		ty.check("client-set X-Raftlock-Hops, no token (anonymous policy): 33rd stream 429", c.ID(i),
			opened == 32 && last == "429" && unmoved(t, c, admin, base), fmt.Sprintf("opened %d, then %q", opened, last))
	}
	if a := admin.do("DELETE", at(0), "/v1/acl/policies/anonymous", ""); a.Status != 200 {
		t.Fatalf("delete the anonymous policy: %v", a)
	}

	// 26. A cycle closed by a token with rights on other/ only, through a lock of the
	// admin's under netns/secret/: the 409, the history of other/2 (every node, ?stale)
	// and the other/ event stream say a cycle exists and never name the secret lock.
	deadlockNames(t, ty, c, base, admin, other)

	// 25. /metrics without a token and with a worker's token: no count of the cluster's
	// leases or held locks (the overview withholds them from both); an admin reads them.
	if m := admin.do("GET", at(0), "/metrics", ""); gauge(string(m.Raw), "raftlock_leases") == "" {
		t.Fatalf("the admin's /metrics has no raftlock_leases: %v", m)
	}
	for i := 0; i < n; i++ {
		for _, who := range []struct {
			what string
			cl   *client
		}{{"no token", anon}, {"a lock token", w}} {
			m := who.cl.do("GET", at(i), "/metrics", "")
			shown := []string{}
			for _, g := range []string{"raftlock_leases", "raftlock_locks_held", "raftlock_grants_total"} {
				if v := gauge(string(m.Raw), g); v != "" {
					shown = append(shown, g+" "+v)
				}
			}
			ty.check("/metrics with "+who.what+": the cluster's lease and lock counts withheld", c.ID(i),
				m.Status == 200 && strings.Contains(string(m.Raw), "raftlock_raft_term") && len(shown) == 0, fmt.Sprintf("%d, shows %v", m.Status, shown))
		}
	}
}

// hopStream opens GET /v1/events?prefix=netns/ with X-Raftlock-Hops: 1, as a client that
// read transport/forward.go would; stop closes it.
func hopStream(cl *client, addr string) (status int, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", cl.scheme+"://"+addr+"/v1/events?prefix=netns/", nil)
	req.Header.Set("X-Raftlock-Hops", "1")
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		cancel()
		return 0, func() {}
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		cancel()
		return resp.StatusCode, func() {}
	}
	return 200, func() { cancel(); resp.Body.Close() }
}

// loopbackGet sends GET path to the pprof listener on node i's loopback, from inside its
// namespace, with Host host, as raw bytes over bash's /dev/tcp (what a page on that host
// reaches); it returns the status and the status line.
func loopbackGet(t *testing.T, nw *network, i int, path, host string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	host0, port, _ := strings.Cut(pprofAddr, ":")
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && printf 'GET %%s HTTP/1.1\r\nHost: %%s\r\nConnection: close\r\n\r\n' "$1" "$2" >&3 && head -n 1 <&3`, host0, port)
	var out []byte
	var err error
	// The listener starts with the node; retry while it is not accepting yet.
	testkit.WaitFor(t, 15*time.Second, "the pprof listener on n"+fmt.Sprint(i+1), func() bool {
		out, err = nw.command(ctx, i, "bash", "-c", script, "bash", path, host).Output()
		return err == nil
	})
	line := strings.TrimSpace(string(out))
	var proto string
	var status int
	if _, err := fmt.Sscanf(line, "%s %d", &proto, &status); err != nil {
		return 0, line
	}
	return status, line
}

// TestNetns_BrowserAttacksPlain runs roundThree's cases that apply without TLS and ACLs,
// the development default and the README's first command: a web page's cross-site
// requests and DNS rebinding, on three hosts, each case refused and nothing changed.
func TestNetns_BrowserAttacksPlain(t *testing.T) {
	const n = 3
	nw := newNetwork(t, n)
	c := startCluster(t, nw, nil, "--election-timeout", "2s", "--pprof-addr", pprofAddr)
	cl := newClient("http", nil, newSecrets())
	leader := waitReady(t, c, cl, 30*time.Second)
	var base view
	testkit.WaitFor(t, 15*time.Second, "every member's HTTP address registered, on every node", func() bool {
		base = snapshot(t, c, cl)
		return strings.Count(base.members, "voter=true") == n && !strings.Contains(base.members, "//")
	})
	t.Logf("cluster ready: leader n%d, %s", leader+1, base)
	ty := newTally(t)
	roundThree(t, ty, c, nw, base, cl, cl, cl, cl, false)
	if a := cl.do("GET", c.HTTPAddr(leader), "/v1/locks?prefix=", ""); a.Status != 200 || !strings.Contains(string(a.Raw), `"locks":[]`) {
		t.Errorf("after the attacks GET /v1/locks: %v, want no lock", a)
	}
	if !unmoved(t, c, cl, base) {
		t.Errorf("after the attacks the cluster moved: was %v, now %v", base, snapshot(t, c, cl))
	}
	ty.report()
}

// deadlockNames is case 26: other (lock on other/) holds other/1; the admin's lease B
// holds other/2 and waits for netns/secret/payroll, held by its lease C, which waits for
// other/1. other then asks for other/2 with a wait: the cycle closes.
func deadlockNames(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, other *client) {
	t.Helper()
	at := func(i int) string { return c.HTTPAddr(i) }
	const secret = "netns/secret/payroll"
	lease := func(cl *client) string {
		a := cl.do("POST", at(0), "/v1/leases", `{"ttl_ms":120000}`)
		id, _ := a.Body["lease_id"].(string)
		if a.Status != 201 || id == "" {
			t.Fatalf("lease: %v", a)
		}
		return id
	}
	take := func(cl *client, name, id string) {
		if a := cl.do("PUT", at(0), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q}`, id)); a.Status != 200 {
			t.Fatalf("acquire %s: %v", name, a)
		}
	}
	lo, lb, lc := lease(other), lease(admin), lease(admin)
	take(other, "other/1", lo)
	take(admin, "other/2", lb)
	take(admin, secret, lc)
	done := make(chan struct{}, 2)
	wait := func(name, id string) {
		go func() {
			admin.do("PUT", at(0), "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q,"wait_ms":60000}`, id))
			done <- struct{}{}
		}()
		testkit.WaitFor(t, 10*time.Second, "a waiter on "+name, func() bool {
			a := admin.do("GET", at(0), "/v1/locks/"+name, "")
			return a.Body["waiters"] == float64(1)
		})
	}
	wait("other/1", lc)
	wait(secret, lb)
	hidden := "a lock outside your prefixes"
	a := other.do("PUT", at(0), "/v1/locks/other/2", fmt.Sprintf(`{"lease_id":%q,"wait_ms":5000}`, lo))
	ty.check("deadlock 409 of an other/ token: the netns/secret/ lock not named", c.ID(0),
		a.Status == 409 && a.Code() == "deadlock" && !strings.Contains(string(a.Raw), "netns/secret/") && strings.Contains(string(a.Raw), hidden) && unmoved(t, c, admin, base), a.String())
	for i := 0; i < c.N(); i++ {
		for _, path := range []string{"/v1/history/other/2", "/v1/history/other/2?stale=true"} {
			var h rawhttp.Answer
			testkit.WaitFor(t, 10*time.Second, "the refusal in "+path+" on "+c.ID(i), func() bool {
				h = other.do("GET", at(i), path, "")
				return strings.Contains(string(h.Raw), "deadlock_refused")
			})
			ty.check("GET "+path+" by the other/ token: the netns/secret/ lock not named", c.ID(i),
				h.Status == 200 && !strings.Contains(string(h.Raw), "netns/secret/") && strings.Contains(string(h.Raw), hidden), h.String())
		}
		lines, stop := stream(t, other, at(i), "/v1/events?prefix=other/&from_index=1")
		var seen string
		for timeout := time.After(10 * time.Second); seen == ""; {
			select {
			case line := <-lines:
				if strings.Contains(line, "deadlock_refused") || strings.Contains(line, "netns/secret/") {
					seen = line
				}
			case <-timeout:
				seen = "(no deadlock_refused event within 10 s)"
			}
		}
		stop()
		ty.check("/v1/events?prefix=other/ by the other/ token: the netns/secret/ lock not named", c.ID(i),
			!strings.Contains(seen, "netns/secret/") && strings.Contains(seen, hidden), seen)
	}
	for _, l := range []struct {
		cl *client
		id string
	}{{admin, lb}, {admin, lc}, {other, lo}} {
		if r := l.cl.do("POST", at(0), "/v1/leases/revoke", fmt.Sprintf(`{"lease_id":%q}`, l.id)); r.Status != 200 {
			t.Fatalf("revoke: %v", r)
		}
	}
	<-done
	<-done
}
