package cluster

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	walmetrics "github.com/hashicorp/raft-wal/metrics"
	"github.com/hashicorp/raft-wal/verifier"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/tlsconf"
)

// Node is one member of a raftlock cluster. It is safe for concurrent use. Its operations
// are grouped by role, each reached by an accessor (Leases, Locks, Semaphores, Elections,
// Members, ACL, Events); the node itself holds the lifecycle, leadership and status.
type Node struct {
	cfg       Config
	log       hclog.Logger
	raft      *raft.Raft
	fsm       *fsm.FSM
	store     logStore // raft-boltdb or raft-wal (Config.LogStore)
	transport *raft.NetworkTransport
	gate      *replGate // the transport as raft sees it (replgate.go)
	closers   closers   // what New opened, closed in reverse by Shutdown

	leader   *leader   // the leader-only machinery and the cluster clock (leader.go)
	prop     *proposer // stamps, proposes and answers commands (proposer.go)
	renewer  *renewer  // batches keepalives into Renew entries (renew.go)
	registry *registry // routes state machine events to waits and watches (registry.go)
	stream   *stream   // recent lock events for subscribers (events.go)
	changes  *changes  // recent changes of names, for blocking reads of many (changes.go)
	applied  *appliedWaiter
	watch    leaderWatch
	storage  *storageHealth
	counters applyCounters  // grants and handovers applied (metrics.go)
	verify   verifyCounters // log verification reports (verify.go)

	stopping chan struct{}
	stopOnce sync.Once
	halted   chan struct{} // closed when the state machine halts
	haltOnce sync.Once

	leases     *Leases
	locks      *Locks
	semaphores *Semaphores
	elections  *Elections
	members    *Members
	acl        *ACL
	events     *Events

	stagger *snapStagger         // keeps this node's snapshots at its own phase
	peers   *tlsconf.StreamLayer // the Raft port's TLS layer; nil without TLS

	// leaseIDs counts the IDs this node settled for requests that create their lease
	// (drawn, or derived from a request_id): work of a request served here, which a
	// follower never does for a request it forwards (transport/place.go). Metrics.
	leaseIDs atomic.Uint64
}

// New opens (or creates) the node's stores under cfg.DataDir, starts raft, and
// bootstraps the cluster when cfg.Bootstrap is set and there is no prior state.
func New(cfg Config) (_ *Node, err error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := newNode(cfg)
	defer func() {
		if err != nil {
			n.closers.close()
		}
	}()
	st, err := openStores(cfg, n.storage, &n.closers, n.stagger.snapshotted, n.verify.report(n.log.Named("verify")))
	if err != nil {
		return nil, err
	}
	n.store = st.log
	var peers *tlsconf.StreamLayer
	if n.transport, peers, err = openRaftTransport(cfg); err != nil {
		return nil, err
	}
	n.closers.add(n.transport.Close)
	n.gate = newReplGate(n.transport, cfg.HeartbeatTimeout)
	if n.raft, err = startRaft(cfg, n.machine(), st, n.gate, n.leader.notifyCh, n.stagger); err != nil {
		return nil, err
	}
	n.gate.watch(n.raft)
	n.stagger.start(n.raft)
	n.log.Info("snapshots staggered", "threshold", cfg.SnapshotThreshold, "phase", n.stagger.phase, "first_threshold", n.stagger.set.Load())
	if peers != nil {
		peers.SetAdmit(n.members.admitted)
		n.peers = peers
	}
	n.closers.add(func() error { return n.raft.Shutdown().Error() })
	n.closers.add(n.gate.close) // closed first: held replication failures return at once
	if err := bootstrap(cfg, n.raft, st, n.log); err != nil {
		return nil, err
	}
	n.watch.start(n.raft, n.stopping)
	go n.leader.run()
	return n, nil
}

// newNode builds a node's parts, before anything is opened.
func newNode(cfg Config) *Node {
	n := &Node{
		cfg:      cfg,
		log:      cfg.Logger.Named("cluster"),
		registry: newRegistry(),
		stream:   newStream(cfg.EventBacklog, cfg.EventSubscribers),
		changes:  newChanges(),
		applied:  newAppliedWaiter(),
		stopping: make(chan struct{}),
		halted:   make(chan struct{}),
		storage:  newStorageHealth(),
		watch:    leaderWatch{changed: make(chan struct{})},
	}
	n.stagger = newSnapStagger(cfg, n.log)
	n.fsm = fsm.NewWithOptions(fsm.Options{Observe: n.observe, MaxVersion: cfg.MaxVersion})
	n.leader = newLeader(n)
	n.prop = &proposer{n: n}
	n.renewer = &renewer{n: n, ch: make(chan *renewReq, 1024)}
	n.leases = &Leases{n: n}
	n.locks = &Locks{n: n}
	n.semaphores = &Semaphores{n: n}
	n.elections = &Elections{n: n}
	n.members = &Members{n: n}
	n.acl = &ACL{n: n}
	n.events = &Events{n: n}
	return n
}

// closers is a list of things to close, closed in reverse order of opening.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

// close closes everything in reverse order and returns the first error.
func (c closers) close() error {
	var first error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i](); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// stores are the node's raft stores, opened under the data directory.
type stores struct {
	log    logStore           // the log and stable store
	logs   raft.LogStore      // log, cached and watched
	stable raft.StableStore   // stable store, watched
	snaps  raft.SnapshotStore // file snapshots, private to the node's user

	mayStand func() error // raft's CandidacyCheck: storageHealth.mayStand
}

// openStores takes the data directory's lock and opens the log, stable and snapshot
// stores, adding each to cl.
func openStores(cfg Config, h *storageHealth, cl *closers, written func(index uint64), report verifier.ReportFn) (stores, error) {
	unlock, err := openDataDir(cfg.DataDir)
	if err != nil {
		return stores{}, err
	}
	cl.add(func() error { unlock(); return nil })
	kind, why, err := ResolveLogStore(cfg.DataDir, cfg.LogStore)
	if err != nil {
		return stores{}, err
	}
	logStoreChosen(cfg.Logger.Named("cluster"), cfg.DataDir, cfg.LogStore, kind, why)
	store, err := openLogStore(cfg.DataDir, kind, cfg.WALSegmentSize, cfg.Logger)
	if err != nil {
		return stores{}, err
	}
	if w, ok := store.(*walStore); ok {
		w.fatal = func(err error) {
			h.fail(err)
			cfg.Logger.Named("cluster").Error("STORAGE FAILED: an fsync of the Raft log failed; this node writes nothing more. "+
				"Its process exits so that its supervisor starts it again on what the disk holds; check the disk (dmesg, SMART)",
				"error", err, "data_dir", cfg.DataDir)
		}
	}
	gate := &closeGate{}
	cl.add(func() error { gate.close(); return store.Close() })
	var watched raft.LogStore = watchedLogs{LogStore: store, h: h, budget: cfg.Budget, node: cfg.ID}
	if cfg.VerifyInterval > 0 {
		v := verifier.NewLogStore(watched, isCheckpoint, report, &walmetrics.NoOpCollector{})
		cl.add(v.Close) // stops its goroutine; the store below is closed on its own
		watched = verifiedLogs{v}
	}
	logs, err := raft.NewLogCache(512, watched)
	if err != nil {
		return stores{}, fmt.Errorf("cluster: log cache: %w", err)
	}
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, cfg.Logger.Named("snapshots"))
	if err != nil {
		return stores{}, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	snaps := privateSnapshots{SnapshotStore: fileSnaps, dir: filepath.Join(cfg.DataDir, "snapshots"), written: written}
	if err := restrictTree(snaps.dir); err != nil { // also snapshots written by older versions
		return stores{}, fmt.Errorf("cluster: making snapshots private: %w", err)
	}
	need := uint64(1 << 20)
	if w, ok := store.(*walStore); ok {
		need = w.roomNeeded()
	}
	probe := func() error { return probeDataDir(cfg.DataDir, need) }
	return stores{log: store, logs: logs, stable: watchedStable{StableStore: store, h: h, gate: gate}, snaps: snaps,
		mayStand: func() error { return h.mayStand(probe) }}, nil
}

// openRaftTransport listens on cfg.RaftBind, with TLS when cfg.TLS is set (and then
// returns the TLS stream layer too, whose admission New ties to the membership).
func openRaftTransport(cfg Config) (*raft.NetworkTransport, *tlsconf.StreamLayer, error) {
	var advertise net.Addr // nil: advertise the listener's own address
	if cfg.RaftAdvertise != cfg.RaftBind {
		var err error
		if advertise, err = net.ResolveTCPAddr("tcp", cfg.RaftAdvertise); err != nil {
			return nil, nil, fmt.Errorf("cluster: raft advertise address %q: %w", cfg.RaftAdvertise, err)
		}
	}
	// One AppendEntries in flight per follower (raft's pipelining off): the replicator
	// waits for each answer itself instead of handing it through two more goroutines.
	// raft batches the entries queued meanwhile into the next request, so on a LAN
	// nothing is lost by it: alternated runs measured the single client's cycle p50 3-4 %
	// lower and parallel throughput 3-5 % higher (docs/PERFORMANCE.md, round five).
	tc := &raft.NetworkTransportConfig{MaxPool: 5, Timeout: 10 * time.Second, Logger: cfg.Logger.Named("raft-net"), MaxRPCsInFlight: 1}
	if cfg.TLS != nil {
		stream, err := tlsconf.NewStreamLayer(cfg.RaftBind, advertise, cfg.TLS)
		if err != nil {
			return nil, nil, fmt.Errorf("cluster: raft TLS transport on %s: %w", cfg.RaftBind, err)
		}
		tc.Stream = stream
		return raft.NewNetworkTransportWithConfig(tc), stream, nil
	}
	trans, err := raft.NewTCPTransportWithConfig(cfg.RaftBind, advertise, tc)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: raft transport on %s: %w", cfg.RaftBind, err)
	}
	return trans, nil, nil
}

// startRaft starts raft on the stores, reporting leadership changes on notify.
// Its snapshot threshold is the stagger's: the distance from the newest snapshot on disk to
// this node's next phase point.
func startRaft(cfg Config, machine raft.FSM, st stores, trans raft.Transport, notify chan bool, stagger *snapStagger) (*raft.Raft, error) {
	var last uint64
	if metas, err := st.snaps.List(); err == nil && len(metas) > 0 {
		last = metas[0].Index // newest first
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = stagger.initial(last)
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.NotifyCh = notify
	rc.CandidacyCheck = st.mayStand
	rc.Logger = cfg.Logger.Named("raft")
	r, err := raft.NewRaft(rc, machine, st.logs, st.stable, st.snaps, trans)
	if err != nil {
		return nil, fmt.Errorf("cluster: starting raft: %w", err)
	}
	return r, nil
}

// bootstrap writes the configured voters as the first configuration when the stores
// hold no raft state yet.
func bootstrap(cfg Config, r *raft.Raft, st stores, log hclog.Logger) error {
	if len(cfg.Bootstrap) == 0 {
		return nil
	}
	has, err := raft.HasExistingState(st.logs, st.log, st.snaps)
	if err != nil {
		return fmt.Errorf("cluster: reading raft state: %w", err)
	}
	if has {
		return nil
	}
	var servers []raft.Server
	for _, p := range cfg.Bootstrap {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
	}
	if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	log.Info("bootstrapped a new cluster", "voters", len(servers))
	return nil
}

// machine is the state machine raft applies to: the node's, timed for the latency budget
// when one is configured.
func (n *Node) machine() raft.FSM {
	if n.cfg.Budget != nil {
		return budgetFSM{FSM: n.fsm, budget: n.cfg.Budget, node: n.cfg.ID}
	}
	return n.fsm
}

// Leases returns the node's lease operations.
func (n *Node) Leases() *Leases { return n.leases }

// Locks returns the node's lock operations.
func (n *Node) Locks() *Locks { return n.locks }

// Semaphores returns the node's semaphore operations.
func (n *Node) Semaphores() *Semaphores { return n.semaphores }

// Elections returns the node's election operations.
func (n *Node) Elections() *Elections { return n.elections }

// Members returns the node's membership operations.
func (n *Node) Members() *Members { return n.members }

// ACL returns the node's ACL operations.
func (n *Node) ACL() *ACL { return n.acl }

// Events returns the node's event stream, history and dashboard reads.
func (n *Node) Events() *Events { return n.events }

// RaftAddr returns the Raft address other nodes dial.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }

// LogBounds returns the first and last index held in the node's log store; entries before
// first have been compacted into a snapshot.
func (n *Node) LogBounds() (first, last uint64, err error) {
	if first, err = n.store.FirstIndex(); err != nil {
		return 0, 0, err
	}
	last, err = n.store.LastIndex()
	return first, last, err
}

// Halted returns a channel closed when the node's state machine halts on a command it
// does not know. The node then serves nothing; its process should log and exit (a
// supervisor restarting it would only halt again until it is upgraded).
func (n *Node) Halted() <-chan struct{} { return n.halted }

// HaltErr returns why the state machine halted, or nil.
func (n *Node) HaltErr() error { return n.fsm.Halted() }

// ID returns the node's server ID.
func (n *Node) ID() string { return n.cfg.ID }

// FSM returns the node's state machine, for reads that need no consensus.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Raft returns the underlying raft instance, for tests and diagnostics.
func (n *Node) Raft() *raft.Raft { return n.raft }

// StepDown hands leadership to another voter when this node leads, so that a node about
// to stop stops being the one every write waits on before it stops serving. It returns
// once raft reports the transfer done (or failed: the node then stops as a leader and the
// cluster elects after a timeout).
func (n *Node) StepDown() {
	if n.raft.State() != raft.Leader || len(n.servers()) < 2 {
		return
	}
	start := time.Now()
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		n.log.Warn("handing leadership over before stopping failed", "error", err)
		return
	}
	n.log.Info("handed leadership over before stopping", "took", time.Since(start).Round(time.Millisecond))
}

// Shutdown stops the node. A leader first tries to hand leadership to another voter, so
// that a rolling restart costs no election timeout.
func (n *Node) Shutdown() error {
	var err error
	n.stopOnce.Do(func() {
		if n.raft.State() == raft.Leader && len(n.servers()) > 1 {
			if terr := n.raft.LeadershipTransfer().Error(); terr != nil {
				n.log.Debug("leadership transfer before shutdown failed", "error", terr)
			}
		}
		close(n.stopping)
		n.stream.shutdown()
		err = n.closers.close()
		<-n.leader.loopDone
		n.leader.stop()
	})
	return err
}

func (n *Node) servers() []raft.Server {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// wait waits for a raft future, or for this node to shut down: raft does not answer
// futures still queued when it shuts down.
func (n *Node) wait(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.stopping:
		return raft.ErrRaftShutdown
	}
}

// observe receives the state machine's events on raft's FSM goroutine.
func (n *Node) observe(e fsm.Event) {
	n.stream.observe(e)
	n.changes.observe(e)
	n.counters.observe(e)
	switch e.Kind {
	case fsm.EventApplied:
		n.applied.advance(e.Index)
		n.leader.kickTicks()
	case fsm.EventRestored:
		n.applied.advance(e.Index)
		n.registry.restored(n.fsm)
	case fsm.EventHalted:
		n.haltOnce.Do(func() {
			n.log.Error("STATE MACHINE HALTED: the log holds a command this node does not know; "+
				"it applies nothing more, so that it cannot diverge from the other nodes. "+
				"Upgrade this node to the release the rest of the cluster runs, then start it again.",
				"index", e.Index, "error", e.Err, "node_max_version", n.fsm.MaxVersion())
			close(n.halted)
		})
	default:
		n.registry.deliver(e)
	}
}
