package blackbox_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// pauseBound is how long a keepalive sent to a live node may take while the leader is
// paused: an election (twice the 500 ms election timeout at most), the forward margin
// (2 s), and 1 s of slack.
const pauseBound = 4 * time.Second

// plain is a stranger's client: net/http with the long timeout one would pick.
var plain = &http.Client{Timeout: 20 * time.Second}

// do sends one request through plain.
func do(method, url, body string) rawhttp.Answer {
	return rawhttp.Client{HTTP: plain}.Do(method, url, body)
}

// waitAllReady polls GET /readyz on every node, as a load balancer would, until all say 200.
func waitAllReady(t *testing.T, p *testcluster.Processes, n int) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "every node's /readyz to answer 200", func() bool {
		for i := 0; i < n; i++ {
			if a := do("GET", p.URL(i)+"/readyz", ""); a.Status != 200 {
				return false
			}
		}
		return true
	})
}

// After every node answers /readyz 200, the first write sent to each node succeeds:
// readiness requires the leader's HTTP address, without which a follower that said ready
// would answer 503 no_leader.
func TestBlackbox_ReadyMeansWritable(t *testing.T) {
	const n = 3
	p := testcluster.StartProcessesNoWait(t, n)
	for round := 0; round < 3; round++ {
		waitAllReady(t, p, n)
		for i := 0; i < n; i++ {
			if a := do("POST", p.URL(i)+"/v1/leases", `{"ttl_ms":5000}`); a.Status != 201 {
				t.Fatalf("round %d: first write to n%d after every node was ready: %v", round, i+1, a)
			}
		}
		// A full restart: every node comes back with an empty view of who leads.
		p.KillAll()
		for i := 0; i < n; i++ {
			p.Start(i)
		}
	}
}

// keeper keeps one lease alive the way a plain client would: every 500 ms it sends a
// keepalive to a random live node and waits for the answer (up to its 20 s timeout); on an
// error it tries another live node at once. A node that holds a keepalive hostage delays
// every later one, which is exactly what this client must survive.
type keeper struct {
	rotation // its inflight is the keepalive in flight
	p        *testcluster.Processes
	lease    string
	log      []sample
	stop     chan struct{}
	wg       sync.WaitGroup
}

type sample struct {
	node  int
	at    time.Time
	ans   rawhttp.Answer
	viaFw bool // sent to a node that was not the leader when sent
}

func (k *keeper) liveNode(n int, not int) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var live []int
	for i := 0; i < n; i++ {
		if !k.down[i] && i != not {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return not
	}
	return live[rand.IntN(len(live))]
}

func (k *keeper) run(n int, leader func() int) {
	defer k.wg.Done()
	next := time.Now()
	for {
		next = next.Add(500 * time.Millisecond)
		select {
		case <-k.stop:
			return
		case <-time.After(time.Until(next)):
		}
		node := k.liveNode(n, -1)
		for attempt := 0; attempt < 3; attempt++ {
			at := time.Now()
			fw := node != leader()
			k.mu.Lock()
			k.inflight = node
			k.mu.Unlock()
			a := do("POST", k.p.URL(node)+"/v1/leases/"+k.lease+"/keepalive", "")
			k.mu.Lock()
			k.inflight = -1
			k.log = append(k.log, sample{node: node, at: at, ans: a, viaFw: fw})
			k.mu.Unlock()
			if a.Status == 200 {
				break
			}
			node = k.liveNode(n, node)
		}
		if time.Until(next) < 0 {
			next = time.Now()
		}
	}
}

// samples returns the keepalives sent in [from, to).
func (k *keeper) samples(from, to time.Time) []sample {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []sample
	for _, s := range k.log {
		if !s.at.Before(from) && s.at.Before(to) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// A 3 s lease kept alive every 500 ms through any live node keeps its lock through a 5 s
// SIGSTOP of the leader and through a kill -9 of the leader, while another client waits
// for the same lock the whole time. Every keepalive sent to a live node during the pause
// answers well inside the client's 20 s timeout.
func TestBlackbox_LeaseSurvivesLeaderPauseAndKill(t *testing.T) {
	const n = 3
	p := testcluster.StartProcessesNoWait(t, n)
	waitAllReady(t, p, n)

	lease := do("POST", p.URL(0)+"/v1/leases", `{"ttl_ms":3000}`)
	if lease.Status != 201 {
		t.Fatalf("create lease: %v", lease)
	}
	id := lease.Body["lease_id"].(string)
	grant := do("PUT", p.URL(1)+"/v1/locks/payments/card-42", `{"lease_id":"`+id+`","owner":"holder"}`)
	if grant.Status != 200 {
		t.Fatalf("acquire: %v", grant)
	}
	token := grant.Body["token"].(float64)

	var leaderMu sync.Mutex
	leader := p.WaitLeader(20 * time.Second)
	currentLeader := func() int { leaderMu.Lock(); defer leaderMu.Unlock(); return leader }
	k := &keeper{rotation: newRotation(), p: p, lease: id, stop: make(chan struct{})}
	k.wg.Add(1)
	go k.run(n, currentLeader)

	// A competitor queues for the lock the whole time, through a node that stays up.
	thief := make(chan rawhttp.Answer, 16)
	stopThief := make(chan struct{})
	var thiefWG sync.WaitGroup
	thiefWG.Add(1)
	go func() {
		defer thiefWG.Done()
		for {
			select {
			case <-stopThief:
				return
			default:
			}
			k.mu.Lock()
			node := 0
			for i := 0; i < n; i++ {
				if !k.down[i] {
					node = i
				}
			}
			k.mu.Unlock()
			a := do("PUT", p.URL(node)+"/v1/locks/payments/card-42", `{"owner":"thief","ttl_ms":3000,"wait_ms":2000}`)
			if a.Status == 200 {
				thief <- a
				return
			}
		}
	}()

	checkHeld := func(when string) {
		t.Helper()
		select {
		case a := <-thief:
			t.Fatalf("%s: the lock was granted to another client: %v", when, a)
		default:
		}
		l := p.WaitLeader(20 * time.Second)
		st := do("GET", p.URL(l)+"/v1/locks/payments/card-42", "")
		if st.Status != 200 || st.Body["held"] != true || st.Body["owner"] != "holder" || st.Body["token"].(float64) != token {
			t.Fatalf("%s: lock status %v, want held by holder with token %v", when, st, token)
		}
	}

	// Let a few keepalives pass, then freeze the leader for 5 s.
	time.Sleep(1500 * time.Millisecond)
	old := currentLeader()
	t.Logf("pausing leader n%d for 5 s", old+1)
	k.setDown(old, true)
	pausedAt := time.Now()
	p.Signal(old, syscall.SIGSTOP)
	var newLeader int
	testkit.WaitFor(t, 20*time.Second, "a new leader", func() bool {
		newLeader = p.LeaderIndex()
		return newLeader >= 0 && newLeader != old
	})
	failover := time.Since(pausedAt)
	leaderMu.Lock()
	leader = newLeader
	leaderMu.Unlock()
	time.Sleep(5*time.Second - time.Since(pausedAt))
	p.Signal(old, syscall.SIGCONT)
	resumedAt := time.Now()
	k.setDown(old, false)
	time.Sleep(1500 * time.Millisecond)
	checkHeld("after a 5 s leader pause")

	var slowest time.Duration
	var forwarded, failed int
	for _, s := range k.samples(pausedAt, resumedAt) {
		if s.ans.Took > slowest {
			slowest = s.ans.Took
		}
		if s.viaFw {
			forwarded++
		}
		if s.ans.Err != nil {
			t.Errorf("keepalive to live node n%d during the pause: %v", s.node+1, s.ans)
		} else if s.ans.Status != 200 {
			// The node holds the keepalive through the election and repeats it after an
			// ambiguous forward (it is idempotent): the client sees the answer, not a 503.
			failed++
			t.Errorf("keepalive to n%d during the pause: %v, want 200", s.node+1, s.ans)
		}
		// Bound: an election (at most twice the 500 ms election timeout), the forward
		// margin (2 s) a forward to the paused leader may take when no leader change is
		// seen, and 1 s of slack: far below the 5 s pause, so a node that held a request
		// until the leader resumed fails it.
		if s.ans.Took > pauseBound {
			t.Errorf("keepalive to n%d during the pause took %v, want at most %v", s.node+1, s.ans.Took, pauseBound)
		}
	}
	if forwarded == 0 {
		t.Errorf("no keepalive during the pause was sent to a follower: the forward path was not exercised")
	}
	t.Logf("pause: new leader n%d after %v; %d keepalives to live nodes (%d forwarded when sent), %d not 200, slowest answer %v (bound %v)",
		newLeader+1, failover.Round(time.Millisecond), len(k.samples(pausedAt, resumedAt)), forwarded, failed, slowest.Round(time.Millisecond), pauseBound)

	// Now kill -9 the current leader.
	victim := p.WaitLeader(20 * time.Second)
	k.setDown(victim, true)
	killedAt := time.Now()
	p.Kill(victim)
	testkit.WaitFor(t, 20*time.Second, "a leader after the kill", func() bool {
		l := p.LeaderIndex()
		return l >= 0 && l != victim
	})
	t.Logf("kill -9 of n%d: new leader after %v", victim+1, time.Since(killedAt).Round(time.Millisecond))
	leaderMu.Lock()
	leader = p.LeaderIndex()
	leaderMu.Unlock()
	time.Sleep(4 * time.Second) // longer than the TTL: the lease must have been renewed
	checkHeld("after a leader kill -9")
	for _, s := range k.samples(killedAt, time.Now()) {
		if s.ans.Err != nil || s.ans.Took > 10*time.Second {
			t.Errorf("keepalive to live node n%d after the kill: %v", s.node+1, s.ans)
		}
	}

	close(stopThief)
	close(k.stop)
	k.wg.Wait()
	thiefWG.Wait()
	checkHeld("at the end")
}

// A flood of lease creations against a cluster with --max-leases stops at exactly the
// limit: every extra request gets 429 quota_exceeded with Retry-After, nothing else fails
// (but an unknown outcome when a leader steps down), and every node's count of live
// leases settles at the limit, never past it.
func TestBlackbox_LeaseFloodStopsAtQuota(t *testing.T) {
	const n, limit, flood, workers = 3, 200, 1000, 16
	p := testcluster.StartProcessesNoWait(t, n, "--max-leases", fmt.Sprint(limit))
	waitAllReady(t, p, n)
	testkit.WaitFor(t, 30*time.Second, "the quota to be in force on every node", func() bool {
		for i := 0; i < n; i++ {
			a := do("GET", p.URL(i)+"/v1/cluster", "")
			lim, _ := a.Body["limits"].(map[string]any)
			if a.Status != 200 || lim["max_leases"] != float64(limit) {
				return false
			}
		}
		return true
	})
	var mu sync.Mutex
	counts := map[string]int{}
	var slowest time.Duration
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				a := do("POST", p.URL(i%n)+"/v1/leases", `{"ttl_ms":60000}`)
				key := ""
				if a.Err != nil {
					key = "error: " + a.Err.Error()
				} else {
					key = fmt.Sprint(a.Status)
					if e, ok := a.Body["error"].(map[string]any); ok {
						key += " " + fmt.Sprint(e["code"])
					}
					if a.Status == 429 && a.Header.Get("Retry-After") == "" {
						key += " without Retry-After"
					}
				}
				mu.Lock()
				counts[key]++
				slowest = max(slowest, a.Took)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < flood; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d lease creations by %d workers in %v (slowest %v): %v", flood, workers, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), counts)
	// On a loaded machine a leader may step down with creations in flight: those are
	// answered 503 unknown_outcome, a correct answer (each was created or not). The
	// server's lease count settles them: every node must come to count exactly the limit
	// (fewer would mean a refusal below the quota, more a quota overrun). The leases live
	// 60 s, far past the wait; its deadline allows several leader changes.
	created, refused, unknown := counts["201"], counts["429 quota_exceeded"], counts["503 unknown_outcome"]
	if created+refused+unknown != flood || created > limit {
		t.Fatalf("answers %v, want only 201, 429 quota_exceeded and 503 unknown_outcome, at most %d created", counts, limit)
	}
	if created+unknown < limit {
		t.Fatalf("answers %v: only %d creations answered 201 or unknown, so the quota refused below its %d", counts, created+unknown, limit)
	}
	var seen []float64
	last := ""
	testkit.WaitFor(t, 10*pauseBound, fmt.Sprintf("every node to count %d live leases", limit), func() bool {
		seen = seen[:0]
		for i := 0; i < n; i++ {
			a := do("GET", p.URL(i)+"/v1/overview", "")
			ls, _ := a.Body["leases"].(map[string]any)
			c, ok := ls["count"].(float64)
			if a.Status != 200 || !ok {
				return false
			}
			if c > limit {
				t.Fatalf("%s counts %v live leases, more than the quota %d (answers %v)", p.URL(i), c, limit, counts)
			}
			seen = append(seen, c)
		}
		if got := fmt.Sprint(seen); got != last {
			t.Logf("live leases counted by each node: %s", got)
			last = got
		}
		for _, c := range seen {
			if c != limit {
				return false
			}
		}
		return true
	})
	t.Logf("every node counts %d live leases: %d created, %d unknown outcomes of which %d were created", limit, created, unknown, limit-created)
}
