package transport_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/transport"
)

// The dashboard's files are served with their own content types and a CSP that allows no
// inline script, and the page holds none that the CSP would block.
func TestUI_FilesContentTypesAndCSP(t *testing.T) {
	h := oaServer(t).Handler()
	for _, c := range []struct{ path, ctype string }{
		{"/ui/", "text/html; charset=utf-8"},
		{"/ui/index.html", "text/html; charset=utf-8"},
		{"/ui/app.js", "text/javascript; charset=utf-8"},
		{"/ui/style.css", "text/css; charset=utf-8"},
		{"/ui/favicon.svg", "image/svg+xml"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, transport.APIRequest("GET", c.path, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != c.ctype {
			t.Errorf("GET %s: %d %q, want 200 %q", c.path, rec.Code, rec.Header().Get("Content-Type"), c.ctype)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: CSP %q", c.path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
	}
	for _, p := range []string{"/ui/nope.html", "/ui/doc.go", "/ui/ui/app.js", "/ui/../server.go"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, transport.APIRequest("GET", p, nil))
		if rec.Code == 200 || strings.Contains(rec.Body.String(), "package transport") {
			t.Errorf("GET %s: %d, want no file", p, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, transport.APIRequest("GET", "/ui", nil))
	if rec.Code/100 != 3 || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d %q, want a redirect to /ui/", rec.Code, rec.Header().Get("Location"))
	}

	page, err := transport.UIFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	// Every script has a src (the CSP refuses inline ones), and no element carries an
	// inline handler or style.
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAll(page, -1) {
		if !strings.Contains(string(m), `src="`) {
			t.Errorf("inline script: %s", m)
		}
	}
	if m := regexp.MustCompile(`\s(on[a-z]+|style)=`).Find(page); m != nil {
		t.Errorf("inline handler or style attribute: %q", m)
	}
	// Nothing is fetched from elsewhere.
	for _, f := range []string{"index.html", "app.js", "style.css"} {
		b, _ := transport.UIFile(f)
		b = []byte(strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")) // a namespace, not a fetch
		if m := regexp.MustCompile(`(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).Find(b); m != nil {
			t.Errorf("%s refers to another site: %s", f, m)
		}
	}
}

// The app builds its DOM from cluster data (lock names, owners) with textContent only.
func TestUI_NoHTMLFromData(t *testing.T) {
	js, err := transport.UIFile("app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
	if strings.Contains(string(js), "?token=") || strings.Contains(string(js), "&token=") {
		t.Errorf("app.js puts a token in a URL")
	}
}

// GET /v1/overview gives what the dashboard shows: every member's own indexes, the held
// locks with owner, token, TTL left, waiters, age and lease fingerprint (never the lease
// ID), the lease counts; and /metrics counts the grants and handovers every node applies.
func TestOverview_LocksNodesLeasesAndCounters(t *testing.T) {
	doc := oaDoc(t)
	router := newOARouter(t, doc)
	// Grant times come from the lock histories, which protocol version 2 keeps.
	c := startV2(t)
	c.WaitForwarding()
	f := c.URL(c.Follower())

	var g1 api.Grant
	if st, code := callAs(t, "", "PUT", f+"/v1/locks/jobs/a", `{"owner":"w1","ttl_ms":60000}`, &g1); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	waiter := make(chan struct{})
	go func() {
		defer close(waiter)
		req, _ := http.NewRequest("PUT", f+"/v1/locks/jobs/a", strings.NewReader(`{"owner":"w2","ttl_ms":60000,"wait_ms":20000}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	rawhttp.WaitStatus(t, f, "jobs/a", func(s api.LockStatus) bool { return s.Waiters == 1 })
	if st, code := callAs(t, "", "PUT", f+"/v1/locks/other", `{"owner":"w3","ttl_ms":4500}`, nil); st != 200 {
		t.Fatalf("acquire other: %d %s", st, code)
	}

	get := func(target string) (api.Overview, []byte) {
		t.Helper()
		resp, err := http.Get(f + target)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", target, resp.StatusCode, raw)
		}
		op, _, err := router.operation("GET", target)
		if err != nil {
			t.Fatal(err)
		}
		if _, schema := successSchema(op); oaValidate(schema, raw) != nil {
			t.Fatalf("GET %s: the answer does not match the document: %v\n%s", target, oaValidate(schema, raw), raw)
		}
		var o api.Overview
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		return o, raw
	}
	// The overview is this follower's applied state: wait until it has applied both
	// acquires and every member has registered its HTTP address. A member is ready only
	// once it has applied what it knows committed, so one that has just learned of a new
	// entry (the protocol version the leader raises a second after start, say) is
	// briefly not: wait for every member to be reported ready too.
	var o api.Overview
	var raw []byte
	testkit.WaitFor(t, 10*time.Second, "the follower's overview to show both leases and every member, ready", func() bool {
		o, raw = get("/v1/overview?prefix=jobs/")
		for _, n := range o.Nodes {
			if n.HTTPAddr == "" || !n.Ready {
				return false
			}
		}
		return o.Leases.Count == 3
	})
	if strings.Contains(string(raw), g1.LeaseID) {
		t.Fatalf("the overview shows a lease ID: %s", raw)
	}
	if len(o.Nodes) != 3 || len(o.Locks) != 1 || o.Leases.Count != 3 || o.Leases.SoonMs != 5000 || o.Leases.ExpiringSoon != 1 {
		t.Fatalf("overview: %s", raw)
	}
	leaders := 0
	for _, n := range o.Nodes {
		if !n.Reachable || n.Term == 0 || n.AppliedIndex == 0 || !n.Ready {
			t.Errorf("node %s: %+v", n.ID, n)
		}
		if n.Leader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders in %s", leaders, raw)
	}
	l := o.Locks[0]
	if l.Name != "jobs/a" || l.Owner != "w1" || l.Token != g1.Token || l.Waiters != 1 || l.TTLMs != 60000 ||
		l.TTLLeftMs <= 0 || l.TTLLeftMs > 60000 || len(l.LeaseFingerprint) != 8 || l.GrantedMs == nil || l.AgeMs == nil || *l.AgeMs < 0 {
		t.Fatalf("lock: %s", raw)
	}
	if o, _ := get("/v1/overview?limit=1"); len(o.Locks) != 1 || !o.Truncated || o.Next != "jobs/a" {
		t.Fatalf("page of one: %+v", o)
	}

	// A member that is down is reported, not waited for.
	down := -1
	for i := range c.Nodes {
		if c.URL(i) != f && i != c.LeaderIndex() {
			down = i
		}
	}
	c.StopHTTP(down)
	o, raw = get("/v1/overview")
	unreachable := 0
	for _, n := range o.Nodes {
		if !n.Reachable {
			unreachable++
			if n.Error == "" {
				t.Errorf("no reason for %s", n.ID)
			}
		}
	}
	if unreachable != 1 {
		t.Fatalf("with one member's API stopped: %s", raw)
	}

	// Releasing hands jobs/a to the waiter: one grant and one handover more on every node.
	before := scrapeCounters(t, f)
	if st, code := callAs(t, "", "DELETE", f+"/v1/locks/jobs/a", `{"lease_id":"`+g1.LeaseID+`","token":`+jsonNum(g1.Token)+`}`, nil); st != 200 {
		t.Fatalf("release: %d %s", st, code)
	}
	<-waiter
	testkit.WaitFor(t, 10*time.Second, "the handover to be counted", func() bool {
		after := scrapeCounters(t, f)
		return after["raftlock_grants_total"] == before["raftlock_grants_total"]+1 &&
			after["raftlock_handovers_total"] == before["raftlock_handovers_total"]+1
	})
	if before["raftlock_grants_total"] < 2 {
		t.Fatalf("counters before the release: %v", before)
	}
}

func jsonNum(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// scrapeCounters reads the apply counters of a node's /metrics.
func scrapeCounters(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, name := range []string{"raftlock_grants_total", "raftlock_handovers_total", "raftlock_renew_entries_total"} {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		var v float64
		_ = json.Unmarshal(m[1], &v)
		out[name] = v
	}
	return out
}

// With ACLs on, the overview needs a read token and leaves out the locks the token may
// not read.
func TestOverview_ACL(t *testing.T) {
	c := startACLCluster(t)
	f := c.URL(c.Follower())
	var mgmt api.ACLToken
	if st, code := callAs(t, "", "POST", f+"/v1/acl/bootstrap", "", &mgmt); st != 200 {
		t.Fatalf("bootstrap: %d %s", st, code)
	}
	m := mgmt.SecretID
	c.WaitForwarding()
	if st, code := callAs(t, m, "PUT", f+"/v1/acl/policies/jobs-read", `{"rules":[{"prefix":"jobs/","access":"read"}]}`, nil); st != 200 {
		t.Fatalf("policy: %d %s", st, code)
	}
	var ro api.ACLToken
	if st, code := callAs(t, m, "POST", f+"/v1/acl/tokens", `{"policies":["jobs-read"]}`, &ro); st != 200 {
		t.Fatalf("token: %d %s", st, code)
	}
	for _, name := range []string{"jobs/a", "other/b"} {
		if st, code := callAs(t, m, "PUT", f+"/v1/locks/"+name, `{"ttl_ms":60000}`, nil); st != 200 {
			t.Fatalf("acquire %s: %d %s", name, st, code)
		}
	}
	if st, code := callAs(t, "", "GET", f+"/v1/overview", "", nil); st != 401 || code != api.CodeUnauthenticated {
		t.Fatalf("overview without a token: %d %s", st, code)
	}
	// Without TLS or a node token, followers cannot register their HTTP addresses with
	// ACLs on; the leader registers its own, and a follower asks it with the caller's
	// token. The overview is read from whichever node follows at the time, until the read
	// token has reached it and it names another member to ask: an election under load can
	// make the first follower the leader, which has no other member to ask.
	var o api.Overview
	others := func(o api.Overview) (asked []api.NodeStatus) {
		for _, n := range o.Nodes {
			if n.HTTPAddr != "" && n.ID != o.NodeID {
				asked = append(asked, n)
			}
		}
		return asked
	}
	testkit.WaitFor(t, 30*time.Second, "a follower's overview with the read token, naming the leader to ask", func() bool {
		o = api.Overview{}
		st, _ := callAs(t, ro.SecretID, "GET", c.URL(c.Follower())+"/v1/overview", "", &o)
		return st == 200 && len(o.Locks) > 0 && len(others(o)) > 0
	})
	if len(o.Locks) != 1 || o.Locks[0].Name != "jobs/a" {
		t.Fatalf("a jobs/ read token sees %+v", o.Locks)
	}
	for _, n := range others(o) {
		if !n.Reachable {
			t.Errorf("node %s unreachable with the caller's token: %s", n.ID, n.Error)
		}
	}
}

// GET / and HEAD / send the operator who types the node's address to the dashboard, as
// curl sees it (no redirect followed, over a real connection); other methods on / are
// 405 and other paths keep their 404.
func TestUI_RootRedirectsToUI(t *testing.T) {
	srv := httptest.NewServer(oaServer(t).Handler())
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, method := range []string{"GET", "HEAD"} {
		req, _ := http.NewRequest(method, srv.URL+"/", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" || len(body) != 0 {
			t.Errorf("%s /: %d Location %q body %q, want 302 to /ui/ without a body", method, resp.StatusCode, resp.Header.Get("Location"), body)
		}
	}
	// The redirect leads to the page.
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("following GET /: %d at %s (%s)", resp.StatusCode, resp.Request.URL.Path, resp.Header.Get("Content-Type"))
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{{"POST", "/", 405}, {"DELETE", "/", 405}, {"GET", "/nope", 404}, {"GET", "/index.html", 404}} {
		rec := httptest.NewRecorder()
		oaServer(t).Handler().ServeHTTP(rec, transport.APIRequest(c.method, c.path, nil))
		if rec.Code != c.want || rec.Header().Get("Location") != "" {
			t.Errorf("%s %s: %d (Location %q), want %d", c.method, c.path, rec.Code, rec.Header().Get("Location"), c.want)
		}
	}
}
