package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// Locksets, deadlock detection and the maximum hold through the Go client, against a
// three-node cluster in this process.
func TestClient_LockSetDeadlockMaxHold(t *testing.T) {
	tc := testcluster.StartInProcess(t, 3, nil)
	c := newClient(t, tc.Endpoints())
	testkit.WaitFor(t, 30*time.Second, "protocol version 3", func() bool {
		info, err := c.Cluster(ctxFor(t, 5*time.Second))
		return err == nil && info.ProtocolVersion >= 3
	})

	set, err := c.LockSet(ctxFor(t, 10*time.Second), []string{"cl-b", "cl-a"})
	if err != nil {
		t.Fatal(err)
	}
	toks := set.Tokens()
	if len(toks) != 2 || toks[0].Name != "cl-a" || toks[0].Token != toks[1].Token || set.Token("cl-b") != toks[1].Token {
		t.Fatalf("tokens %+v", toks)
	}
	// A second set waits, and is granted whole by the first one's Unlock.
	got := make(chan *client.LockSet, 1)
	go func() {
		s2, err := c.LockSet(ctxFor(t, 20*time.Second), []string{"cl-a", "cl-b", "cl-c"})
		if err != nil {
			t.Errorf("second set: %v", err)
		}
		got <- s2
	}()
	testkit.WaitFor(t, 10*time.Second, "the second set queued", func() bool { return mustStatus(t, c, "cl-c").Waiters == 1 })
	if err := set.Unlock(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	s2 := <-got
	if s2 == nil || s2.Token("cl-a") <= toks[0].Token || s2.Token("cl-a") != s2.Token("cl-c") {
		t.Fatalf("second set %+v after %+v", s2, toks)
	}
	if err := s2.Unlock(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}

	// Two Mutexes on two leases, each asking for the other's lock: ErrDeadlock, at once.
	la, lb := mustLease(t, c, 10*time.Second), mustLease(t, c, 10*time.Second)
	ma, mb := client.NewMutex(la, "cl-x"), client.NewMutex(lb, "cl-y")
	if err := ma.Lock(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := mb.Lock(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	aWaits := make(chan error, 1)
	go func() { aWaits <- client.NewMutex(la, "cl-y").Lock(ctxFor(t, 20*time.Second)) }()
	testkit.WaitFor(t, 10*time.Second, "a queued for cl-y", func() bool { return mustStatus(t, c, "cl-y").Waiters == 1 })
	start := time.Now()
	err = client.NewMutex(lb, "cl-x").Lock(ctxFor(t, 20*time.Second))
	if !errors.Is(err, client.ErrDeadlock) {
		t.Fatalf("closing request: %v", err)
	}
	t.Logf("ErrDeadlock after %v: %v", time.Since(start), err)
	if err := mb.Unlock(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-aWaits; err != nil {
		t.Fatalf("a's wait: %v", err)
	}

	// WithMaxHold: Lost fires when the maximum hold ends the grant, lease kept alive.
	m := c.NewMutex("cl-m", client.WithMaxHold(time.Second), client.WithLeaseTTL(5*time.Second))
	if err := m.Lock(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not fire after the maximum hold")
	}
	testkit.WaitFor(t, 10*time.Second, "the server to end the grant", func() bool { return !mustStatus(t, c, "cl-m").Held })
	if closed(m.Lease().Done()) {
		t.Fatal("the lease ended with the grant")
	}
	if err := m.Unlock(ctxFor(t, 5*time.Second)); err != nil && !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("unlock after the maximum hold: %v", err)
	}
}
