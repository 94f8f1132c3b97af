package fault_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// fc is the tests' client; its short timeout bounds how long a paused node can hold one
// request.
var fc = rawhttp.Client{HTTP: &http.Client{Timeout: 3 * time.Second}}

// keeper keeps a lease alive through whichever endpoint answers, recording the send time
// of the last answered keepalive, as a client must. Like the Go client's leases, it gives
// each attempt half the interval (at least 250 ms): an attempt left hanging on a paused
// node for the shared client's 3 s would outlast the TTL, and no client keeps a lease that
// way.
type keeper struct {
	endpoints []string
	lease     string
	lastSent  atomic.Int64 // unix nanos of the last answered keepalive's send
	lost      atomic.Bool
	stop      chan struct{}
	done      sync.WaitGroup
}

func keepAlive(endpoints []string, lease string, every time.Duration) *keeper {
	k := &keeper{endpoints: endpoints, lease: lease, stop: make(chan struct{})}
	kc := rawhttp.Client{HTTP: &http.Client{Timeout: max(every/2, 250*time.Millisecond)}}
	k.lastSent.Store(time.Now().UnixNano())
	k.done.Add(1)
	go func() {
		defer k.done.Done()
		for i := 0; ; i++ {
			sent := time.Now()
			a := kc.Do("POST", k.endpoints[i%len(k.endpoints)]+"/v1/leases/"+lease+"/keepalive", "")
			wait := every
			switch {
			case a.Status == 200:
				k.lastSent.Store(sent.UnixNano())
			case a.Status == 404:
				k.lost.Store(true)
				return
			default:
				wait = 50 * time.Millisecond // try the next endpoint soon
			}
			select {
			case <-k.stop:
				return
			case <-time.After(wait):
			}
		}
	}()
	return k
}

func (k *keeper) Stop() { close(k.stop); k.done.Wait() }

// acquire takes a lock through any endpoint, retrying while the cluster elects.
func acquire(t *testing.T, p *testcluster.Processes, name string, ttl int64) api.Grant {
	t.Helper()
	var g api.Grant
	testkit.WaitFor(t, 15*time.Second, "acquire "+name, func() bool {
		for _, e := range p.Endpoints() {
			if a := fc.Do("PUT", e+"/v1/locks/"+name, rawhttp.JSON(api.AcquireRequest{TTLMs: ttl, Owner: "tester"})); a.Status == 200 && a.Decode(&g) == nil {
				return true
			}
		}
		return false
	})
	return g
}

// status reads a lock linearizably through any endpoint that answers.
func status(t *testing.T, p *testcluster.Processes, name string) api.LockStatus {
	t.Helper()
	var s api.LockStatus
	testkit.WaitFor(t, 15*time.Second, "status of "+name, func() bool {
		for _, e := range p.Endpoints() {
			if a := fc.Do("GET", e+"/v1/locks/"+name, ""); a.Status == 200 && a.Decode(&s) == nil {
				return true
			}
		}
		return false
	})
	return s
}

// runFault keeps a lease with a lock alive across fault(leader), and checks that the lock is
// still held by the same grant two TTLs after the fault.
func runFault(t *testing.T, fault func(p *testcluster.Processes, leader int)) {
	p := testcluster.StartProcesses(t, 3)
	const ttl = 2000
	g := acquire(t, p, "payments/card-42", ttl)
	k := keepAlive(p.Endpoints(), g.LeaseID, ttl/4*time.Millisecond)
	defer k.Stop()

	leader := p.WaitLeader(20 * time.Second)
	start := time.Now()
	fault(p, leader)
	newLeader := p.WaitLeader(30 * time.Second)
	t.Logf("fault on leader n%d: a ready leader (n%d) answered after %v", leader+1, newLeader+1, time.Since(start).Round(time.Millisecond))

	// Two full TTLs more on the new leader's clock.
	settle := time.Now()
	testkit.WaitFor(t, 10*time.Second, "two TTLs", func() bool { return time.Since(settle) > 2*ttl*time.Millisecond || k.lost.Load() })
	if k.lost.Load() {
		t.Fatal("the kept-alive lease was lost across the fault")
	}
	s := status(t, p, "payments/card-42")
	if !s.Held || s.Token != g.Token {
		t.Fatalf("after the fault the lock is %+v; want held with token %d", s, g.Token)
	}
	var l api.Lease
	if a := fc.Do("GET", p.URL(newLeader)+"/v1/leases/"+g.LeaseID, ""); a.Status != 200 || a.Decode(&l) != nil || len(l.Locks) != 1 {
		t.Fatalf("lease after the fault: %v %+v", a, l)
	}
}

func TestFault_LeaderKillKeepsKeptAliveLease(t *testing.T) {
	runFault(t, func(p *testcluster.Processes, leader int) { p.Kill(leader) })
}

func TestFault_LeaderPauseKeepsKeptAliveLease(t *testing.T) {
	runFault(t, func(p *testcluster.Processes, leader int) {
		p.Signal(leader, syscall.SIGSTOP)
		paused := time.Now()
		// Longer than the election timeout (500 ms): the others elect a new leader.
		testkit.WaitFor(t, 30*time.Second, "a new leader while the old one is paused", func() bool {
			l := p.LeaderIndex()
			return l >= 0 && l != leader && time.Since(paused) > 1500*time.Millisecond
		})
		p.Signal(leader, syscall.SIGCONT)
	})
}

// Invariant 8: a grant acknowledged to the client survives a kill -9 of the leader that
// acknowledged it, and tokens keep rising afterwards.
func TestFault_AcknowledgedGrantSurvivesLeaderKill(t *testing.T) {
	p := testcluster.StartProcesses(t, 3)
	leader := p.WaitLeader(20 * time.Second)
	var grants []api.Grant
	for i := 0; i < 5; i++ {
		var g api.Grant
		if a := fc.Do("PUT", fmt.Sprintf("%s/v1/locks/k/%d", p.URL(leader), i), rawhttp.JSON(api.AcquireRequest{TTLMs: 60_000})); a.Status != 200 || a.Decode(&g) != nil {
			t.Fatalf("acquire: %v", a)
		}
		grants = append(grants, g)
	}
	p.Kill(leader)
	p.WaitLeader(30 * time.Second)
	for i, g := range grants {
		if s := status(t, p, fmt.Sprintf("k/%d", i)); !s.Held || s.Token != g.Token {
			t.Fatalf("acknowledged grant %+v lost after the leader was killed: %+v", g, s)
		}
	}
	p.Start(leader)
	g := acquire(t, p, "k/new", 10_000)
	if g.Token <= grants[len(grants)-1].Token {
		t.Fatalf("token %d after failover is not above %d", g.Token, grants[len(grants)-1].Token)
	}
}
