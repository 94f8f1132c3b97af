package client_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// These tests run real `raftlock serve` processes and kill -9 or SIGSTOP them. They stay
// short: TTLs of 2-3 s and the default 500 ms election timeout.

// TestProcesses_KeepAliveSurvivesLeaderKillAndPause: a lease and its lock survive the
// leader being killed, and then a new leader being paused for longer than the election
// timeout, with the same token throughout.
func TestProcesses_KeepAliveSurvivesLeaderKillAndPause(t *testing.T) {
	p := testcluster.StartProcesses(t, 3)
	c := newClient(t, p.Endpoints(), client.WithRetryBackoff(20*time.Millisecond, 200*time.Millisecond))
	ctx := ctxFor(t, 60*time.Second)
	const ttl = 3 * time.Second
	l := mustLease(t, c, ttl)
	m := client.NewMutex(l, "proc/survive")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	token := m.Token()
	checkAlive := func(when string) {
		t.Helper()
		if closed(l.Done()) || closed(m.Lost()) {
			t.Fatalf("%s: lease lost: %v", when, l.Err())
		}
		st, err := c.Status(ctx, "proc/survive", client.StatusOptions{})
		if err != nil {
			t.Fatalf("%s: status: %v", when, err)
		}
		if !st.Held || st.Token != token {
			t.Fatalf("%s: status %+v; want held with token %d", when, st, token)
		}
	}
	// answeredAfter waits for a keepalive sent after t0 to be answered.
	answeredAfter := func(t0 time.Time, what string) {
		t.Helper()
		testkit.WaitFor(t, 15*time.Second, what, func() bool {
			return l.SafeUntil().After(t0.Add(ttl-l.DriftMargin())) || closed(l.Done())
		})
	}

	// 1. Kill the leader.
	old := p.WaitLeader(10 * time.Second)
	killedAt := time.Now()
	p.Kill(old)
	answeredAfter(killedAt, "a keepalive answered after the leader was killed")
	checkAlive("after the leader was killed")

	// Bring the node back so that a majority survives the pause below.
	p.Start(old)
	testkit.WaitFor(t, 20*time.Second, "the restarted node to catch up", func() bool {
		ldr := p.LeaderIndex()
		if ldr < 0 {
			return false
		}
		li, err1 := rawhttp.ClusterInfo(nil, p.URL(ldr))
		ri, err2 := rawhttp.ClusterInfo(nil, p.URL(old))
		return err1 == nil && err2 == nil && ri.LeaderID != "" && ri.AppliedIndex >= li.CommitIndex
	})

	// 2. Pause the leader for longer than the election timeout: a new leader must be
	// elected and serve the keepalives, then the old one resumes and steps down.
	paused := p.WaitLeader(10 * time.Second)
	pausedAt := time.Now()
	p.Signal(paused, syscall.SIGSTOP)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			p.Signal(paused, syscall.SIGCONT)
		}
	}
	defer resume()
	answeredAfter(pausedAt, "a keepalive answered while the leader is paused")
	pause := time.Since(pausedAt)
	resume()
	if pause < 500*time.Millisecond {
		t.Fatalf("a keepalive was answered %v into the pause, faster than an election", pause)
	}
	t.Logf("the pause lasted %v", pause)
	checkAlive("during the pause")
	resumedAt := time.Now()
	answeredAfter(resumedAt, "a keepalive answered after the old leader resumed")
	checkAlive("after the old leader resumed")
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestProcesses_CutOffLostAtSafeUntil: with every server killed, Lost closes at SafeUntil
// (plus scheduling slack), and SafeUntil came before the earliest moment the servers
// could have expired the lease (the last answered keepalive's send time + TTL, and that
// send time was before the last server died).
func TestProcesses_CutOffLostAtSafeUntil(t *testing.T) {
	p := testcluster.StartProcesses(t, 3)
	c := newClient(t, p.Endpoints(), client.WithTimeout(300*time.Millisecond))
	ctx := ctxFor(t, 30*time.Second)
	const ttl = 2 * time.Second
	m := c.NewMutex("proc/cutoff", client.WithLeaseTTL(ttl))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	l := m.Lease()
	killStart := time.Now()
	p.KillAll()
	killedAt := time.Now() // every server is gone: nothing sent later can be answered
	select {
	case <-m.Lost():
	case <-time.After(2 * ttl):
		t.Fatalf("Lost not closed %v after every server was killed", 2*ttl)
	}
	lostAt := time.Now()
	if !errors.Is(l.Err(), client.ErrLeaseLost) {
		t.Fatalf("Err = %v; want ErrLeaseLost", l.Err())
	}
	safe := l.SafeUntil()
	if lostAt.Before(safe) {
		t.Fatalf("Lost closed %v before SafeUntil", safe.Sub(lostAt))
	}
	if late := lostAt.Sub(safe); late > 250*time.Millisecond {
		t.Fatalf("Lost closed %v after SafeUntil", late)
	}
	// SafeUntil = send + TTL - drift with send before the kill: the servers' expiry (no
	// earlier than send + TTL) is at least the drift margin later.
	if serverEarliest := safe.Add(l.DriftMargin()); serverEarliest.After(killedAt.Add(ttl)) {
		t.Fatalf("SafeUntil + drift is %v after the kill, beyond the TTL: it cannot come from a send before the kill", serverEarliest.Sub(killedAt))
	}
	if !safe.After(killStart) {
		t.Fatalf("SafeUntil had passed before the kill")
	}
}
