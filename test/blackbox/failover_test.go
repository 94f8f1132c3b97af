package blackbox_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// holdBound is how long a node may take to answer a request through a failover: its
// --hold-timeout (7 s, the default); a forward inside the hold ends by then too.
const holdBound = 7 * time.Second

// plainClient is a sequential client that sends only to running nodes, as behind a
// health-checked load balancer, one request at a time, and never retries: every answer
// it gets is what a user of the API would see.
type plainClient struct {
	rotation
	p    *testcluster.Processes
	next int
	log  []rawhttp.Answer
}

// rotation is the nodes a test's client sends to, as a health-checked load balancer keeps
// them: the ones the test has paused or killed are out, and one request at a time is in
// flight. Its mu also guards the fields of the client that embeds it.
type rotation struct {
	mu       sync.Mutex
	down     map[int]bool
	inflight int // the node of the request in flight, or -1
}

func newRotation() rotation { return rotation{down: map[int]bool{}, inflight: -1} }

// setDown takes node i out of (or back into) the rotation. Taking it out drains it, as a
// load balancer does before maintenance: it returns once no request is in flight to i, so
// that the fault that follows hits no request that was sent while the node was running.
func (r *rotation) setDown(i int, down bool) {
	r.mu.Lock()
	r.down[i] = down
	r.mu.Unlock()
	for down {
		r.mu.Lock()
		busy := r.inflight == i
		r.mu.Unlock()
		if !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// node picks the next running node, round robin, and notes the request in flight to it.
func (c *plainClient) node() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := 0; k < c.p.N(); k++ {
		i := (c.next + k) % c.p.N()
		if !c.down[i] {
			c.next = i + 1
			c.inflight = i
			return i
		}
	}
	c.inflight = 0
	return 0
}

func (c *plainClient) do(method, path, body string) rawhttp.Answer {
	a := rawhttp.Client{HTTP: plain}.Do(method, c.p.URL(c.node())+path, body)
	c.mu.Lock()
	c.inflight = -1
	c.log = append(c.log, a)
	c.mu.Unlock()
	return a
}

// waitReady waits until node i answers /readyz 200, as a load balancer's health check
// would before it sends the node traffic again.
func waitReady(t *testing.T, p *testcluster.Processes, i int) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("n%d's /readyz to answer 200", i+1), func() bool {
		return do("GET", p.URL(i)+"/readyz", "").Status == 200
	})
}

// Through a leader kill -9 and restart, a 5 s SIGSTOP of the new leader and a rolling
// restart, a plain client that keeps a lease alive and takes and releases a lock every
// ~50 ms, sending each request once to a running node, gets a 2xx answer to every request
// (so never loses its lease), no answer slower than the hold bound, and tokens that only rise. The
// nodes hold what they cannot serve during each election and repeat what is idempotent.
func TestBlackbox_FailoverIsInvisibleToAPlainClient(t *testing.T) {
	const n = 3
	p := testcluster.StartProcessesNoWait(t, n)
	waitAllReady(t, p, n)
	c := &plainClient{rotation: newRotation(), p: p}
	lease := c.do("POST", "/v1/leases", `{"ttl_ms":3000}`)
	if lease.Status != 201 {
		t.Fatalf("create lease: %v", lease)
	}
	id := lease.Body["lease_id"].(string)

	stop := make(chan struct{})
	done := make(chan struct{})
	var lastToken float64
	var problems []string
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if a := c.do("POST", "/v1/leases/"+id+"/keepalive", ""); a.Status != 200 {
				continue
			}
			g := c.do("PUT", "/v1/locks/failover/job", `{"lease_id":"`+id+`","owner":"plain"}`)
			if g.Status != 200 {
				continue
			}
			tok := g.Body["token"].(float64)
			if tok <= lastToken {
				problems = append(problems, fmt.Sprintf("token %v after %v", tok, lastToken))
			}
			lastToken = tok
			c.do("DELETE", "/v1/locks/failover/job", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id, int64(tok)))
		}
	}()

	time.Sleep(time.Second)
	// 1. kill -9 the leader, then restart it.
	l := p.WaitLeader(20 * time.Second)
	c.setDown(l, true)
	p.Kill(l)
	t.Logf("killed leader n%d", l+1)
	testkit.WaitFor(t, 20*time.Second, "a new leader", func() bool { i := p.LeaderIndex(); return i >= 0 && i != l })
	p.Start(l)
	waitReady(t, p, l)
	c.setDown(l, false)
	time.Sleep(time.Second)

	// 2. SIGSTOP the new leader for 5 s.
	l = p.WaitLeader(20 * time.Second)
	c.setDown(l, true)
	p.Signal(l, syscall.SIGSTOP)
	t.Logf("paused leader n%d", l+1)
	time.Sleep(5 * time.Second)
	p.Signal(l, syscall.SIGCONT)
	waitReady(t, p, l)
	c.setDown(l, false)
	time.Sleep(time.Second)

	// 3. A rolling restart: each node stopped (SIGTERM), restarted, ready again.
	for i := 0; i < n; i++ {
		c.setDown(i, true)
		p.Terminate(i)
		p.Start(i)
		waitReady(t, p, i)
		c.setDown(i, false)
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	<-done
	defer func() {
		if t.Failed() {
			p.DumpLogs()
		}
	}()

	c.mu.Lock()
	defer c.mu.Unlock()
	codes := map[string]int{}
	var slowest time.Duration
	for _, a := range c.log {
		if a.Took > slowest {
			slowest = a.Took
		}
		switch {
		case a.Err != nil:
			codes["no answer"]++
			t.Errorf("no answer from a running node: %v", a)
		case a.Status >= 500:
			codes[a.Code()]++
			t.Errorf("5xx through a failover: %v", a)
		case a.Status >= 300:
			// A single sequential client that sends each request once must see every
			// answer succeed: no_leader or unknown_outcome means a node did not hold or
			// repeat what it could, lock_held or not_holder that a repeat went wrong, and
			// lease_not_found that the lease was lost.
			codes[a.Code()]++
			t.Errorf("not 2xx through a failover: %v", a)
		}
		if a.Took > time.Second {
			t.Logf("slow answer: %s %s: %d %s after %v", a.Method, a.URL, a.Status, a.Code(), a.Took)
		}
		if a.Took > holdBound+time.Second {
			t.Errorf("an answer took %v, longer than the %v hold: %s %s", a.Took, holdBound, a.Method, a.URL)
		}
	}
	for _, pr := range problems {
		t.Error(pr)
	}
	var byCode []string
	for k, v := range codes {
		byCode = append(byCode, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(byCode)
	t.Logf("through leader kill -9 + restart, a 5 s leader pause and a rolling restart: %d answers, not 2xx: [%s], slowest %v, last token %v",
		len(c.log), strings.Join(byCode, ", "), slowest.Round(time.Millisecond), lastToken)
}
