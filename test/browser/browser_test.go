package browser

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// chromium returns the browser binary to drive, or "" when there is none. RAFTLOCK_CHROMIUM,
// when set, is the only candidate.
func chromium() string {
	if p := os.Getenv("RAFTLOCK_CHROMIUM"); p != "" {
		if p, err := exec.LookPath(p); err == nil {
			return p
		}
		return ""
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// consoleLog collects what the page reports as an error: console.error and
// console.assert calls, uncaught exceptions and unhandled rejections, and the browser's
// own error entries (a refused resource, a CSP violation, a failed request).
type consoleLog struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleLog) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, d.Text)
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("browser log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
	default:
		return
	}
	c.mu.Lock()
	c.errs = append(c.errs, msg)
	c.mu.Unlock()
}

func (c *consoleLog) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

// session is one headless Chromium with one tab, and the checks every test uses on it.
type session struct {
	t       *testing.T
	ctx     context.Context
	console consoleLog
	shots   string
	// requests are the URLs the page asked for, and the Authorization header of each
	// request that carried one (by URL), from the Network domain.
	mu       sync.Mutex
	requests []string
	auth     map[string]string
}

// needChromium returns the browser to drive, skipping the test loudly without one, or
// failing it when CI is set.
func needChromium(t *testing.T) string {
	t.Helper()
	bin := chromium()
	if bin == "" {
		const how = "no Chromium found (chromium, chromium-browser or google-chrome on PATH, or RAFTLOCK_CHROMIUM); install it with `apt-get install -y chromium` or scripts/ci-chromium.sh"
		testkit.Unavailable(t, "the dashboard's browser test: %s", how)
	}
	return bin
}

// newSession starts Chromium (headless, a fresh profile) for the rest of the test.
func newSession(t *testing.T, bin string) *session {
	t.Helper()
	shots := os.Getenv("RAFTLOCK_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else {
		shots = filepath.Join(shots, t.Name())
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots go to %s", shots)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox, // root in a container
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1100),
		// The network is closed here: without these, Chromium keeps trying to reach
		// Google's services and floods the log with refused connections.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider"),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	s := &session{t: t, shots: shots, auth: map[string]string{}}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(s.console.listen), chromedp.WithListener(s.network))
	t.Cleanup(cancel)
	s.ctx = ctx
	// The first Run starts the browser and must not carry a timeout (it would stop the
	// browser); each later step gets its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	return s
}

// network records the page's requests.
func (s *session) network(ev any) {
	if ev, ok := ev.(*network.EventRequestWillBeSent); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests = append(s.requests, ev.Request.URL)
		for k, v := range ev.Request.Headers {
			if strings.EqualFold(k, "Authorization") {
				s.auth[ev.Request.URL] = fmt.Sprint(v)
			}
		}
	}
}

// step runs browser actions within d.
func (s *session) step(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v\nconsole errors: %q", what, err, s.console.errors())
	}
}

// poll waits at most d for a JavaScript expression to be true in the page.
func (s *session) poll(what, expr string, d time.Duration) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		s.shot("failed.png")
		s.t.Fatalf("waiting %v for %s: %v\nconsole errors: %q", d, what, err, s.console.errors())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](s *session, expr string) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		s.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// shot saves a full-page screenshot.
func (s *session) shot(name string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(s.shots, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("screenshot: %s", path)
}

// noErrors fails the test on any error the page reported, except those allowed.
func (s *session) noErrors(allowed ...string) {
	s.t.Helper()
	var errs []string
next:
	for _, e := range s.console.errors() {
		for _, a := range allowed {
			if strings.Contains(e, a) {
				continue next
			}
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		s.t.Fatalf("the page reported %d error(s):\n%s", len(errs), strings.Join(errs, "\n"))
	}
}

// rowJS finds the lock table's row of name.
func rowJS(name string) string {
	return `[...document.querySelectorAll('#locks tbody tr')].find(r => r.dataset.name === ` + strconv.Quote(name) + `)`
}

// TestDashboard_LiveInARealBrowser opens the dashboard of a three-node cluster in headless
// Chromium, takes a lock through the API and waits (no reload) for the row the event
// stream brings, logging its latency, kills the leader with SIGKILL and waits for the new leader on
// the page, opens the lock's history timeline, and releases the lock to see the history
// and the table follow live. Any console error or uncaught exception fails it.
func TestDashboard_LiveInARealBrowser(t *testing.T) {
	bin := needChromium(t)
	p := testcluster.StartProcesses(t, 3)
	leader := p.WaitLeader(20 * time.Second)
	follower := (leader + 1) % 3
	// The page is opened on a follower, so that it outlives the leader's death: a page
	// talks only to the node that served it.
	base := p.URL(follower)
	waitRegistered(t, base, 3)
	s := newSession(t, bin)
	step, poll, shot := s.step, s.poll, s.shot

	// 1. The page loads, shows three nodes and one leader, and its stream is live. On a
	// loaded machine a member may miss an overview's member timeout (shown down until the
	// next refresh) and the leader may change after it was looked up: the page must come
	// to show every node reachable and the leader the cluster names at that moment.
	step("opening the dashboard", 15*time.Second, chromedp.Navigate(base+"/ui/"))
	var shown, named string
	if !testkit.Poll(panelWait, 200*time.Millisecond, func() bool {
		shown = eval[string](s, `(document.querySelectorAll('#nodes tbody tr').length === 3 &&
			![...document.querySelectorAll('#nodes tbody tr td:last-child')].some(td => td.classList.contains('down'))) ?
			document.getElementById('leader').textContent : ''`)
		named = ""
		if l := p.LeaderIndex(); l >= 0 {
			named = p.ID(l)
		}
		return shown != "" && shown == named
	}) {
		shot("failed.png")
		t.Fatalf("waiting %v for the cluster panel with 3 reachable nodes and the leader: the page shows leader %q with every node reachable, the cluster names %q\nconsole errors: %q",
			panelWait, shown, named, s.console.errors())
	}
	leaderID := named
	poll("the event stream to be live", `document.getElementById('stream-state').classList.contains('on')`, panelWait)
	shot("1-cluster.png")

	// 2. A lock taken through the API appears in the table from the event stream, without reload.
	const name = "jobs/nightly-report"
	rowJS := rowJS(name)
	sent := time.Now()
	// Through the page's node (forwarded to the leader), so that its acquire latency
	// histogram, which the p99 chart reads, has the request.
	g := acquire(t, base, name, "worker-7")
	committed := time.Now() // the answer comes after the grant is committed and applied
	// The row must come from the event stream (it then carries the arrival time): an
	// overview refresh bringing it first does not count. The latency is logged, not raced:
	// on a loaded machine the bound is the panel's.
	poll("the new lock's row from the event stream", `(() => { const r = `+rowJS+`; return !!r && r.dataset.token === `+strconv.Quote(strconv.FormatUint(g.Token, 10))+` && !!r.dataset.seenMs; })()`, panelWait)
	seen := time.Since(committed)
	seenMs := eval[string](s, rowJS+`.dataset.seenMs || ''`)
	if seenMs == "" {
		t.Fatalf("the row carries no stream arrival time: it did not come from the event stream")
	}
	arrived, _ := strconv.ParseInt(seenMs, 10, 64)
	t.Logf("event-stream latency, commit -> browser: %d ms from the acquire's answer to the event's arrival in the page (%d ms from sending the acquire); the row was seen by the test after %v",
		arrived-committed.UnixMilli(), arrived-sent.UnixMilli(), seen.Round(time.Millisecond))
	cells := eval[[]string](s, `[...`+rowJS+`.cells].map(c => c.textContent)`)
	if len(cells) < 8 || cells[1] != "worker-7" || cells[2] != strconv.FormatUint(g.Token, 10) {
		t.Fatalf("row cells %q", cells)
	}
	// The holder's TTL arrives with the next overview (asked for after the event).
	poll("the row's TTL left", `(() => { const r = `+rowJS+`; return !!r && /s$/.test(r.cells[4].textContent); })()`, panelWait)
	if strings.Contains(eval[string](s, `document.body.innerText`), g.LeaseID) {
		t.Fatal("the page shows the lease ID")
	}
	// The charts come from /metrics: the grant, the acquire's latency, and a keepalive's
	// Renew entry show after a scrape or two (each REFRESH_MS apart).
	keepalive(t, base, g.LeaseID)
	chart := func(id string) string {
		return `(() => { const v = parseFloat(document.querySelector('#` + id + ` .value').textContent); return v > 0; })()`
	}
	poll("acquires/s above 0", chart("chart-grants"), panelWait)
	poll("a p99 acquire latency", chart("chart-p99"), panelWait)
	poll("keepalive entries/s above 0", chart("chart-renews"), panelWait)
	shot("2-lock-acquired.png")

	// 3. The leader dies (SIGKILL); the page shows the new leader and the dead node. The
	// leader is looked up again, since an election may have moved it; if it moved to the
	// page's own node, it is handed to another first, for the page must outlive the kill.
	leader = p.WaitLeader(panelWait)
	if leader == follower {
		moveLeader(t, p, follower)
		leader = p.WaitLeader(panelWait)
	}
	leaderID = p.ID(leader)
	killed := time.Now()
	p.Kill(leader)
	poll("the new leader", `(() => { const l = document.getElementById('leader').textContent; return /^n[0-9]$/.test(l) && l !== `+strconv.Quote(leaderID)+`; })()`, panelWait)
	newLeader := eval[string](s, `document.getElementById('leader').textContent`)
	poll("the old leader shown unreachable", `[...document.querySelectorAll('#nodes tbody tr')].some(r => r.dataset.node === `+strconv.Quote(leaderID)+` && r.cells[8].classList.contains('down'))`, panelWait)
	t.Logf("leader %s killed; the page showed %s as the new leader after %v", leaderID, newLeader, time.Since(killed).Round(time.Millisecond))
	shot("3-new-leader.png")

	// 4. Clicking the lock opens its history: the grant, as a timeline and a list.
	// The table is redrawn as the failover's updates arrive, so a click can land on a row
	// that is replaced at that moment; like a user, the poll clicks the row again while
	// the history shows another lock (or none).
	step("clicking the lock's row", 10*time.Second, chromedp.Click(chromedp.CSS(`#locks tbody tr[data-name="`+name+`"]`)))
	poll("the history timeline with the grant", `(() => {
		if (document.getElementById('history-name').textContent !== `+strconv.Quote(name)+`) {
			const row = document.querySelector('#locks tbody tr[data-name="`+name+`"]');
			if (row) row.click();
			return false;
		}
		return document.querySelectorAll('#history li[data-kind="granted"]').length === 1 && document.querySelectorAll('#timeline rect.grant').length === 1;
	})()`, panelWait)
	shot("4-history.png")

	// 5. Releasing it through the new leader: the history and the table follow live.
	release(t, p.URL(follower), name, g)
	poll("the release in the history and the row gone", `document.querySelectorAll('#history li[data-kind="released"]').length === 1 && !(`+rowJS+`)`, panelWait)
	shot("5-released.png")

	s.noErrors()
}

// panelWait bounds each wait for the cluster panel to show a state: ten of the page's
// refreshes, each every 2 s (REFRESH_MS in app.js) plus up to the overview's 1 s member
// timeout, so that a loaded machine may miss several refreshes.
const panelWait = 10 * (2*time.Second + time.Second)

// moveLeader hands leadership from node from (the leader) to another voter, retrying
// while the cluster is busy, and waits until from no longer leads.
func moveLeader(t *testing.T, p *testcluster.Processes, from int) {
	t.Helper()
	to := p.ID((from + 1) % p.N())
	if !testkit.Poll(panelWait, 200*time.Millisecond, func() bool {
		if l := p.LeaderIndex(); l >= 0 && l != from {
			return true
		}
		rawhttp.Client{}.Do(http.MethodPost, p.URL(from)+"/v1/cluster/transfer-leader", fmt.Sprintf(`{"to":%q}`, to))
		return false
	}) {
		t.Fatalf("leadership did not move from %s to %s within %v", p.ID(from), to, panelWait)
	}
}

// waitRegistered waits until base's overview lists n members with HTTP addresses, so that
// the page can show every node's indexes.
func waitRegistered(t *testing.T, base string, n int) {
	t.Helper()
	if !testkit.Poll(20*time.Second, 50*time.Millisecond, func() bool {
		var o api.Overview
		if err := (rawhttp.Client{}).Get(base+"/v1/overview", &o); err != nil {
			return false
		}
		ok := len(o.Nodes) == n
		for _, m := range o.Nodes {
			ok = ok && m.HTTPAddr != "" && m.Reachable
		}
		return ok
	}) {
		t.Fatalf("the members did not all register their HTTP addresses within 20 s")
	}
}

// acquire takes lock name with a new lease through plain HTTP.
func acquire(t *testing.T, base, name, owner string) api.Grant {
	t.Helper()
	var g api.Grant
	if err := (rawhttp.Client{}).Call(http.MethodPut, base+"/v1/locks/"+name, fmt.Sprintf(`{"owner":%q,"ttl_ms":60000}`, owner), &g); err != nil {
		t.Fatalf("acquiring %s: %v", name, err)
	}
	return g
}

// keepalive renews a lease (its ID in the body, never in a URL).
func keepalive(t *testing.T, base, lease string) {
	t.Helper()
	if err := (rawhttp.Client{}).Call(http.MethodPost, base+"/v1/leases/keepalive", fmt.Sprintf(`{"lease_id":%q}`, lease), nil); err != nil {
		t.Fatalf("keepalive: %v", err)
	}
}

// release releases a grant, retrying while the cluster elects a leader.
func release(t *testing.T, base, name string, g api.Grant) {
	t.Helper()
	body := fmt.Sprintf(`{"lease_id":%q,"token":%d}`, g.LeaseID, g.Token)
	var a rawhttp.Answer
	testkit.Poll(20*time.Second, 100*time.Millisecond, func() bool {
		a = rawhttp.Client{}.Do(http.MethodDelete, base+"/v1/locks/"+name, body)
		return a.Err == nil && a.Status != http.StatusServiceUnavailable
	})
	if err := a.Expect(http.StatusOK); err != nil { // never the body: it may echo the lease
		t.Fatalf("releasing %s: %v", name, err)
	}
}
