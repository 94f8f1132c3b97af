package cluster

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/test/testkit"
)

// Invariant 5, the applied-index step of Node.ReadBarrier: a linearizable read waits until
// the state machine has applied the commit index it noted. The state a read returns must
// include every entry committed before the read began.
//
// Through the public API alone this step cannot be caught deterministically: on a ready
// leader, every write that has been acknowledged was applied there before its answer, so a
// committed-but-unapplied entry is always one whose writer is still waiting. This white-box
// test therefore holds the FSM goroutine still: it takes the event registry's lock, so that
// raft's FSM goroutine, handing the events of entry A (an acquire of "a") to the registry,
// stops after applying A. Entry B (an acquire of "b") is then committed but not applied. A
// linearizable read of "b" must not answer until B is applied; given a context that ends
// first, it returns the context's error. Without the wait it answers at once that "b" is
// free, which is state older than the read's commit index.
func TestNode_ReadWaitsForTheCommitIndexToApply(t *testing.T) {
	bind := testkit.FreePort(t)
	n, err := New(Config{
		ID: "solo", RaftBind: bind, DataDir: filepath.Join(t.TempDir(), "solo"),
		Bootstrap: []Peer{{ID: "solo", RaftAddr: bind}},
		Logger:    hclog.New(&hclog.LoggerOptions{Name: "solo", Level: hclog.Warn, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown() })
	testkit.WaitFor(t, 10*time.Second, "the node to lead", n.IsLeader)

	held := true
	n.registry.mu.Lock()
	release := func() {
		if held {
			held = false
			n.registry.mu.Unlock()
		}
	}
	defer release()

	errc := make(chan error, 2)
	acquire := func(name string) {
		_, err := n.prop.apply(&fsm.Command{Type: fsm.TypeAcquire, Name: name, Lease: newLeaseID(), NewLease: true, TTL: 60_000})
		errc <- err
	}
	go acquire("a")
	// "a" held in the state machine: A is applied, and the FSM goroutine is now stuck
	// delivering its events.
	testkit.WaitFor(t, 10*time.Second, "entry A to be applied", func() bool { return n.fsm.Lock("a").Held })
	appliedA := n.fsm.AppliedIndex()
	go acquire("b")
	testkit.WaitFor(t, 10*time.Second, "entry B to be committed", func() bool { return n.raft.CommitIndex() > appliedA })
	commit := n.raft.CommitIndex()
	if n.fsm.Lock("b").Held || n.fsm.AppliedIndex() >= commit {
		t.Fatalf("precondition: B is already applied (applied %d, commit %d); the FSM goroutine was not held", n.fsm.AppliedIndex(), commit)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	v, err := n.Locks().Status(ctx, "b", Query{})
	cancel()
	if err == nil {
		t.Fatalf("a linearizable read answered %+v while the commit index %d it began at was not applied (applied %d)", v, commit, n.fsm.AppliedIndex())
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read while B is unapplied: %v, want the context's deadline", err)
	}

	release()
	for i := 0; i < 2; i++ {
		if err := <-errc; err != nil {
			t.Fatalf("acquire: %v", err)
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := n.Locks().Status(ctx, "b", Query{}); err != nil || !v.Held {
		t.Fatalf("read after B is applied: %+v %v, want held", v, err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
