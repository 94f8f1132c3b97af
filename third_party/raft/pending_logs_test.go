package raft

// raftlock: tests of pending_logs.go; not part of hashicorp/raft v1.7.3. See RAFTLOCK.md.

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedStore is a log store whose StoreLogs can be held (it then waits until released)
// or made to fail once.
type gatedStore struct {
	*InmemStore
	mu      sync.Mutex
	hold    chan struct{} // non-nil: StoreLogs waits for it to close
	entered chan struct{} // closed when a held StoreLogs starts
	failErr error         // non-nil: the next StoreLogs fails with it, storing nothing
	name    string        // written into a stamped entry's Extensions
	noEarly atomic.Bool   // SendBeforeStored says no for every entry
}

// stamped is the command a gatedStore writes into as it stores it (as raft-wal's verifier
// does to a checkpoint), once its write was released, when the entry has no stamp yet.
const stamped = "stamp me"

// SendBeforeStored says that a stamped entry is written before it is sent.
func (g *gatedStore) SendBeforeStored(l *Log) bool {
	return string(l.Data) != stamped && !g.noEarly.Load()
}

func (g *gatedStore) StoreLogs(logs []*Log) error {
	g.mu.Lock()
	hold, entered, fail := g.hold, g.entered, g.failErr
	g.hold, g.entered, g.failErr = nil, nil, nil
	g.mu.Unlock()
	if fail != nil {
		return fail
	}
	if hold != nil {
		close(entered)
		<-hold
	}
	for _, l := range logs {
		if string(l.Data) == stamped && len(l.Extensions) == 0 {
			l.Extensions = []byte(g.name)
		}
	}
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedStore) StoreLog(l *Log) error { return g.StoreLogs([]*Log{l}) }

// holdNext makes the next StoreLogs wait until release is called; entered is closed when
// it starts waiting.
func (g *gatedStore) holdNext() (entered chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.entered = make(chan struct{}), make(chan struct{})
	hold := g.hold
	var once sync.Once
	return g.entered, func() { once.Do(func() { close(hold) }) }
}

func (g *gatedStore) failNext(err error) {
	g.mu.Lock()
	g.failErr = err
	g.mu.Unlock()
}

type pendingCluster struct {
	trans  []*InmemTransport
	rafts  []*Raft
	stores []*gatedStore
	fsms   []*MockFSM
	conf   *Config
}

// makePendingCluster starts three voters on in-memory transports with gated log stores;
// each of configure may change a node's configuration before it starts.
func makePendingCluster(t *testing.T, configure ...func(i int, c *Config)) *pendingCluster {
	t.Helper()
	c := &pendingCluster{conf: inmemConfig(t)}
	var cfg Configuration
	var trans []*InmemTransport
	for i := 0; i < 3; i++ {
		addr, tr := NewInmemTransport("")
		trans = append(trans, tr)
		cfg.Servers = append(cfg.Servers, Server{Suffrage: Voter, ID: ServerID(fmt.Sprintf("node-%d", i)), Address: addr})
	}
	for _, a := range trans {
		for _, b := range trans {
			a.Connect(b.LocalAddr(), b)
		}
	}
	c.trans = trans
	for i := 0; i < 3; i++ {
		conf := *c.conf
		conf.LocalID = cfg.Servers[i].ID
		conf.Logger = newTestLoggerWithPrefix(t, string(conf.LocalID))
		for _, f := range configure {
			f(i, &conf)
		}
		store := &gatedStore{InmemStore: NewInmemStore(), name: string(conf.LocalID)}
		snaps := NewInmemSnapshotStore()
		if err := BootstrapCluster(&conf, store, store, snaps, trans[i], cfg); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
		fsm := &MockFSM{}
		r, err := NewRaft(&conf, fsm, store, store, snaps, trans[i])
		if err != nil {
			t.Fatalf("NewRaft: %v", err)
		}
		c.rafts, c.stores, c.fsms = append(c.rafts, r), append(c.stores, store), append(c.fsms, fsm)
	}
	t.Cleanup(func() {
		for _, r := range c.rafts {
			_ = r.Shutdown().Error()
		}
	})
	return c
}

// within is the time a condition gets: generous next to the configured timeouts, so a busy
// machine does not fail the test, and finite, so a broken mechanism does.
func (c *pendingCluster) within() time.Duration {
	return 100 * (c.conf.HeartbeatTimeout + c.conf.ElectionTimeout)
}

func (c *pendingCluster) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(c.within())
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", c.within(), what)
		}
		time.Sleep(c.conf.CommitTimeout)
	}
}

// leader waits for a node to lead and for an entry of its term to be committed.
func (c *pendingCluster) leader(t *testing.T) (int, *Raft) {
	t.Helper()
	var idx int
	c.waitFor(t, "a leader", func() bool {
		for i, r := range c.rafts {
			if r.State() == Leader {
				idx = i
				return true
			}
		}
		return false
	})
	if err := c.answer(t, c.rafts[idx].Barrier(c.within())); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	return idx, c.rafts[idx]
}

// answer waits for a future's answer, failing the test when none comes in time.
func (c *pendingCluster) answer(t *testing.T, f Future) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-time.After(c.within()):
		t.Fatalf("no answer within %v", c.within())
		return nil
	}
}

func (c *pendingCluster) storeLast(i int) uint64 {
	last, _ := c.stores[i].LastIndex()
	return last
}

// The followers get a batch while the leader's own write of it is still running, and the
// proposal is answered only after that write: v1.7.3 sent it only after the write.
func TestPendingLogs_FollowersStoreWhileTheLeaderWrites(t *testing.T) {
	c := makePendingCluster(t)
	li, leader := c.leader(t)
	want := leader.LastIndex() + 1 // the barrier is applied and nothing else is proposed
	entered, release := c.stores[li].holdNext()
	t.Cleanup(release) // before the cluster's shutdown, which waits for the leader's write
	f := leader.Apply([]byte("charge"), c.within())
	select {
	case <-entered:
	case <-time.After(c.within()):
		t.Fatalf("the leader's write did not start within %v", c.within())
	}
	for i := range c.rafts {
		if i == li {
			continue
		}
		c.waitFor(t, fmt.Sprintf("follower %d to store index %d while the leader's write is held", i, want), func() bool {
			return c.storeLast(i) >= want
		})
	}
	if got := c.storeLast(li); got >= want {
		t.Fatalf("the leader's store holds index %d before its write was released", got)
	}
	select {
	case <-f.(*logFuture).errCh:
		t.Fatal("the proposal was answered before the leader's own write returned")
	default:
	}
	release()
	if err := c.answer(t, f); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if f.Index() != want {
		t.Fatalf("applied at %d, want %d", f.Index(), want)
	}
	c.waitFor(t, "every state machine to apply the entry", func() bool { return sameFSMs(c.fsms, 1) })
}

// An entry the log store writes into (EarlyReplicationFilter says no) is sent only once the
// leader's write of it has returned, so every follower gets the leader's stamp.
func TestPendingLogs_FilteredEntryIsSentAfterTheWrite(t *testing.T) {
	c := makePendingCluster(t)
	li, leader := c.leader(t)
	want := leader.LastIndex() + 1
	entered, release := c.stores[li].holdNext()
	t.Cleanup(release)
	f := leader.Apply([]byte(stamped), c.within())
	select {
	case <-entered:
	case <-time.After(c.within()):
		t.Fatalf("the leader's write did not start within %v", c.within())
	}
	release()
	if err := c.answer(t, f); err != nil {
		t.Fatalf("apply: %v", err)
	}
	for i := range c.rafts {
		c.waitFor(t, fmt.Sprintf("node %d to store index %d", i, want), func() bool { return c.storeLast(i) >= want })
		var l Log
		if err := c.stores[i].GetLog(want, &l); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if got, lead := string(l.Extensions), c.stores[li].name; got != lead {
			t.Errorf("node %d holds the entry stamped %q, want the leader's stamp %q", i, got, lead)
		}
	}
}

// A leader whose own write fails answers the proposal with the error and steps down; the
// followers may hold the entry already, and the logs of all three agree afterwards.
func TestPendingLogs_LeaderWriteFailsLogsStayConsistent(t *testing.T) {
	c := makePendingCluster(t)
	li, leader := c.leader(t)
	failed := errors.New("disk full")
	c.stores[li].failNext(failed)
	if err := c.answer(t, leader.Apply([]byte("lost?"), c.within())); !errors.Is(err, failed) {
		t.Fatalf("apply on a failed write: %v, want %v", err, failed)
	}
	c.waitFor(t, "the failed leader to step down", func() bool { return leader.State() != Leader })
	// Whoever leads next commits an entry of its own, and with it whatever it holds of the
	// failed batch.
	deadline := time.Now().Add(c.within())
	for done := 0; done < 3; {
		_, l := c.leader(t)
		err := c.answer(t, l.Apply([]byte(fmt.Sprintf("after-%d", done)), c.within()))
		switch {
		case err == nil:
			done++
		case (errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeadershipLost)) && time.Now().Before(deadline):
		default:
			t.Fatalf("apply after the failure: %v", err)
		}
	}
	c.waitFor(t, "the three logs to agree", func() bool { return sameLogs(c.stores) })
	c.waitFor(t, "the three state machines to agree", func() bool { return sameFSMs(c.fsms, 3) })
}

// cut disconnects node i from node j both ways; mend connects them again.
func (c *pendingCluster) cut(i, j int) {
	c.trans[i].Disconnect(c.trans[j].LocalAddr())
	c.trans[j].Disconnect(c.trans[i].LocalAddr())
}

func (c *pendingCluster) mend(i, j int) {
	c.trans[i].Connect(c.trans[j].LocalAddr(), c.trans[j])
	c.trans[j].Connect(c.trans[i].LocalAddr(), c.trans[i])
}

// A batch whose write failed is never sent in a later term, when the index it held holds
// another entry: runLeader forgets it. Built so that nothing else replaces it first: the
// failed batch reaches nobody (its leader is cut off), the other two commit an entry of
// their own at its index, the store then sends nothing early (so no later dispatch
// replaces the batch), the failed node leads again, and the third node, behind until
// then, is caught up from it.
func TestPendingLogs_FailedBatchIsNotSentInALaterTerm(t *testing.T) {
	c := makePendingCluster(t)
	a, leader := c.leader(t)
	b, lag := (a+1)%3, (a+2)%3
	c.cut(lag, a)
	c.cut(lag, b) // behind from here on
	c.cut(a, b)   // the failed batch reaches nobody
	failed := errors.New("disk full")
	c.stores[a].failNext(failed)
	at := leader.LastIndex() + 1
	if err := c.answer(t, leader.Apply([]byte("lost"), c.within())); !errors.Is(err, failed) {
		t.Fatalf("apply on a failed write: %v, want %v", err, failed)
	}
	c.waitFor(t, "the failed leader to step down", func() bool { return leader.State() != Leader })
	for _, s := range c.stores {
		s.noEarly.Store(true)
	}
	c.mend(a, b)
	// a and b elect one of them; a must lead in the end, with b's or its own entry at the
	// failed batch's index.
	c.waitFor(t, "node a to lead", func() bool {
		for i, r := range c.rafts {
			if r.State() == Leader && i != a {
				_ = r.LeadershipTransferToServer(ServerID(fmt.Sprintf("node-%d", a)), c.trans[a].LocalAddr()).Error()
			}
		}
		return c.rafts[a].State() == Leader
	})
	if err := c.answer(t, c.rafts[a].Apply([]byte("after"), c.within())); err != nil {
		t.Fatalf("apply after a leads again: %v", err)
	}
	var l Log
	if err := c.stores[a].GetLog(at, &l); err != nil || string(l.Data) == "lost" {
		t.Fatalf("node a's store at the failed index %d: %q, %v", at, l.Data, err)
	}
	c.mend(lag, a)
	c.mend(lag, b)
	c.waitFor(t, "the three logs to agree", func() bool { return sameLogs(c.stores) })
	c.waitFor(t, "the three state machines to agree", func() bool { return sameFSMs(c.fsms, 1) })
	for i, f := range c.fsms {
		for _, cmd := range f.Logs() {
			if string(cmd) == "lost" {
				t.Fatalf("node %d applied the batch whose write failed", i)
			}
		}
	}
}

// sameLogs says whether the three stores hold the same entries at the same indexes.
func sameLogs(stores []*gatedStore) bool {
	last, _ := stores[0].LastIndex()
	for _, s := range stores[1:] {
		if l, _ := s.LastIndex(); l != last {
			return false
		}
	}
	for i := uint64(1); i <= last; i++ {
		var a Log
		if err := stores[0].GetLog(i, &a); err != nil {
			return false
		}
		for _, s := range stores[1:] {
			var b Log
			if err := s.GetLog(i, &b); err != nil || b.Term != a.Term || b.Type != a.Type || !bytes.Equal(b.Data, a.Data) {
				return false
			}
		}
	}
	return true
}

// sameFSMs says whether every state machine applied the same commands, at least min.
func sameFSMs(fsms []*MockFSM, min int) bool {
	first := fsms[0].Logs()
	if len(first) < min {
		return false
	}
	for _, f := range fsms[1:] {
		other := f.Logs()
		if len(other) != len(first) {
			return false
		}
		for i := range first {
			if !bytes.Equal(first[i], other[i]) {
				return false
			}
		}
	}
	return true
}
