package cluster_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// An idle cluster with no leases writes nothing; with a live lease the leader ticks at
// least every TickInterval, so a failover lengthens a lease by at most that much.
//
// The verdict comes from the log itself, read back from the leader's raft.db after the
// run: the cluster time each entry was stamped with. While a lease lives, consecutive
// entries are at most TickInterval + tickSlack apart in cluster time; across each idle
// span (before the first lease, after the last one is revoked) no entry at all was written
// although the span covers at least 3 × TickInterval of cluster time. The real-time waits
// only let time pass; whatever the machine's speed, the stamps decide.
func TestCluster_TicksOnlyWhileLeasesExist(t *testing.T) {
	const (
		tickInterval = 300 * time.Millisecond
		// tickSlack is how late a tick may be stamped: its timer fires and its goroutine
		// runs late on a loaded machine (the race detector, two shared cores). Ticks that
		// came at twice the interval would exceed it.
		tickSlack = tickInterval / 2
		quiet     = 3 * tickInterval
		minTicks  = 6
	)
	c := clustertest.Start(t, 3, func(i int, cfg *cluster.Config) {
		cfg.TickInterval = tickInterval
		cfg.LogStore = cluster.LogStoreBoltDB // read back below with raft-boltdb
	})
	ctx := clustertest.Ctx(t, 30*time.Second)
	li := c.Leader(15 * time.Second)
	l := c.Nodes[li]
	c.WaitFor(5*time.Second, "the leader to register itself", func() bool { return !l.Members().NeedsRegistration() && !l.Members().NeedsVersionRegistration() })
	c.WaitFor(5*time.Second, "the leader to apply its log", func() bool { return l.FSM().AppliedIndex() >= l.Raft().LastIndex() })
	idleFrom := l.Raft().LastIndex()
	term := l.Raft().CurrentTerm()

	pass := func(d time.Duration) {
		start := time.Now()
		c.WaitFor(d+10*time.Second, d.String()+" to pass", func() bool { return time.Since(start) > d })
	}
	pass(quiet + tickInterval)
	lease, err := l.Leases().Create(ctx, 60_000*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	created := l.FSM().AppliedIndex()
	c.WaitFor(10*time.Second, "ticks while the lease lives", func() bool { return l.FSM().AppliedIndex() >= created+minTicks })
	if _, err := l.Leases().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	pass(quiet + tickInterval)
	// A marker entry that creates no lease: revoking a lease that does not exist.
	if _, err := l.Leases().Revoke(ctx, fsm.LeaseID{0xfe, 0xed}); !errors.Is(err, cluster.ErrLeaseNotFound) {
		t.Fatalf("marker revoke: %v, want ErrLeaseNotFound", err)
	}
	end := l.Raft().LastIndex()
	if l.Raft().CurrentTerm() != term {
		t.Fatalf("leadership changed during the measurement (term %d -> %d); tick gaps cannot be judged", term, l.Raft().CurrentTerm())
	}
	c.Shutdown()

	entries := readLog(t, filepath.Join(c.Config(li).DataDir, "raft.db"), idleFrom, end)
	var cmds []stamped
	for _, e := range entries {
		if e.Type != raft.LogCommand {
			t.Fatalf("entry %d is %s, not a command: the leader changed during the measurement", e.Index, e.Type)
		}
		cmd, err := fsm.DecodeCommand(e.Data)
		if err != nil {
			t.Fatalf("entry %d: %v", e.Index, err)
		}
		cmds = append(cmds, stamped{e.Index, cmd})
	}
	// cmds[0] is the last entry before the first idle span, then: CreateLease, ticks (and
	// nothing else) up to the Revoke, possibly a tick already in flight when the lease went,
	// then the marker.
	if len(cmds) < 4 || cmds[1].c.Type != fsm.TypeCreateLease {
		t.Fatalf("an idle cluster wrote entry %d (type %d) before any lease existed; log from %d: %v", cmds[1].index, cmds[1].c.Type, idleFrom, types(cmds))
	}
	if gap := ms(cmds[1].c.Now - cmds[0].c.Now); gap < quiet {
		t.Fatalf("the idle span before the lease covered only %v of cluster time, want at least %v", gap, quiet)
	}
	ticks, i, widest := 0, 2, time.Duration(0)
	for ; i < len(cmds); i++ {
		gap := ms(cmds[i].c.Now - cmds[i-1].c.Now)
		widest = max(widest, gap)
		if gap > tickInterval+tickSlack {
			t.Fatalf("while a lease lived, entries %d and %d are %v apart in cluster time; the bound is TickInterval %v + %v",
				cmds[i-1].index, cmds[i].index, gap, tickInterval, tickSlack)
		}
		if cmds[i].c.Type == fsm.TypeRevoke {
			break
		}
		if cmds[i].c.Type != fsm.TypeTick {
			t.Fatalf("unexpected entry %d (type %d) while the lease lived", cmds[i].index, cmds[i].c.Type)
		}
		ticks++
	}
	if ticks < minTicks || i >= len(cmds)-1 {
		t.Fatalf("%d ticks while the lease lived, want at least %d; log: %v", ticks, minTicks, types(cmds))
	}
	revoked := cmds[i].c.Now
	last := cmds[i]
	for i++; i < len(cmds)-1; i++ {
		// Only a tick proposed before the revoke was applied may follow it.
		if cmds[i].c.Type != fsm.TypeTick || ms(cmds[i].c.Now-revoked) >= tickInterval {
			t.Fatalf("after the last lease was revoked (entry %d) the idle cluster wrote entry %d (type %d) %v later",
				last.index, cmds[i].index, cmds[i].c.Type, ms(cmds[i].c.Now-revoked))
		}
		last = cmds[i]
	}
	marker := cmds[len(cmds)-1]
	if marker.c.Type != fsm.TypeRevoke || marker.index != end {
		t.Fatalf("the log ends with entry %d (type %d), want the marker revoke at %d", marker.index, marker.c.Type, end)
	}
	if gap := ms(marker.c.Now - last.c.Now); gap < quiet {
		t.Fatalf("the idle span after the revoke covered only %v of cluster time, want at least %v", gap, quiet)
	}
	t.Logf("%d ticks while the lease lived, at most %v apart; no entry across idle spans of %v and %v", ticks, widest, ms(cmds[1].c.Now-cmds[0].c.Now), ms(marker.c.Now-last.c.Now))
}

func ms(d int64) time.Duration { return time.Duration(d) * time.Millisecond }

// stamped is a log entry's index and its command.
type stamped struct {
	index uint64
	c     fsm.Command
}

func types(cmds []stamped) []fsm.Type {
	var out []fsm.Type
	for _, c := range cmds {
		out = append(out, c.c.Type)
	}
	return out
}

// readLog returns entries from..to of a stopped node's log store.
func readLog(t *testing.T, path string, from, to uint64) []raft.Log {
	t.Helper()
	store, err := raftboltdb.NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out []raft.Log
	for i := from; i <= to; i++ {
		var e raft.Log
		if err := store.GetLog(i, &e); err != nil {
			t.Fatalf("reading entry %d of %s: %v", i, path, err)
		}
		out = append(out, e)
	}
	return out
}
