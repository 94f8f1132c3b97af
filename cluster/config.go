package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/tlsconf"
)

// DefaultFreshVersionWait is the FreshVersionWait of a node with an HTTP API: members
// register within milliseconds of the leader's election, so the wait ends at once unless a
// member is down at bootstrap, which then costs this once.
const DefaultFreshVersionWait = 3 * time.Second

// DefaultVerifyInterval is Config.VerifyInterval's default, Consul's for the same check.
const DefaultVerifyInterval = time.Minute

// Peer is one member of the initial cluster configuration.
type Peer struct {
	// ID is the member's Raft server ID.
	ID string
	// RaftAddr is the member's Raft address (host:port).
	RaftAddr string
}

// Config configures a Node. Zero values mean the documented defaults.
type Config struct {
	// ID is this node's Raft server ID. Required.
	ID string
	// RaftBind is the address the Raft transport listens on. Required.
	RaftBind string
	// RaftAdvertise is the Raft address other nodes dial; empty means RaftBind. It differs
	// from RaftBind when traffic passes through a proxy (as in fault-injection tests).
	RaftAdvertise string
	// HTTPAddr is this node's HTTP API address (host:port), registered in the state machine
	// so that followers can forward to the leader.
	HTTPAddr string
	// DataDir holds the log and stable store (raft.db, or wal/ with LogStoreWAL) and the
	// snapshots. Required.
	DataDir string
	// LogStore is the kind of store for the Raft log and the stable values; zero means
	// LogStoreAuto: the kind the data directory holds, raft-wal for a new one. An explicit
	// kind that differs from what the data directory holds is refused with
	// ErrLogStoreMismatch: a node changes store offline (ConvertLogStore) or by being
	// removed, wiped and re-joined.
	LogStore LogStoreKind
	// WALSegmentSize is the size of raft-wal's segment files in bytes; zero means
	// raft-wal's default, 64 MiB. A segment is preallocated when it is created, so the
	// log's appends take no new space until it is full; a smaller size makes a full disk
	// show sooner (tests) and costs a file creation per segment.
	WALSegmentSize int
	// VerifyInterval is how often the leader writes a log verification checkpoint (when
	// anything was written since the last one), after which every node reads the range
	// since the previous checkpoint back from its own log store and compares checksums
	// with the leader's (verify.go); zero means DefaultVerifyInterval, negative turns
	// verification off.
	VerifyInterval time.Duration
	// Bootstrap, when non-empty and the data directory holds no Raft state, bootstraps a new
	// cluster with these voters. It must list this node.
	Bootstrap []Peer
	// Logger receives the node's and raft's logs; nil means hclog's default.
	Logger hclog.Logger

	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout tune raft. Defaults (500 ms,
	// 500 ms, 250 ms) suit a LAN and a busy 2-core machine: half of raft's WAN-minded
	// defaults, large enough not to flap under the race detector.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is raft's commit timeout; zero means 20 ms.
	CommitTimeout time.Duration

	// SnapshotThreshold is how many new entries trigger a snapshot; zero means 8192. Each
	// node keeps its own phase within it (SnapshotPhase), so that the members do not all
	// snapshot at the same index: a node snapshots every SnapshotThreshold entries on
	// average, any two of its snapshots at least half of it apart.
	SnapshotThreshold uint64
	// SnapshotInterval is how often raft checks the threshold; zero means 10 s.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries stay in the log after a snapshot; zero means 10240.
	TrailingLogs uint64

	// TickInterval is the longest the leader lets cluster time stand still while leases
	// exist; zero means 1 s. It bounds how much a failover lengthens a lease.
	TickInterval time.Duration
	// RenewWindow is how long the leader gathers keepalives into one Renew entry; zero
	// means 125 ms, so at most 8 Renew entries a second however many leases there are.
	// Longer windows cost keepalive latency and save log entries.
	RenewWindow time.Duration
	// MaxHoldCeiling caps the maximum hold (max_hold_ms) that a request asks for, on the
	// leader that proposes it; zero means no ceiling. Requests without a maximum hold are
	// left without one. Every node should be given the same value.
	MaxHoldCeiling time.Duration
	// ApplyTimeout bounds how long a proposal may wait to enter raft's queue; zero means 5 s.
	ApplyTimeout time.Duration
	// DutyTimeout is how long a leader keeps retrying a clock entry (a tick) that fails to
	// commit before it hands leadership to another voter; zero means 2 s. Until then
	// expiries stall, so it is kept near an election's length.
	DutyTimeout time.Duration

	// TLS, when non-nil, carries Raft over mutual TLS: both ends present a node
	// certificate signed by the cluster CA. Its certificate must be this node's (ID).
	TLS *tlsconf.Reloader

	// Limits are the quotas of the replicated state (total leases, locks per lease, waiters
	// per lock; zero fields mean unlimited). The leader proposes them once every voter
	// speaks protocol version 2; give every node the same values, since whichever node
	// leads writes its own.
	Limits fsm.Limits
	// MaxVersion, when non-zero, makes the node speak at most this protocol version, as a
	// node of an older release would: for upgrade tests. Zero means fsm.Version.
	MaxVersion uint64
	// FreshVersionWait is how long the first leader of a fresh cluster (no node has ever
	// registered) waits, before it serves anything, for every member to register the
	// protocol version it speaks, so that a cluster bootstrapped by one release starts at
	// that release's version and serves all of it from its first ready moment. Members
	// register through the HTTP API (package transport), so a node without one leaves it
	// zero: no wait, and the version rises later as in a rolling upgrade. A member that
	// has not registered when the wait ends (it is down, or speaks an older version) keeps
	// the cluster at the version every registered member speaks.
	FreshVersionWait time.Duration

	// EventSubscribers bounds the event stream subscribers (GET /v1/events) this node
	// serves at once; zero means DefaultEventSubscribers. Past it Subscribe fails with
	// ErrTooManySubscribers.
	EventSubscribers int
	// EventBacklog is how many recent history events the node keeps in memory for
	// subscribers that resume from an index; zero means DefaultEventBacklog.
	EventBacklog int

	// Budget, when non-nil, records when this node writes and applies each log entry and
	// which index each proposal got, for the latency budget (bench/budget). nil (the
	// default) records nothing and costs one nil check per log write.
	Budget *budget.Recorder
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTimeout, 500*time.Millisecond)
	def(&c.ElectionTimeout, 500*time.Millisecond)
	def(&c.LeaderLeaseTimeout, 250*time.Millisecond)
	def(&c.CommitTimeout, 20*time.Millisecond)
	def(&c.SnapshotInterval, 10*time.Second)
	def(&c.TickInterval, time.Second)
	def(&c.RenewWindow, 125*time.Millisecond)
	def(&c.ApplyTimeout, 5*time.Second)
	def(&c.DutyTimeout, 2*time.Second)
	def(&c.VerifyInterval, DefaultVerifyInterval)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.RaftAdvertise == "" {
		c.RaftAdvertise = c.RaftBind
	}
	if c.Logger == nil {
		c.Logger = hclog.Default()
	}
	if c.LogStore == "" {
		c.LogStore = LogStoreAuto
	}
}

// Validate reports the first problem with the configuration, in words that say what to fix.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("cluster: config: ID is required (--id)")
	case c.RaftBind == "":
		return errors.New("cluster: config: RaftBind is required (--raft-addr)")
	case c.DataDir == "":
		return errors.New("cluster: config: DataDir is required (--data-dir)")
	}
	if _, err := ParseLogStoreKind(string(c.LogStore)); err != nil {
		return err
	}
	if !ValidID(c.ID) {
		return fmt.Errorf("cluster: config: ID %q must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'", c.ID)
	}
	if c.TLS != nil && c.TLS.NodeID() != c.ID {
		return fmt.Errorf("cluster: config: the TLS certificate is node %q's, but this node is %q: issue one with `raftlock tls cert --node %s`", c.TLS.NodeID(), c.ID, c.ID)
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		return fmt.Errorf("cluster: config: LeaderLeaseTimeout %v exceeds HeartbeatTimeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if len(c.Bootstrap) > 0 {
		found := false
		seen := map[string]bool{}
		for _, p := range c.Bootstrap {
			if p.ID == "" || p.RaftAddr == "" {
				return fmt.Errorf("cluster: config: bootstrap peer %q needs an ID and an address", p.ID)
			}
			if seen[p.ID] {
				return fmt.Errorf("cluster: config: bootstrap lists %q twice", p.ID)
			}
			seen[p.ID] = true
			found = found || p.ID == c.ID
		}
		if !found {
			return fmt.Errorf("cluster: config: bootstrap list does not include this node %q", c.ID)
		}
	}
	return nil
}
