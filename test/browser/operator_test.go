package browser

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// scene is the operator's incident, made through the API of one node: a lock
// with one waiter, a two-lock lockset with a maximum hold, a semaphore db/pool of limit 3
// with two permits taken, an election scheduler with a leader, and a deadlock refused
// between two owners.
type scene struct {
	holder, waiterLock api.Grant
	set                api.LockSetGrant
	permits            []api.SemaphoreGrant
	leader             api.ElectionGrant
	alice, bob         api.Grant
}

// waitInBackground sends a waiting request that stays queued until the test ends.
func waitInBackground(t *testing.T, method, url, body string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		rawhttp.Client{}.Send(ctx, method, url, body)
	}()
}

// call sends a request that must answer 200, decoding it into out.
func call(t *testing.T, method, url, body string, out any) {
	t.Helper()
	if err := (rawhttp.Client{}).Call(method, url, body, out); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
}

// waitQueued waits until the lock, semaphore or election at path has n waiters.
func waitQueued(t *testing.T, base, path string, n int) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "queued on "+path, func() bool {
		var v struct {
			Waiters    int `json:"waiters"`
			Candidates int `json:"candidates"`
		}
		return (rawhttp.Client{}).Get(base+path, &v) == nil && v.Waiters+v.Candidates == n
	})
}

func makeScene(t *testing.T, base string) scene {
	t.Helper()
	var sc scene
	call(t, "PUT", base+"/v1/locks/jobs/a", `{"owner":"holder-1","ttl_ms":120000}`, &sc.holder)
	waitInBackground(t, "PUT", base+"/v1/locks/jobs/a", `{"owner":"waiter-1","ttl_ms":120000,"wait_ms":120000}`)
	waitQueued(t, base, "/v1/locks/jobs/a", 1)
	call(t, "POST", base+"/v1/locksets", `{"names":["transfer/x","transfer/y"],"owner":"mover","ttl_ms":120000,"max_hold_ms":600000}`, &sc.set)
	for i := 1; i <= 2; i++ {
		var g api.SemaphoreGrant
		call(t, "PUT", base+"/v1/semaphores/db/pool", fmt.Sprintf(`{"limit":3,"owner":"pool-%d","ttl_ms":120000}`, i), &g)
		sc.permits = append(sc.permits, g)
	}
	call(t, "PUT", base+"/v1/elections/scheduler", `{"value":"10.0.0.7:8080","owner":"sched-1","ttl_ms":120000}`, &sc.leader)
	// alice holds dl/a and waits for dl/b; bob holds dl/b and asks for dl/a: refused.
	call(t, "PUT", base+"/v1/locks/dl/a", `{"owner":"alice","ttl_ms":120000}`, &sc.alice)
	call(t, "PUT", base+"/v1/locks/dl/b", `{"owner":"bob","ttl_ms":120000}`, &sc.bob)
	waitInBackground(t, "PUT", base+"/v1/locks/dl/b", fmt.Sprintf(`{"owner":"alice","lease_id":%q,"wait_ms":120000}`, sc.alice.LeaseID))
	waitQueued(t, base, "/v1/locks/dl/b", 1)
	a := rawhttp.Client{}.Do("PUT", base+"/v1/locks/dl/a", fmt.Sprintf(`{"owner":"bob","lease_id":%q,"wait_ms":120000}`, sc.bob.LeaseID))
	if err := a.Expect(http.StatusConflict); err != nil || !strings.Contains(string(a.Raw), api.CodeDeadlock) {
		t.Fatalf("bob asking for dl/a: %v %s", err, a.Raw)
	}
	return sc
}

// jsQuote quotes s as a JavaScript string.
func jsQuote(s string) string { return strconv.Quote(s) }

// pageCells returns the text of the cells of the row of table id whose data-name is name
// ([] when there is none).
func pageCells(s *session, id, name string) []string {
	return eval[[]string](s, `(() => { const r = [...document.querySelectorAll('#`+id+` tbody tr')].find(r => r.dataset.name === `+jsQuote(name)+`);
		return r ? [...r.cells].map(c => c.textContent) : []; })()`)
}

// TestDashboard_OperatorsView opens the dashboard of three `raftlock serve` processes on
// a follower, makes the operator's scene through the API, and checks each
// panel against the API's own answers: the semaphore with its two permits (owner, token,
// lease fingerprint), the election with its leader (owner, fingerprint, value, term), the
// lock's waiter by owner, the wait-for edges, and the refused cycle. It then counts what
// the open page costs the cluster, and sees the page say its data is stale while its node
// is down and stop saying it once the node is back.
func TestDashboard_OperatorsView(t *testing.T) {
	bin := needChromium(t)
	p := testcluster.StartProcesses(t, 3)
	leader := p.WaitLeader(20 * time.Second)
	follower := (leader + 1) % 3
	base := p.URL(follower)
	waitRegistered(t, base, 3)
	sc := makeScene(t, base)

	s := newSession(t, bin)
	s.step("opening the dashboard", 15*time.Second, chromedp.Navigate(base+"/ui/"))
	s.poll("the event stream to be live", `document.getElementById('stream-state').classList.contains('on')`, panelWait)

	// The semaphore: its limit, and each permit as the API gives it.
	var sem api.SemaphoreStatus
	call(t, "GET", base+"/v1/semaphores/db/pool?queue=10", "", &sem)
	if len(sem.Permits) != 2 || sem.Limit != 3 {
		t.Fatalf("the API's semaphore: %+v", sem)
	}
	s.poll("the semaphore with its two permits", `document.querySelectorAll('#sems tbody tr[data-name="db/pool"] .permit').length === 2`, panelWait)
	permits := eval[[]string](s, `[...document.querySelectorAll('#sems tbody tr[data-name="db/pool"] .permit')].map(p => p.dataset.owner + '/' + p.dataset.token + '/' + p.dataset.fingerprint)`)
	var want []string
	for _, pm := range sem.Permits {
		want = append(want, fmt.Sprintf("%s/%d/%s", pm.Owner, pm.Token, pm.LeaseFingerprint))
	}
	if !slices.Equal(permits, want) {
		t.Fatalf("the page's permits %q, the API's %q", permits, want)
	}
	if cells := pageCells(s, "sems", "db/pool"); len(cells) < 3 || cells[1] != "3" || cells[2] != "1" {
		t.Fatalf("the semaphore's row: %q", cells)
	}

	// The election: leader, its fingerprint, value and term of office.
	var el api.ElectionStatus
	call(t, "GET", base+"/v1/elections/scheduler", "", &el)
	s.poll("the election with its leader and value", `(() => { const r = document.querySelector('#elections tbody tr[data-name="scheduler"]'); return !!r && r.cells[3].textContent === `+jsQuote(el.Value)+`; })()`, panelWait)
	if cells := pageCells(s, "elections", "scheduler"); len(cells) < 5 || cells[1] != el.Owner || cells[2] != el.LeaseFingerprint || cells[3] != el.Value || cells[4] != strconv.FormatUint(el.Token, 10) || el.Token != sc.leader.Token {
		t.Fatalf("the election's row %q, the API's %+v", cells, el)
	}

	// The lock's waiter, by owner, as the API lists the queue.
	var lk api.LockStatus
	call(t, "GET", base+"/v1/locks/jobs/a?queue=10", "", &lk)
	if len(lk.Queue) != 1 || lk.Queue[0].Owner != "waiter-1" {
		t.Fatalf("the API's queue of jobs/a: %+v", lk.Queue)
	}
	s.poll("the lock's waiter by owner", `!!document.querySelector('#locks tbody tr[data-name="jobs/a"] .waiter[data-owner="waiter-1"][data-fingerprint="`+lk.Queue[0].LeaseFingerprint+`"]')`, panelWait)

	// Who waits for whom, and the refused cycle, as the overview answers them.
	var o api.Overview
	call(t, "GET", base+"/v1/overview?include=waits_for&queue=5", "", &o)
	var apiEdges []string
	for _, lw := range o.WaitsFor {
		for _, e := range lw.Edges {
			apiEdges = append(apiEdges, lw.Lock+":"+e.WaiterOwner+">"+e.BlockerOwner+":"+e.By)
		}
	}
	if !slices.Contains(apiEdges, "dl/b:alice>bob:holder") || !slices.Contains(apiEdges, "jobs/a:waiter-1>holder-1:holder") {
		t.Fatalf("the API's wait-for edges: %q", apiEdges)
	}
	edgesJS := `[...document.querySelectorAll('#waits tbody tr[data-by]')].map(r => r.dataset.lock + ':' + r.dataset.waiter + '>' + r.dataset.blocker + ':' + r.dataset.by)`
	s.poll("the wait-for edges", edgesJS+`.length === `+strconv.Itoa(len(apiEdges)), panelWait)
	if got := eval[[]string](s, edgesJS); !slices.Equal(got, apiEdges) {
		t.Fatalf("the page's wait-for edges %q, the API's %q", got, apiEdges)
	}
	if len(o.Refusals) != 1 || o.Refusals[0].Owner != "bob" || o.Refusals[0].Lock != "dl/a" {
		t.Fatalf("the API's refusals: %+v", o.Refusals)
	}
	r := o.Refusals[0]
	s.poll("the refused cycle", `!!document.querySelector('#refusals li[data-lock="dl/a"][data-owner="bob"]')`, panelWait)
	cycle := eval[string](s, `document.querySelector('#refusals li[data-lock="dl/a"] .cycle').textContent`)
	for _, st := range r.Cycle {
		if !strings.Contains(cycle, st.LeaseFingerprint+" \u2192 "+st.Lock) {
			t.Fatalf("the page's cycle %q lacks step %+v of the API's %+v", cycle, st, r.Cycle)
		}
	}
	// The lockset, as one group (protocol version 7): its locks, token, owner and lease as
	// the API's status reads give them.
	var tx api.LockStatus
	call(t, "GET", base+"/v1/locks/transfer/x", "", &tx)
	if len(tx.Holders) != 1 || !slices.Equal(tx.Holders[0].LockSet, []string{"transfer/x", "transfer/y"}) || tx.Token != sc.set.Locks[0].Token {
		t.Fatalf("the API's transfer/x: %+v", tx)
	}
	groupJS := `document.querySelector('#groups li[data-names="transfer/x,transfer/y"]')`
	s.poll("the lockset as one group", `!!`+groupJS, panelWait)
	if got := eval[string](s, groupJS+`.dataset.token + '/' + `+groupJS+`.dataset.owner + '/' + `+groupJS+`.dataset.fingerprint + '/' + `+groupJS+`.dataset.mode`); got != fmt.Sprintf("%d/%s/%s/exclusive", tx.Token, tx.Holders[0].Owner, tx.Holders[0].LeaseFingerprint) {
		t.Fatalf("the page's group %q, the API's %+v", got, tx.Holders[0])
	}
	if n := eval[int](s, `document.querySelectorAll('#locks tbody tr .set-badge').length`); n != 2 {
		t.Fatalf("%d lock rows say they are one lock of a lockset, want 2", n)
	}

	// A semaphore's history, opened by a click on its row, as the API gives it; and an
	// election's.
	for _, c := range []struct{ table, kind, name string }{{"sems", "semaphore", "db/pool"}, {"elections", "election", "scheduler"}} {
		var h api.History
		call(t, "GET", base+"/v1/history/"+c.name+"?kind="+c.kind, "", &h)
		if len(h.Events) == 0 {
			t.Fatalf("the API's history of %s %s is empty", c.kind, c.name)
		}
		var apiKinds []string
		for _, e := range h.Events {
			apiKinds = append(apiKinds, fmt.Sprintf("%s/%d", e.Kind, e.Index))
		}
		slices.Reverse(apiKinds) // the page lists the newest first
		s.step("clicking the "+c.kind, 10*time.Second, chromedp.Click(chromedp.CSS(`#`+c.table+` tbody tr[data-name="`+c.name+`"]`)))
		s.poll("the "+c.kind+"'s history", `document.getElementById('history-name').textContent === `+jsQuote(c.name)+` && document.getElementById('history-kind').textContent === `+jsQuote(c.kind)+
			` && document.querySelectorAll('#history li').length === `+strconv.Itoa(len(h.Events)), panelWait)
		if got := eval[[]string](s, `[...document.querySelectorAll('#history li')].map(li => li.dataset.kind + '/' + li.dataset.index)`); !slices.Equal(got, apiKinds) {
			t.Fatalf("the page's history of %s %s: %q, the API's %q", c.kind, c.name, got, apiKinds)
		}
		if c.kind == "semaphore" {
			s.shot("1b-semaphore-history.png")
			if n := eval[int](s, `document.querySelectorAll('#timeline rect.grant').length`); n != 2 {
				t.Fatalf("the semaphore's timeline has %d bars, want one a permit (2)", n)
			}
		}
	}

	// Use per identity: with ACLs off every lease is one identity's, beside the cluster's.
	waitUsageAgrees(t, s, func() []api.Usage {
		var all api.UsageList
		call(t, "GET", base+"/v1/usage?all", "", &all)
		return append(all.Identities, all.Cluster)
	})
	s.shot("1-operators-view.png")
	if body := eval[string](s, `document.body.innerText`); strings.Contains(body, sc.holder.LeaseID) || strings.Contains(body, sc.permits[0].LeaseID) || strings.Contains(body, sc.leader.LeaseID) {
		t.Fatal("the page shows a lease ID")
	}

	// What the open page costs the cluster, counted by the nodes themselves: the requests
	// of the routes the page uses (its event stream aside) that every node answered over
	// 30 s, while a lock under the page's view changes every 200 ms, so that each blocking
	// overview is answered as soon as it may be.
	before := pageRequests(t, p)
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			var g api.Grant
			if (rawhttp.Client{}).Call("PUT", p.URL(leader)+"/v1/locks/churn", `{"owner":"churn","ttl_ms":5000}`, &g) == nil {
				(rawhttp.Client{}).Do("DELETE", p.URL(leader)+"/v1/locks/churn", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, g.LeaseID, g.Token))
				n++
			}
		}
	}()
	const window = 30 * time.Second
	time.Sleep(window) // a measurement over a fixed span of time, not a wait for a condition
	close(stop)
	changes := <-churned
	after := pageRequests(t, p)
	cost := 0
	for route, n := range after {
		cost += n - before[route]
	}
	cost -= p.N() // the scrapes of before, counted once each by the node they asked
	perMinute := float64(cost) * float64(time.Minute) / float64(window)
	t.Logf("the open page cost the cluster %d requests in %v beside its event stream (%.0f a minute), while a lock under its view changed %d times; by route: %v",
		cost, window, perMinute, changes, routeDeltas(before, after))
	if perMinute > 60 || changes < 20 {
		t.Fatalf("the open page cost the cluster %.0f requests a minute (at most 60), over %d changes", perMinute, changes)
	}

	// The README's picture (make screenshot): the scene, the charts filled by the churn,
	// and the semaphore's history open.
	if os.Getenv("RAFTLOCK_README_SHOT") != "" {
		s.step("clicking the semaphore", 10*time.Second, chromedp.Click(chromedp.CSS(`#sems tbody tr[data-name="db/pool"]`)))
		s.poll("the semaphore's history", `document.getElementById('history-kind').textContent === 'semaphore' && parseFloat(document.querySelector('#chart-grants .value').textContent) >= 0`, panelWait)
		if err := writeReadmeShot(s); err != nil {
			t.Fatal(err)
		}
	}

	// The page's node goes down: the page says its data is stale, and stops saying it once
	// the node is back and the stream live again.
	p.Kill(follower)
	s.poll("the page to say its data is stale", `!document.getElementById('stale').classList.contains('hidden') && /stale/i.test(document.getElementById('stale').textContent)`, panelWait)
	s.shot("2-stale.png")
	if err := p.TryStart(follower); err != nil {
		t.Fatal(err)
	}
	s.poll("the stream live again and the banner gone", `document.getElementById('stream-state').classList.contains('on') && document.getElementById('stale').classList.contains('hidden')`, panelWait)
	s.noErrors("net::ERR_CONNECTION_REFUSED", "Failed to load resource")
}

// pageRoutes are the routes the dashboard asks for, its event stream aside, and the one
// the overview asks the other members for.
var pageRoutes = []string{"GET /v1/overview", "GET /metrics", "GET /v1/cluster", "GET /v1/history/{name...}", "GET /v1/usage", "GET /healthz", "GET /ui/"}

// pageRequests sums, by route, the requests of pageRoutes that every node has answered.
func pageRequests(t *testing.T, p *testcluster.Processes) map[string]int {
	t.Helper()
	out := map[string]int{}
	for i := 0; i < p.N(); i++ {
		a := rawhttp.Client{}.Do("GET", p.URL(i)+"/metrics", "")
		if a.Err != nil || a.Status != 200 {
			t.Fatalf("scraping %s: %v %d", p.ID(i), a.Err, a.Status)
		}
		for _, line := range strings.Split(string(a.Raw), "\n") {
			if !strings.HasPrefix(line, "raftlock_http_requests_total{") {
				continue
			}
			for _, route := range pageRoutes {
				if strings.Contains(line, `route="`+route+`"`) {
					f := strings.Fields(line)
					n, _ := strconv.ParseFloat(f[len(f)-1], 64)
					out[route] += int(n)
				}
			}
		}
	}
	return out
}

func routeDeltas(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for r, n := range after {
		if d := n - before[r]; d != 0 {
			out[r] = d
		}
	}
	return out
}

// waitUsageAgrees waits until the page's use per identity shows what the API answers
// (read again at each try: the page reads it every 15 s, and the limits the leader sets a
// moment after start may come between), row for row.
func waitUsageAgrees(t *testing.T, s *session, fromAPI func() []api.Usage) {
	t.Helper()
	var mismatch string
	if !testkit.Poll(panelWait, 200*time.Millisecond, func() bool {
		want := fromAPI()
		mismatch = ""
		if n := eval[int](s, `document.querySelectorAll('#usage tbody tr[data-identity]').length`); n != len(want) {
			mismatch = fmt.Sprintf("%d rows for %d uses", n, len(want))
		}
		for _, u := range want {
			if got := usageShown(s, u.Identity); mismatch == "" && got != useText(u) {
				mismatch = fmt.Sprintf("the page shows %q's use as %q, the API %q", u.Identity, got, useText(u))
			}
		}
		return mismatch == ""
	}) {
		s.shot("failed.png")
		t.Fatalf("the use per identity after %v: %s", panelWait, mismatch)
	}
}

// writeReadmeShot writes the README's screenshot where RAFTLOCK_README_SHOT says (make
// screenshot sets it): never otherwise, so that no test run writes into the tree.
func writeReadmeShot(s *session) error {
	out := os.Getenv("RAFTLOCK_README_SHOT")
	if out == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	s.t.Logf("the README's screenshot: %s", out)
	return os.WriteFile(out, png, 0o644)
}
