package cluster

import (
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Staggered snapshots. Every member applies the same entries, so with one threshold for all
// of them raft's check (every SnapshotInterval, with jitter) finds all three past it within
// one interval of each other, and at a million locks three nodes encoding ~60 MB at once on
// two cores stall the commit path for half a second (issue 24). Each node is therefore given
// its own phase: it snapshots near the indexes k*SnapshotThreshold + phase, and the phases of
// the members are spread evenly over the threshold. The period stays SnapshotThreshold on
// every node (a threshold per node alone would let the nodes drift into each other again);
// after each snapshot the node sets raft's threshold (ReloadConfig) to the distance to its
// next phase point, between half and one and a half thresholds away.

// SnapshotPhase returns the offset, in log entries, of this node's snapshots within each
// SnapshotThreshold (after defaults): the node snapshots near the indexes
// k*SnapshotThreshold + phase. A member of the bootstrap list takes its place among the
// list's IDs in sorted order, so a three-node cluster gets phases 0, 1/3 and 2/3 of the
// threshold. A node started without a bootstrap list (one that joins) takes one of 12 slots
// by a hash of its ID, which may coincide with another member's.
func (c Config) SnapshotPhase() uint64 {
	c.setDefaults()
	slot, slots := uint64(0), uint64(12)
	ids := make([]string, 0, len(c.Bootstrap))
	for _, p := range c.Bootstrap {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	if i, ok := slices.BinarySearch(ids, c.ID); ok {
		slot, slots = uint64(i), uint64(len(ids))
	} else {
		h := fnv.New32a()
		_, _ = h.Write([]byte(c.ID))
		slot = uint64(h.Sum32()) % slots
	}
	return c.SnapshotThreshold * slot / slots
}

// nextSnapshotThreshold is the raft threshold that makes a node whose last snapshot is at
// index last snapshot next at the first index k*base + phase at least base/2 past last: so
// the node keeps its phase whatever raft's check jitter added to the last one, and no two
// snapshots of one node come closer than half a threshold. It is never zero (raft refuses
// a zero threshold).
func nextSnapshotThreshold(base, phase, last uint64) uint64 {
	if base == 0 {
		return 1
	}
	phase %= base
	next := last - last%base + phase // the phase point in last's period
	for next < last+base/2 {
		next += base
	}
	return max(next-last, 1)
}

// snapStagger moves raft's snapshot threshold after each snapshot this node writes (its own
// or one installed from the leader), keeping the node's snapshots at its phase.
type snapStagger struct {
	base, phase uint64
	log         hclog.Logger
	raft        atomic.Pointer[raft.Raft] // set once raft has started
	mu          sync.Mutex                // serializes the read-modify-write of raft's config
	set         atomic.Uint64             // the threshold set last, for tests and logs
}

func newSnapStagger(cfg Config, log hclog.Logger) *snapStagger {
	return &snapStagger{base: cfg.SnapshotThreshold, phase: cfg.SnapshotPhase(), log: log}
}

// initial is the threshold raft starts with, given the index of the newest snapshot on disk
// (zero for none).
func (s *snapStagger) initial(last uint64) uint64 {
	t := nextSnapshotThreshold(s.base, s.phase, last)
	s.set.Store(t)
	return t
}

// snapshotted is called when a snapshot at index has been written and closed.
func (s *snapStagger) snapshotted(index uint64) {
	r := s.raft.Load()
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rc := r.ReloadableConfig()
	rc.SnapshotThreshold = nextSnapshotThreshold(s.base, s.phase, index)
	if err := r.ReloadConfig(rc); err != nil {
		s.log.Warn("could not move the snapshot threshold to this node's phase", "error", err)
		return
	}
	s.set.Store(rc.SnapshotThreshold)
}
