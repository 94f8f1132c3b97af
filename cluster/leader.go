package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// leader is the leader-only machinery of a node: it follows raft's leadership
// notifications, and for each term it leads starts the cluster clock, makes the node
// ready, and runs the tick, renew and upgrade loops until the term ends.
type leader struct {
	n        *Node
	clock    *leases.Clock
	notifyCh chan bool     // raft's leadership notifications
	loopDone chan struct{} // closed when run returns
	kick     chan struct{} // wakes the tick loop after an entry is applied

	// the term's state, replaced on every leadership change
	mu       sync.Mutex
	cancel   context.CancelFunc
	termDone <-chan struct{} // closed when the current term's leader machinery stops
	readyCh  chan struct{}   // closed when this term's leader is ready
	ready    atomic.Bool
	fresh    atomic.Bool // settling a fresh cluster's protocol version (settleFreshVersion)
	wg       sync.WaitGroup
}

func newLeader(n *Node) *leader {
	return &leader{
		n:        n,
		clock:    leases.NewClock(nil),
		notifyCh: make(chan bool, 16),
		loopDone: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		readyCh:  make(chan struct{}),
	}
}

// run follows raft's leadership notifications and starts or stops the leader-only
// machinery, until the node stops.
func (l *leader) run() {
	defer close(l.loopDone)
	for {
		select {
		case <-l.n.stopping:
			return
		case isLeader := <-l.notifyCh:
			l.n.stagger.lead(isLeader)
			if isLeader {
				l.start()
			} else {
				l.stop()
			}
		}
	}
}

func (l *leader) start() {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.termDone = ctx.Done()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.lead(ctx)
	}()
}

// stop stops the clock first, so that nothing more is stamped in a term this node no
// longer leads, then waits for the leader goroutines.
//
// The term's context is cancelled while mu is held: lead marks the node ready only under
// mu after checking that context, so once stop has released the lock no deposed term can
// mark this node ready.
func (l *leader) stop() {
	l.mu.Lock()
	cancel := l.cancel
	l.cancel = nil
	l.termDone = nil
	if cancel != nil {
		cancel()
	}
	if l.ready.Load() {
		l.ready.Store(false)
		l.readyCh = make(chan struct{})
	}
	l.mu.Unlock()
	l.clock.Stop()
	if cancel != nil {
		l.wg.Wait()
		l.n.log.Info("stepped down")
	}
}

// lead runs for one leadership term.
func (l *leader) lead(ctx context.Context) {
	n := l.n
	start := time.Now()
	// Apply everything committed before this term: only then is fsm.Time the newest
	// cluster time in the log, the base that this term's clock counts from.
	for !mutant.Is("no-barrier") {
		err := n.wait(n.raft.Barrier(n.cfg.ApplyTimeout))
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
			return
		}
		// A leadership transfer in progress (a node handing over before it stops) refuses
		// the barrier at once: wait a little rather than spin and flood the log.
		if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			n.log.Debug("barrier refused while leadership is being transferred; retrying", "error", err)
		} else {
			n.log.Warn("barrier failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	base := n.fsm.Time()
	if mutant.Is("clock-wall-base") {
		base = time.Now().UnixMilli()
	}
	l.clock.Start(base)
	// A Tick of this term makes the first entry the state machine sees in the term, so a
	// read that waits for the commit index is never stranded behind a no-op.
	if err := l.applyDuty(ctx, &fsm.Command{Type: fsm.TypeTick}); err != nil {
		return
	}
	l.settleFreshVersion(ctx)
	l.mu.Lock()
	if ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	l.ready.Store(true)
	close(l.readyCh)
	l.mu.Unlock()
	n.log.Info("leading", "cluster_time_ms", base, "ready_after", time.Since(start).Round(time.Millisecond))

	if self, ok := n.fsm.Node(n.cfg.ID); !ok || self.HTTPAddr != n.cfg.HTTPAddr || self.RaftAddr != n.RaftAddr() {
		if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeRegisterNode, Node: n.members.Self()}); err != nil {
			n.log.Warn("registering this node failed", "error", err)
		}
	}
	done := make(chan struct{}, 3)
	go func() {
		defer func() { done <- struct{}{} }()
		n.renewer.loop(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		l.upgradeLoop(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		l.verifyLoop(ctx)
	}()
	l.tickLoop(ctx)
	<-done
	<-done
	<-done
}

// kickTicks wakes the tick loop to look at the deadlines again; it never blocks.
func (l *leader) kickTicks() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// tickLoop proposes a Tick at the earliest pending deadline, and at least every
// TickInterval while leases exist, so that expiry happens on time and a failover lengthens
// a lease by at most TickInterval plus the election. An idle cluster writes nothing.
func (l *leader) tickLoop(ctx context.Context) {
	n := l.n
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now, ok := l.clock.Now()
		if !ok {
			return
		}
		wait, pending := time.Hour, false
		if next, has := n.fsm.NextDeadline(); has {
			pending = true
			wait = dur(next - now)
			if n.fsm.LeaseCount() > 0 {
				idle := dur(n.prop.lastProposal.Load()-now) + n.cfg.TickInterval
				wait = min(wait, idle)
			}
		}
		if pending && wait <= 0 {
			start := time.Now()
			if err := l.applyDuty(ctx, &fsm.Command{Type: fsm.TypeTick}); err != nil {
				return
			}
			if !l.paceSweep(ctx, time.Since(start)) {
				return
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// sweepPace is how long the tick loop pauses after a tick that left sweep work over, as a
// multiple of that tick's own commit time (a variable so that tests can stretch it).
//
// Why pause at all. A mass expiry or a token's deletion leaves the sliced sweep (fsm/sweep.go)
// work for hundreds of entries, and each tick is proposed the moment the previous one is
// applied, so without a pause the commit path carries nothing but full sweep entries, one
// behind the other, and every other tenant's command queues between them on every node. With a
// pause as long as the tick took, the sweep's ticks hold the commit path at most about half the
// time, a budget that follows the machine's speed (etcd bounds the same work with a fixed
// lease revocation rate). Alternated runs of `raftlock-bench neighbour` (docs/PERFORMANCE.md,
// "Isolation between tenants") measured the neighbour's p99 during a 200,000-lock expiry at
// 33.8 and 38.6 ms against 69.9 and 58.9 without the pause, with the time to end every lock
// unchanged (2.8-3.0 s): the commands of other clients sweep too, each after its own work and
// within the same per-entry budget (fsm.TestSweep_MassExpiryIsSliced counts them among the
// sweep's entries). A pause of three times the tick did no better.
// TestLeader_PacesASweepThatCarriesOver asserts the pause and its cap.
var sweepPace = 1.0

// paceSweep pauses the tick loop after a tick that took took, when the sweep still has
// work left (a mass expiry, a deleted token's leases), for sweepPace times took and at most
// TickInterval, so that cluster time never stands still longer than it would between two
// idle ticks. It reports false when ctx ended.
func (l *leader) paceSweep(ctx context.Context, took time.Duration) bool {
	n := l.n
	next, has := n.fsm.NextDeadline()
	if !has || next > n.fsm.Time() {
		return true // nothing carried over: the next tick waits for its deadline
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(min(time.Duration(sweepPace*float64(took)), n.cfg.TickInterval)):
		return true // (since Go 1.23 an unfired time.After timer is collected with its channel)
	}
}

// applyDuty applies a command the leader owes the cluster (a tick). A failure is retried
// with backoff for as long as this node still leads; a leader that cannot get its clock's
// entries committed for DutyTimeout hands leadership to another voter rather than sit on
// the cluster with expiries stalled. It returns nil once the command is applied, or the
// error that ended the term's duties.
func (l *leader) applyDuty(ctx context.Context, c *fsm.Command) error {
	n := l.n
	backoff := 20 * time.Millisecond
	var first time.Time
	for attempt := 1; ; attempt++ {
		cmd := *c
		_, err := n.prop.apply(&cmd)
		if err == nil {
			if attempt > 1 {
				n.log.Info("leader duty recovered", "command", c.Type, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil || n.raft.State() != raft.Leader || errors.Is(err, ErrShutdown) {
			return err
		}
		if first.IsZero() {
			first = time.Now()
		}
		if time.Since(first) >= n.cfg.DutyTimeout {
			n.log.Error("cannot commit the leader's clock entries; handing leadership over", "command", c.Type, "failing_for", time.Since(first).Round(time.Millisecond), "error", err)
			if terr := n.raft.LeadershipTransfer().Error(); terr != nil {
				n.log.Error("leadership transfer failed; stepping down is left to raft", "error", terr)
			}
			return err
		}
		n.log.Warn("leader duty failed; retrying while this node leads", "command", c.Type, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// waitReady waits until this node is a ready leader, for at most ApplyTimeout, or
// returns ErrNotLeader at once when another node leads.
func (l *leader) waitReady(ctx context.Context) error {
	n := l.n
	if err := n.storage.check(); err != nil {
		return err // not even forwarded: this node is not healthy enough to take part
	}
	if l.ready.Load() {
		return nil
	}
	if n.raft.State() != raft.Leader {
		return notLeader(n.raft)
	}
	l.mu.Lock()
	ch := l.readyCh
	l.mu.Unlock()
	t := time.NewTimer(n.cfg.ApplyTimeout)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return ErrNoLeader
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNoLeader, ctx.Err())
	case <-n.stopping:
		return ErrShutdown
	}
}

// term returns a channel closed when this node's current leadership term ends, or nil
// when it does not lead.
func (l *leader) term() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.termDone
}
