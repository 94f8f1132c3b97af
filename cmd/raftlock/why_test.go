package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// startHistoryCluster starts a three-node cluster and waits until it runs protocol
// version 2, from which on histories are kept.
func startHistoryCluster(t *testing.T, tune func(i int, c *cluster.Config)) (*testcluster.InProcess, *client.Client) {
	t.Helper()
	tc := testcluster.StartInProcess(t, 3, tune)
	tc.WaitFor(30*time.Second, "protocol version 2 on every node", func() bool {
		for _, n := range tc.Nodes {
			if n == nil || n.FSM().Version() < 2 {
				return false
			}
		}
		return true
	})
	c, err := client.New(tc.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	return tc, c
}

// why runs `raftlock why NAME` in process and returns what it printed.
func why(t *testing.T, endpoints []string, name string) string {
	t.Helper()
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	app.ExitErrHandler = func(*cli.Context, error) {} // report, do not exit the test binary
	if err := app.Run([]string{"raftlock", "why", "--endpoints", strings.Join(endpoints, ","), name}); err != nil {
		t.Fatalf("raftlock why %s: %v\n%s", name, err, errb.String())
	}
	return out.String()
}

func mustMatch(t *testing.T, text, pattern string) {
	t.Helper()
	if !regexp.MustCompile(pattern).MatchString(text) {
		t.Errorf("output does not match %q:\n%s", pattern, text)
	}
}

// TestWhy_ExpiryRevokeHandover checks the sentences of `raftlock why` for a lock lost by
// expiry (and handed to its waiter), one lost by revoke, and a normal handover.
func TestWhy_ExpiryRevokeHandover(t *testing.T) {
	tc, c := startHistoryCluster(t, nil)
	ctx := clustertest.Ctx(t, 2*time.Minute)

	// Expiry: worker-3 holds with a 1 s lease it never renews; worker-7 waits.
	g3, err := c.Acquire(ctx, "why/expiry", client.AcquireOptions{TTL: time.Second, Owner: "worker-3"})
	if err != nil {
		t.Fatal(err)
	}
	g7, err := c.Acquire(ctx, "why/expiry", client.AcquireOptions{TTL: time.Minute, Owner: "worker-7", Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := why(t, tc.Endpoints(), "why/expiry")
	t.Logf("expiry:\n%s", out)
	mustMatch(t, out, `token \d+ granted to worker-3 \(the lock was free\)`)
	mustMatch(t, out, `token \d+ held by worker-3 for 1(\.\d)? s; lease expired at t\+\d+:\d\d:\d\d\.\d{3} cluster time, 1 s after its last keepalive; handed to worker-7 with token \d+ in the same commit`)
	if !strings.Contains(out, "with token "+itoa(g7.Token)+" in the same commit") || !strings.Contains(out, "token "+itoa(g3.Token)+" held by worker-3") {
		t.Errorf("tokens %d and %d not both in:\n%s", g3.Token, g7.Token, out)
	}
	mustMatch(t, out, `now: token \d+ held by worker-7`)

	// Revoke: worker-5's lease is revoked.
	g5, err := c.Acquire(ctx, "why/revoke", client.AcquireOptions{TTL: time.Minute, Owner: "worker-5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, g5.LeaseID); err != nil {
		t.Fatal(err)
	}
	out = why(t, tc.Endpoints(), "why/revoke")
	t.Logf("revoke:\n%s", out)
	mustMatch(t, out, `token `+itoa(g5.Token)+` held by worker-5 for [\d.]+ m?s; lease revoked; the lock became free`)
	mustMatch(t, out, `now: free`)

	// A normal handover: worker-1 releases while worker-2 waits.
	g1, err := c.Acquire(ctx, "why/handover", client.AcquireOptions{TTL: time.Minute, Owner: "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan api.Grant, 1)
	go func() {
		g, err := c.Acquire(ctx, "why/handover", client.AcquireOptions{TTL: time.Minute, Owner: "worker-2", Wait: 30 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- g
	}()
	rawhttp.WaitStatus(t, tc.URL(0), "why/handover", func(s api.LockStatus) bool { return s.Waiters == 1 })
	if err := c.Release(ctx, "why/handover", g1.LeaseID, g1.Token); err != nil {
		t.Fatal(err)
	}
	g2 := <-done
	out = why(t, tc.Endpoints(), "why/handover")
	t.Logf("handover:\n%s", out)
	mustMatch(t, out, `token `+itoa(g1.Token)+` held by worker-1 for [\d.]+ m?s; released by its holder; handed to worker-2 with token `+itoa(g2.Token)+` in the same commit \(it had waited [\d.]+ m?s\)`)
}

func itoa(n uint64) string { return uintString(n) }

func uintString(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// TestEvents_StreamResumeLimits follows the event stream through acquire, release and
// expiry; resumes after a disconnect without losing anything; and checks the too-old
// index and the subscriber limit.
func TestEvents_StreamResumeLimits(t *testing.T) {
	tc, c := startHistoryCluster(t, func(i int, cfg *cluster.Config) {
		cfg.EventSubscribers = 2
		cfg.EventBacklog = 50
	})
	ctx := clustertest.Ctx(t, 2*time.Minute)
	// The watcher's own client starts on a follower, whose HTTP server is stopped below
	// (stopping the leader's would leave the others nowhere to forward writes).
	fol := tc.Follower()
	eps := []string{tc.URL(fol)}
	for i := range tc.Nodes {
		if i != fol {
			eps = append(eps, tc.URL(i))
		}
	}
	wc, err := client.New(eps)
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, "ev/", client.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() api.HistoryEvent {
		t.Helper()
		select {
		case e, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10 s")
		}
		return api.HistoryEvent{}
	}
	g, err := c.Acquire(ctx, "ev/a", client.AcquireOptions{TTL: time.Minute, Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Kind != "granted" || e.Name != "ev/a" || e.Token != g.Token || e.Index != g.Token {
		t.Fatalf("acquire event %+v", e)
	}
	if _, err := c.Acquire(ctx, "other/x", client.AcquireOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err) // outside the prefix: not streamed
	}
	if err := c.Release(ctx, "ev/a", g.LeaseID, g.Token); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Kind != "released" || e.Token != g.Token {
		t.Fatalf("release event %+v", e)
	}
	g, err = c.Acquire(ctx, "ev/b", client.AcquireOptions{TTL: 600 * time.Millisecond, Owner: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Kind != "granted" || e.Name != "ev/b" {
		t.Fatalf("acquire event %+v", e)
	}
	expired := next()
	if expired.Kind != "expired" || expired.Name != "ev/b" || expired.DeadlineMs-expired.RenewedMs != 600 {
		t.Fatalf("expiry event %+v", expired)
	}

	// Resume: events applied while no watcher is connected arrive after reconnecting.
	// LastIndex counts an entry once all its events were handed over, which the watcher
	// notes just after the hand-off: wait for it, or the resume repeats the expiry (events
	// are delivered at least once, never lost).
	testkit.WaitFor(t, 10*time.Second, "the watcher to note the expiry's entry", func() bool {
		return w.LastIndex() >= expired.Index
	})
	last := w.LastIndex()
	w.Stop()
	var tokens []uint64
	for i := 0; i < 5; i++ {
		g, err := c.Acquire(ctx, "ev/r"+uintString(uint64(i)), client.AcquireOptions{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, g.Token)
	}
	w, err = wc.Watch(ctx, "ev/", client.WatchOptions{FromIndex: last + 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		if e := next(); e.Kind != "granted" || e.Token != tok {
			t.Fatalf("resumed event %+v, want the grant of token %d", e, tok)
		}
	}
	// A node restart cuts the stream of whichever node served it; the watcher
	// reconnects with Last-Event-ID and misses nothing.
	if n := tc.Nodes[fol].Events().Subscribers(); n != 1 {
		t.Fatalf("node %d serves %d streams, want the watcher's", fol, n)
	}
	tc.StopHTTP(fol)
	g, err = c.Acquire(ctx, "ev/after", client.AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Token != g.Token {
		t.Fatalf("after reconnect %+v, want token %d", e, g.Token)
	}

	// Too old: 60 more events push index last out of a 50-event backlog.
	for i := 0; i < 30; i++ {
		g, err := c.Acquire(ctx, "old/x", client.AcquireOptions{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(ctx, "old/x", g.LeaseID, g.Token); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Watch(ctx, "", client.WatchOptions{FromIndex: 1}); !errors.Is(err, client.ErrIndexCompacted) {
		t.Fatalf("from index 1: %v", err)
	}
	live := (fol + 1) % len(tc.Nodes)
	resp, err := http.Get(tc.URL(live) + "/v1/events?from_index=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("from index 1: status %d, want 410", resp.StatusCode)
	}

	// The subscriber limit (2 per node): hold two streams on one node, the third is refused.
	one, err := client.New([]string{tc.URL(live)})
	if err != nil {
		t.Fatal(err)
	}
	var held []*client.Watcher
	for len(held) < 2 {
		hw, err := one.Watch(ctx, "", client.WatchOptions{})
		if errors.Is(err, client.ErrTooManyRequests) {
			break // the test's own watcher may sit on that node
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, hw)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, tc.URL(live)+"/v1/events", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third subscriber: status %d, want 429", resp.StatusCode)
	}
	for _, hw := range held {
		hw.Stop()
	}
	w.Stop()
}
