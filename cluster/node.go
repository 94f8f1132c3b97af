package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/leases"
	"github.com/raftlock/raftlock/tlsconf"
)

// Node is one member of a raftlock cluster. It is safe for concurrent use.
type Node struct {
	cfg       Config
	log       hclog.Logger
	raft      *raft.Raft
	fsm       *fsm.FSM
	store     logStore // raft-boltdb or raft-wal (Config.LogStore)
	transport *raft.NetworkTransport
	clock     *leases.Clock

	// leadership state, replaced on every leadership change
	leaderMu  sync.Mutex
	leaderCtx context.CancelFunc
	termDone  <-chan struct{} // closed when the current term's leader machinery stops
	readyCh   chan struct{}   // closed when this term's leader is ready
	ready     atomic.Bool
	leaderWG  sync.WaitGroup

	lastProposal atomic.Int64 // cluster time of the latest proposal, for the tick loop
	kick         chan struct{}
	renewCh      chan *renewReq

	faults   atomic.Pointer[faults] // nil except in tests (export_test.go)
	events   *registry
	stream   *stream // recent lock events for subscribers (stream.go)
	applied  *appliedWaiter
	stopping chan struct{}
	stopOnce sync.Once
	notifyCh chan bool
	loopDone chan struct{}

	unlockDir func() // releases the data directory's lock file

	storage  storageHealth
	halted   chan struct{} // closed when the state machine halts
	haltOnce sync.Once

	leaderWatchMu sync.Mutex
	leaderChanged chan struct{} // closed and replaced at every leader change
	observer      *raft.Observer

	counters applyCounters // grants and handovers applied (overview.go)
}

// New opens (or creates) the node's stores under cfg.DataDir, starts raft, and
// bootstraps the cluster when cfg.Bootstrap is set and there is no prior state.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	unlock, err := openDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	unlockDir := sync.OnceFunc(unlock)
	ok := false
	defer func() {
		if !ok {
			unlockDir()
		}
	}()
	n := &Node{
		cfg:           cfg,
		log:           cfg.Logger.Named("cluster"),
		clock:         leases.NewClock(nil),
		readyCh:       make(chan struct{}),
		kick:          make(chan struct{}, 1),
		renewCh:       make(chan *renewReq, 1024),
		events:        newRegistry(),
		stream:        newStream(cfg.EventBacklog, cfg.EventSubscribers),
		applied:       newAppliedWaiter(),
		stopping:      make(chan struct{}),
		notifyCh:      make(chan bool, 16),
		loopDone:      make(chan struct{}),
		unlockDir:     unlockDir,
		leaderChanged: make(chan struct{}),
		halted:        make(chan struct{}),
	}
	n.fsm = fsm.NewWithOptions(fsm.Options{Observe: n.observe, MaxVersion: cfg.MaxVersion})

	store, err := openLogStore(cfg.DataDir, cfg.LogStore, cfg.Logger)
	if err != nil {
		return nil, err
	}
	n.store = store
	logs, err := raft.NewLogCache(512, watchedLogs{LogStore: store, h: &n.storage, budget: cfg.Budget, node: cfg.ID})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("cluster: log cache: %w", err)
	}
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, cfg.Logger.Named("snapshots"))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	snaps := privateSnapshots{SnapshotStore: fileSnaps, dir: filepath.Join(cfg.DataDir, "snapshots")}
	if err := restrictTree(snaps.dir); err != nil { // also snapshots written by older versions
		store.Close()
		return nil, fmt.Errorf("cluster: making snapshots private: %w", err)
	}
	var advertise net.Addr // nil: advertise the listener's own address
	if cfg.RaftAdvertise != cfg.RaftBind {
		if advertise, err = net.ResolveTCPAddr("tcp", cfg.RaftAdvertise); err != nil {
			store.Close()
			return nil, fmt.Errorf("cluster: raft advertise address %q: %w", cfg.RaftAdvertise, err)
		}
	}
	var trans *raft.NetworkTransport
	if cfg.TLS != nil {
		stream, serr := tlsconf.NewStreamLayer(cfg.RaftBind, advertise, cfg.TLS)
		if serr != nil {
			store.Close()
			return nil, fmt.Errorf("cluster: raft TLS transport on %s: %w", cfg.RaftBind, serr)
		}
		trans = raft.NewNetworkTransportWithLogger(stream, 5, 10*time.Second, cfg.Logger.Named("raft-net"))
	} else {
		trans, err = raft.NewTCPTransportWithLogger(cfg.RaftBind, advertise, 5, 10*time.Second, cfg.Logger.Named("raft-net"))
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("cluster: raft transport on %s: %w", cfg.RaftBind, err)
		}
	}
	n.transport = trans

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.NotifyCh = n.notifyCh
	rc.Logger = cfg.Logger.Named("raft")

	var machine raft.FSM = n.fsm
	if cfg.Budget != nil {
		machine = budgetFSM{FSM: n.fsm, budget: cfg.Budget, node: cfg.ID}
	}
	r, err := raft.NewRaft(rc, machine, logs, watchedStable{StableStore: store, h: &n.storage}, snaps, trans)
	if err != nil {
		trans.Close()
		store.Close()
		return nil, fmt.Errorf("cluster: starting raft: %w", err)
	}
	n.raft = r

	if len(cfg.Bootstrap) > 0 {
		has, err := raft.HasExistingState(logs, store, snaps)
		if err != nil {
			n.closeRaft()
			return nil, fmt.Errorf("cluster: reading raft state: %w", err)
		}
		if !has {
			var servers []raft.Server
			for _, p := range cfg.Bootstrap {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
			}
			if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				n.closeRaft()
				return nil, fmt.Errorf("cluster: bootstrap: %w", err)
			}
			n.log.Info("bootstrapped a new cluster", "voters", len(servers))
		}
	}
	// Leader changes are observed without blocking raft: a dropped observation still
	// leaves one queued, and every wake-up re-reads the leader.
	obs := make(chan raft.Observation, 64)
	n.observer = raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(n.observer)
	go n.watchLeader(obs)
	go n.leadershipLoop()
	ok = true
	return n, nil
}

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
		err = n.closeRaft()
		<-n.loopDone
		n.stopLeading()
	})
	return err
}

func (n *Node) closeRaft() error {
	err := n.raft.Shutdown().Error()
	if cerr := n.transport.Close(); err == nil {
		err = cerr
	}
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	n.unlockDir()
	return err
}

func (n *Node) servers() []raft.Server {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// observe receives the state machine's events on raft's FSM goroutine.
func (n *Node) observe(e fsm.Event) {
	n.stream.observe(e)
	n.counters.observe(e)
	switch e.Kind {
	case fsm.EventApplied:
		n.applied.advance(e.Index)
		select {
		case n.kick <- struct{}{}:
		default:
		}
	case fsm.EventRestored:
		n.applied.advance(e.Index)
		n.events.restored(n.fsm)
	case fsm.EventHalted:
		n.haltOnce.Do(func() {
			n.log.Error("STATE MACHINE HALTED: the log holds a command this node does not know; "+
				"it applies nothing more, so that it cannot diverge from the other nodes. "+
				"Upgrade this node to the release the rest of the cluster runs, then start it again.",
				"index", e.Index, "error", e.Err, "node_max_version", n.fsm.MaxVersion())
			close(n.halted)
		})
	default:
		n.events.deliver(e)
	}
}
