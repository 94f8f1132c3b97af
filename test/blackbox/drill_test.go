package blackbox_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// drill is a steady lock load of plain HTTP clients that a rolling restart or upgrade
// must not disturb beyond retryable errors.
type drill struct {
	t    *testing.T
	p    *testcluster.Processes
	n    int
	stop chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	okTimes  []time.Time        // every successful operation
	retried  int                // retryable answers (503, 429, refused connections)
	failures []string           // anything else
	grants   map[string][]grant // per lock, in the order answered
	leases   []string
}

type grant struct {
	token float64
	lease string
	at    time.Time
}

func (d *drill) fail(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failures = append(d.failures, fmt.Sprintf(format, args...))
}

// call sends one request to a random node, retrying on another node while the answer is
// retryable; it returns the final answer (never a retryable one unless stopping).
func (d *drill) call(method, path, body string) rawhttp.Answer {
	for {
		a := do(method, d.p.URL(rand.IntN(d.n))+path, body)
		retryable := a.Err != nil || a.Status == 503 || a.Status == 429
		if !retryable {
			if a.Status < 300 {
				d.mu.Lock()
				d.okTimes = append(d.okTimes, time.Now())
				d.mu.Unlock()
			}
			return a
		}
		d.mu.Lock()
		d.retried++
		d.mu.Unlock()
		select {
		case <-d.stop:
			return a
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *drill) stopping() bool {
	select {
	case <-d.stop:
		return true
	default:
		return false
	}
}

// newLease creates a 3 s lease and keeps it alive every 500 ms until the drill stops;
// losing it (404) is a failure.
func (d *drill) newLease() string {
	a := d.call("POST", "/v1/leases", `{"ttl_ms":3000}`)
	if a.Status != 201 {
		d.t.Fatalf("create lease: %v", a)
	}
	id := a.Body["lease_id"].(string)
	d.mu.Lock()
	d.leases = append(d.leases, id)
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for !d.stopping() {
			time.Sleep(500 * time.Millisecond)
			if a := d.call("POST", "/v1/leases/keepalive", `{"lease_id":"`+id+`"}`); a.Status != 200 && !d.stopping() {
				d.fail("keepalive of a kept-alive lease: %v", a)
				return
			}
		}
	}()
	return id
}

func (d *drill) recordGrant(lock string, a rawhttp.Answer, lease string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.grants[lock] = append(d.grants[lock], grant{token: a.Body["token"].(float64), lease: lease, at: time.Now()})
}

// holder takes and releases its own lock in a loop.
func (d *drill) holder(k int) {
	defer d.wg.Done()
	lease := d.newLease()
	lock := fmt.Sprintf("drill/own-%d", k)
	for !d.stopping() {
		a := d.call("PUT", "/v1/locks/"+lock, `{"lease_id":"`+lease+`"}`)
		if d.stopping() {
			return
		}
		if a.Status != 200 {
			d.fail("holder %d acquire: %v", k, a)
			return
		}
		d.recordGrant(lock, a, lease)
		r := d.call("DELETE", "/v1/locks/"+lock, fmt.Sprintf(`{"lease_id":%q,"token":%v}`, lease, a.Body["token"]))
		if r.Status != 200 && !(r.Status == 409 && r.Code() == "not_holder") && !d.stopping() {
			d.fail("holder %d release: %v", k, r) // not_holder: an earlier ambiguous attempt released it
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// contender queues for a shared lock, holds it briefly and releases it.
func (d *drill) contender(k int) {
	defer d.wg.Done()
	lease := d.newLease()
	for !d.stopping() {
		a := d.call("PUT", "/v1/locks/drill/shared", `{"lease_id":"`+lease+`","wait_ms":2000}`)
		if d.stopping() {
			return
		}
		if a.Status == 409 {
			continue // wait_timeout: the other contender held it
		}
		if a.Status != 200 {
			d.fail("contender %d acquire: %v", k, a)
			return
		}
		d.recordGrant("drill/shared", a, lease)
		time.Sleep(30 * time.Millisecond)
		r := d.call("DELETE", "/v1/locks/drill/shared", fmt.Sprintf(`{"lease_id":%q,"token":%v}`, lease, a.Body["token"]))
		if r.Status != 200 && !(r.Status == 409 && r.Code() == "not_holder") && !d.stopping() {
			d.fail("contender %d release: %v", k, r)
			return
		}
	}
}

// longestGap returns the longest time without a successful operation in [from, to], and
// when it began.
func (d *drill) longestGap(from, to time.Time) (time.Duration, time.Time) {
	d.mu.Lock()
	times := append([]time.Time(nil), d.okTimes...)
	d.mu.Unlock()
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	prev, gap, at0 := from, time.Duration(0), from
	longer := func(at time.Time) {
		if g := at.Sub(prev); g > gap {
			gap, at0 = g, prev
		}
	}
	for _, at := range times {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			longer(at)
			return gap, at0
		}
		longer(at)
		prev = at
	}
	longer(to)
	return gap, at0
}

// check verifies tokens strictly increase per lock across the drill (a repeated answer
// to the same lease, from a retried request, may repeat its token).
func (d *drill) check() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for lock, gs := range d.grants {
		for i := 1; i < len(gs); i++ {
			if gs[i].token < gs[i-1].token || (gs[i].token == gs[i-1].token && gs[i].lease != gs[i-1].lease) {
				d.t.Errorf("%s: grant %d has token %v after %v", lock, i, gs[i].token, gs[i-1].token)
			}
		}
	}
	for _, f := range d.failures {
		d.t.Error(f)
	}
}

// rolling restarts every node in turn (followers first, the leader last), with upgrade
// set when each node comes back on another binary, under the drill's load.
func rolling(t *testing.T, upgrade string) {
	const n = 3
	p := testcluster.StartProcessesNoWait(t, n)
	waitAllReady(t, p, n)
	d := &drill{t: t, p: p, n: n, stop: make(chan struct{}), grants: map[string][]grant{}}
	for k := 0; k < 3; k++ {
		d.wg.Add(1)
		go d.holder(k)
	}
	for k := 0; k < 2; k++ {
		d.wg.Add(1)
		go d.contender(k)
	}
	time.Sleep(time.Second)

	leader := p.WaitLeader(20 * time.Second)
	order := []int{}
	for i := 0; i < n; i++ {
		if i != leader {
			order = append(order, i)
		}
	}
	order = append(order, leader)
	// The leader hands leadership over as it shuts down (node.StepDown, then Shutdown), so
	// its restart costs the client load only the hand-over: the target campaigns at once on
	// TimeoutNow while the old leader drains, instead of everyone waiting an election
	// timeout after it stopped. The test asserts the event, not a duration: the stopped
	// leader's log must say it handed leadership over before it exited. (A bound on the
	// longest gap without a successful operation, 500 ms, failed on a machine at load 11
	// with the hand-over working; measured on a busy 2-core machine under -race: 16-117 ms
	// with the hand-over, 0.97-3.6 s without.) The gaps are logged.
	for _, i := range order {
		start := time.Now()
		p.Terminate(i) // a leader hands leadership over as it shuts down
		stopped := time.Now()
		lastRun := p.Log(i)
		if k := strings.LastIndex(lastRun, "node started"); k >= 0 {
			lastRun = lastRun[k:]
		}
		if upgrade != "" {
			p.SetBinary(i, upgrade)
		}
		p.Start(i)
		started := time.Now()
		testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("n%d ready after its restart", i+1), func() bool {
			return do("GET", p.URL(i)+"/readyz", "").Status == 200
		})
		ready := time.Now()
		time.Sleep(time.Second) // steady load before the next node
		gap, at := d.longestGap(start, time.Now())
		stopGap, stopAt := d.longestGap(start, stopped)
		ms := func(t time.Time) time.Duration { return t.Sub(start).Round(time.Millisecond) }
		t.Logf("restart of n%d (%s): stopped at +%v, started at +%v, ready at +%v; longest time without a successful client operation %v from +%v (until the exit %v from +%v)",
			i+1, map[bool]string{true: "leader", false: "follower"}[i == leader], ms(stopped), ms(started), ms(ready),
			gap.Round(time.Millisecond), ms(at), stopGap.Round(time.Millisecond), ms(stopAt))
		if i != leader {
			continue
		}
		if !strings.Contains(lastRun, "handed leadership over before stopping") {
			t.Errorf("the leader n%d exited (+%v) without handing leadership over (no \"handed leadership over before stopping\" in its log)", i+1, ms(stopped))
		}
	}
	close(d.stop)
	d.wg.Wait()
	d.check()
	total := 0
	for _, gs := range d.grants {
		total += len(gs)
	}
	t.Logf("%d grants over %d locks, %d retried requests (503, 429 or refused connections), %d failures", total, len(d.grants), d.retried, len(d.failures))
	if total < 20 {
		t.Errorf("only %d grants: the load did not run", total)
	}
	if upgrade != "" {
		for i := 0; i < n; i++ {
			logs := p.Log(i)
			if last := strings.LastIndex(logs, "node started"); last < 0 || !strings.Contains(logs[last:], "version=drill-next") {
				t.Errorf("n%d's last start was not the upgraded binary", i+1)
			}
		}
	}
}

// Each node in turn is stopped with SIGTERM and started again, under load.
func TestBlackbox_RollingRestart(t *testing.T) { rolling(t, "") }

// Each node in turn is stopped and started again on a newer build of the same code.
func TestBlackbox_RollingUpgrade(t *testing.T) {
	next := testcluster.BuildBinary(t, "-ldflags=-X main.version=drill-next")
	if _, err := os.Stat(next); err != nil {
		t.Fatal(err)
	}
	_ = filepath.Base(next)
	rolling(t, next)
}
