package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// With ACLs on, the dashboard asks for a token, and with a read token shows the locks that
// token may read, live. The token travels only in the Authorization header (the event
// stream included, which EventSource could not do): never in a URL, never on the page.
func TestDashboard_ACLReadToken(t *testing.T) {
	bin := needChromium(t)
	p := testcluster.StartProcessesNoWait(t, 3, "--acl")
	base := p.URL(0)

	// Bootstrap through node 0 (forwarded to the leader once there is one and the cluster
	// speaks protocol version 2), then a read-only token for jobs/.
	var mgmt api.ACLToken
	var err error
	if !testkit.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		err = rawhttp.Client{}.Call("POST", base+"/v1/acl/bootstrap", "", &mgmt)
		return err == nil
	}) {
		t.Fatalf("ACL bootstrap: %v", err)
	}
	m := mgmt.SecretID
	admin := rawhttp.Client{Token: m}
	if err := admin.Call("PUT", base+"/v1/acl/policies/jobs-read", `{"rules":[{"prefix":"jobs/","access":"read"}]}`, nil); err != nil {
		t.Fatal(err)
	}
	var ro api.ACLToken
	if err := admin.Call("POST", base+"/v1/acl/tokens", `{"policies":["jobs-read"]}`, &ro); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"jobs/visible", "secret/hidden"} {
		if err := admin.Call("PUT", base+"/v1/locks/"+name, `{"owner":"worker-1","ttl_ms":60000}`, nil); err != nil {
			t.Fatal(err)
		}
	}

	s := newSession(t, bin)
	s.step("opening the dashboard", 15*time.Second, chromedp.Navigate(base+"/ui/"))
	s.poll("the token box", `!document.getElementById('token-box').classList.contains('hidden') &&
		document.getElementById('stream-state').textContent === 'needs a token'`, 10*time.Second)
	s.shot("1-token-asked.png")

	s.step("entering the read token", 10*time.Second,
		chromedp.SendKeys(chromedp.CSS("#token-input"), ro.SecretID),
		chromedp.Click(chromedp.CSS("#token-save")))
	// The overview shows what the token may read; a stream of every name needs read on
	// every name, so the page asks for a prefix to follow live.
	s.poll("the readable lock, and a request for a prefix", `!!(`+rowJS("jobs/visible")+`) && document.getElementById('stream-state').textContent === 'pick a prefix'`, 10*time.Second)
	s.step("typing the prefix", 10*time.Second, chromedp.SendKeys(chromedp.CSS("#prefix"), "jobs/"))
	s.poll("the stream live on jobs/", `document.getElementById('stream-state').classList.contains('on') && !!(`+rowJS("jobs/visible")+`) && location.hash === '#prefix=jobs%2F'`, 10*time.Second)
	if eval[bool](s, `!!(`+rowJS("secret/hidden")+`)`) {
		t.Fatal("the page shows a lock the token may not read")
	}
	// A lock taken now arrives over the (authenticated) stream.
	var g api.Grant
	if err := admin.Call("PUT", base+"/v1/locks/jobs/after-login", `{"owner":"worker-2","ttl_ms":60000}`, &g); err != nil {
		t.Fatal(err)
	}
	s.poll("the new lock from the stream", `(() => { const r = `+rowJS("jobs/after-login")+`; return !!r && !!r.dataset.seenMs; })()`, 2*time.Second)
	// The charts read /metrics with the read token: the acquire latency histogram is open
	// to every caller, so the acquire just sent through this node gives a p99 within a
	// scrape or two; the usage counts (grants, handovers, keepalive entries) are withheld
	// from a token without admin on the empty prefix, and their charts show a dash, not 0.
	dash := func(id string) string { return `document.querySelector('#` + id + ` .value').textContent === '–'` }
	s.poll("a p99 acquire latency, and a dash for the withheld counts",
		`parseFloat(document.querySelector('#chart-p99 .value').textContent) > 0 && `+dash("chart-grants")+` && `+dash("chart-handovers")+` && `+dash("chart-renews"), panelWait)
	s.shot("2-with-read-token.png")

	// Use per identity: the read token sees its own use only, as GET /v1/usage answers it.
	waitUsageAgrees(t, s, func() []api.Usage {
		var own api.Usage
		if err := (rawhttp.Client{Token: ro.SecretID}).Get(base+"/v1/usage", &own); err != nil {
			t.Fatal(err)
		}
		return []api.Usage{own}
	})

	// An admin token sees every identity's use against its quotas, and the cluster's.
	s.step("entering the management token", 10*time.Second,
		chromedp.Click(chromedp.CSS("#token-button")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), m),
		chromedp.Click(chromedp.CSS("#token-save")))
	waitUsageAgrees(t, s, func() []api.Usage {
		var all api.UsageList
		if err := admin.Get(base+"/v1/usage?all", &all); err != nil {
			t.Fatal(err)
		}
		if len(all.Identities) == 0 {
			t.Fatalf("GET /v1/usage?all: %+v", all)
		}
		return append(all.Identities, all.Cluster)
	})
	s.shot("3-usage-admin.png")
	if strings.Contains(eval[string](s, `document.documentElement.outerHTML + document.getElementById('token-input').value`), ro.SecretID) {
		t.Fatal("the token is on the page")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	streamed := false
	for _, u := range s.requests {
		if strings.Contains(u, ro.SecretID) || strings.Contains(u, m) {
			t.Fatalf("a request URL carries the token: %s", strings.ReplaceAll(u, ro.SecretID, "<token>"))
		}
		if strings.Contains(u, "/v1/events") && s.auth[u] == "Bearer "+ro.SecretID {
			streamed = true
		}
	}
	if !streamed {
		t.Fatal("no event stream request carried the token in its Authorization header")
	}
	// Before the token was given the API answered 401, and the stream of every name 403:
	// Chromium logs each such answer.
	s.noErrors("status of 401", "status of 403")
}

// useText writes an identity's use as the page's usage row carries it.
func useText(u api.Usage) string {
	return fmt.Sprintf("leases %d/%d locks %d/%d waiters %d/%d", u.Leases.Used, u.Leases.Limit, u.Locks.Used, u.Locks.Limit, u.Waiters.Used, u.Waiters.Limit)
}

// usageShown reads the usage row of identity as useText writes it ("" without one).
func usageShown(s *session, identity string) string {
	return eval[string](s, `(() => { const r = [...document.querySelectorAll('#usage tbody tr')].find(r => r.dataset.identity === `+jsQuote(identity)+`);
		return r ? [...r.querySelectorAll('td.use')].map(c => c.dataset.key + ' ' + c.dataset.used + '/' + c.dataset.limit).join(' ') : ''; })()`)
}
