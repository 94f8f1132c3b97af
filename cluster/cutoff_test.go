package cluster_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// cutTimeout is every node's heartbeat, election and leader lease timeout in the tests that
// cut the leader off. A leader that loses contact with every follower steps down only
// after its lease timeout has passed since its last contact; followers contact it every
// tenth of the heartbeat timeout, so a cut-off leader keeps believing it leads for at
// least 0.8 × cutTimeout (1.2 s). The tests then act within that window, and check that
// they did, rather than race the lease by luck. Elections are started on purpose
// (campaignNow), not by the followers' timeouts.
const cutTimeout = 1500 * time.Millisecond

// startLinked starts three nodes whose Raft traffic runs through clustertest.Links.
func startLinked(t *testing.T) (*clustertest.Cluster, *clustertest.Links) {
	t.Helper()
	links := clustertest.NewLinks(t)
	c := clustertest.Start(t, 3, func(i int, cfg *cluster.Config) {
		links.Tune(i, cfg)
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = cutTimeout, cutTimeout, cutTimeout
		if cfg.HTTPAddr == "" {
			// Nothing listens there; a registered HTTP address is what makes a follower
			// say it forwards (Serving).
			cfg.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", 7101+i)
		}
	})
	c.WaitFor(15*time.Second, "every node to follow one ready leader and catch up", func() bool {
		l := c.LeaderIndex()
		if l < 0 {
			return false
		}
		want := c.Nodes[l].Raft().CommitIndex()
		for _, n := range c.Nodes {
			if st := n.Status(); st.LeaderID != c.Config(l).ID || st.AppliedIndex < want {
				return false
			}
		}
		return true
	})
	return c, links
}

// campaignNow makes node i start an election at once, without waiting for its heartbeat
// timeout: it sends the TimeoutNow RPC that raft's leadership transfer sends, straight to
// the node's own Raft listener. The election is flagged as a transfer, so the other
// follower votes although it still remembers the old leader.
func campaignNow(t *testing.T, c *clustertest.Cluster, links *clustertest.Links, i int) {
	t.Helper()
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("test"), Addr: []byte(trans.LocalAddr())}}
	var resp raft.TimeoutNowResponse
	if err := trans.TimeoutNow(raft.ServerID(c.Config(i).ID), raft.ServerAddress(links.Bind(i)), req, &resp); err != nil {
		t.Fatalf("TimeoutNow to %s: %v", c.Config(i).ID, err)
	}
}

// Invariant 5, the VerifyLeader step of Node.ReadBarrier. The leader is cut off from both
// followers; they elect a new leader, which commits a grant. The old leader still believes
// it leads (its lease has not run out), so without a heartbeat round it would serve the
// read from its own state, in which the lock is free. A linearizable read there must not
// answer that: it must fail with ErrNotLeader or ErrNoLeader.
func TestCluster_ReadOnCutOffLeaderIsRefused(t *testing.T) {
	c, links := startLinked(t)
	ctx := clustertest.Ctx(t, 60*time.Second)
	old := c.Leader(15 * time.Second)
	oldNode := c.Nodes[old]
	if v, err := oldNode.Locks().Status(ctx, "job", cluster.Query{}); err != nil || v.Held {
		t.Fatalf("read before the cut: %+v %v", v, err)
	}

	links.Isolate(old)
	cut := time.Now()
	next := (old + 1) % 3
	campaignNow(t, c, links, next)
	newNode := c.Nodes[next]
	c.WaitFor(10*time.Second, newNode.ID()+" to lead", newNode.IsLeader)
	led := time.Since(cut)
	g, err := newNode.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "job", Holder: cluster.Holder{NewLease: true, TTL: 60_000 * time.Millisecond, Owner: "new-term"}})
	if err != nil {
		t.Fatalf("acquire on the new leader: %v", err)
	}
	t.Logf("%s led %v after the cut and granted the lock %v after the cut", newNode.ID(), led, time.Since(cut))

	// The test only means something while the old leader still believes it leads.
	if oldNode.Raft().State() != raft.Leader || !oldNode.IsLeader() {
		t.Fatalf("precondition: %s stepped down %v after the cut, before the read was sent; raise cutTimeout", oldNode.ID(), time.Since(cut))
	}
	sent := time.Since(cut)
	type answer struct {
		v   fsm.LockView
		err error
	}
	got := make(chan answer, 1)
	go func() {
		v, err := oldNode.Locks().Status(ctx, "job", cluster.Query{})
		got <- answer{v, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(10 * cutTimeout):
		t.Fatalf("the read on the cut-off leader did not end within %v", 10*cutTimeout)
	}
	if a.err == nil {
		t.Fatalf("a linearizable read on the cut-off old leader %s answered %+v, though %s had committed a grant of the lock (token %d) before the read was sent (%v after the cut)",
			oldNode.ID(), a.v, newNode.ID(), g.Token, sent)
	}
	if !errors.Is(a.err, cluster.ErrNotLeader) && !errors.Is(a.err, cluster.ErrNoLeader) {
		t.Fatalf("read on the cut-off leader: %v, want ErrNotLeader or ErrNoLeader", a.err)
	}
	t.Logf("read sent %v after the cut to %s (still leading); refused with %q after %v", sent, oldNode.ID(), a.err, time.Since(cut)-sent)

	links.Heal()
	if v, err := newNode.Locks().Status(ctx, "job", cluster.Query{}); err != nil || !v.Held || v.Token != g.Token {
		t.Fatalf("read on the new leader: %+v %v, want held with token %d", v, err, g.Token)
	}
}

// Invariant 4: a grant is answered only after a majority has committed it. The leader is
// cut off from both followers; an acquire sent to it is appended to its own log but can
// never commit, so the client must not be told it holds the lock. After the network heals,
// nobody holds it.
func TestCluster_NoGrantWithoutMajority(t *testing.T) {
	c, links := startLinked(t)
	ctx := clustertest.Ctx(t, 60*time.Second)
	old := c.Leader(15 * time.Second)
	oldNode := c.Nodes[old]
	commit := oldNode.Raft().CommitIndex()

	links.Isolate(old)
	cut := time.Now()
	if !oldNode.IsLeader() {
		t.Fatalf("precondition: %s stepped down %v after the cut, before the acquire was sent", oldNode.ID(), time.Since(cut))
	}
	g, err := oldNode.Locks().Acquire(ctx, cluster.AcquireRequest{Name: "card/1", Holder: cluster.Holder{NewLease: true, TTL: 60_000 * time.Millisecond, Owner: "minority"}})
	if err == nil {
		t.Fatalf("the cut-off leader answered an acquire with a grant %+v (%v after the cut), though no follower could have stored the entry", g, time.Since(cut))
	}
	// The acquire must really have reached the old leader's log, uncommitted: otherwise
	// the test saw a refusal before the entry existed and proves nothing.
	if last := oldNode.Raft().LastIndex(); last <= commit || oldNode.Raft().CommitIndex() >= last {
		t.Fatalf("precondition: the acquire was not appended beyond the commit index (commit %d -> %d, last %d): %v",
			commit, oldNode.Raft().CommitIndex(), last, err)
	}
	if !errors.Is(err, cluster.ErrUnknownOutcome) && !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNoLeader) {
		t.Fatalf("acquire on the cut-off leader: %v, want a not-leader or unknown-outcome error", err)
	}
	t.Logf("acquire on the cut-off leader refused after %v: %v", time.Since(cut), err)

	// Let the majority elect a leader before healing: its newer term then decides the old
	// leader's uncommitted entry away, instead of leaving the outcome open. The election is
	// started at once, but on a loaded machine the acquire may have been answered only
	// after the followers' own timeouts, so either of them may win: the claim is about
	// the majority side, not about which node leads it. The deadline allows a few
	// elections' worth of rounds (each up to two election timeouts with raft's jitter).
	campaignNow(t, c, links, (old+1)%3)
	majority := []int{(old + 1) % 3, (old + 2) % 3}
	var l *cluster.Node
	c.WaitFor(10*cutTimeout, "a node of the majority side to lead", func() bool {
		for _, i := range majority {
			if c.Nodes[i].IsLeader() {
				l = c.Nodes[i]
				return true
			}
		}
		return false
	})
	links.Heal()
	// A read after the heal may meet a leader change (the old leader rejoins): wait for one
	// that is answered, from whichever node leads then.
	var v fsm.LockView
	c.WaitFor(10*cutTimeout, "a linearizable read of card/1 after healing", func() bool {
		i := c.LeaderIndex()
		if i < 0 {
			return false
		}
		l = c.Nodes[i]
		var err error
		v, err = l.Locks().Status(ctx, "card/1", cluster.Query{})
		return err == nil
	})
	if v.Held {
		t.Fatalf("after healing, %s reads %+v; the entry that was never committed must not grant the lock", l.ID(), v)
	}
}

// A follower whose leader has gone silent stops claiming ready (Serving "") within
// leaderSilence of the last contact, while raft still names the old leader: until the
// election timeout it would otherwise say it forwards, and the next write sent to it would
// go to a dead leader.
func TestCluster_FollowerOfASilentLeaderIsNotReady(t *testing.T) {
	c, links := startLinked(t)
	old := c.Leader(15 * time.Second)
	f := c.Nodes[(old+1)%3]
	c.WaitFor(10*time.Second, f.ID()+" to forward", func() bool { return f.Serving() == cluster.ServingForward })

	links.Isolate(old)
	cut := time.Now()
	var took time.Duration
	c.WaitFor(10*time.Second, f.ID()+" to stop claiming ready", func() bool {
		took = time.Since(cut)
		return f.Serving() == ""
	})
	// Raft's follower starts an election (and forgets the leader) only after at least
	// cutTimeout without contact: before that, only the silence check makes it not ready.
	if st := f.Status(); st.LeaderID != c.Config(old).ID || took >= cutTimeout {
		t.Fatalf("%s stopped claiming ready %v after the cut, knowing leader %q: want before %v, still naming %s",
			f.ID(), took, st.LeaderID, cutTimeout, c.Config(old).ID)
	}
	t.Logf("%s not ready %v after its leader was cut off (heartbeat timeout %v)", f.ID(), took, cutTimeout)
}
