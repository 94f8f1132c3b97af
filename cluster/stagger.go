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
// two cores stall the commit path for half a second. Each node is therefore given
// its own phase: it snapshots near the indexes k*SnapshotThreshold + phase, and the phases of
// the members are spread evenly over the threshold. The period stays SnapshotThreshold on
// every node (a threshold per node alone would let the nodes drift into each other again);
// after each snapshot the node sets raft's threshold (ReloadConfig) to the distance to its
// next phase point, between half and one and a half thresholds away.
//
// The leader also defers its own snapshots: while it leads, its next phase point is
// leaderDeferral threshold further on. A follower's snapshot slows that follower only (the
// leader commits with the other one), but the leader's slows every commit, since the leader
// writes its log before it replicates. So the leader snapshots half as often as a follower,
// still at its phase, and its log is still compacted.
//
// Raft checks the threshold every SnapshotInterval (10-20 s with the default, at random), so
// the phase places a node's snapshot only when the log grows by less than a threshold in that
// time; at higher entry rates raft's own random check time spreads the snapshots, the phase
// does not, and the leader's deferral still holds.

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

// leaderDeferral is how many thresholds a leader adds to its next phase point. One keeps the
// leader's log within about two and a half thresholds of its last snapshot.
const leaderDeferral = 1

// snapStagger moves raft's snapshot threshold after each snapshot this node writes (its own
// or one installed from the leader), keeping the node's snapshots at its phase.
type snapStagger struct {
	base, phase uint64
	log         hclog.Logger
	raft        atomic.Pointer[raft.Raft] // set once raft has started
	mu          sync.Mutex                // serializes the read-modify-write of raft's config
	last        uint64                    // index of the newest snapshot; guarded by mu
	leading     bool                      // whether this node leads; guarded by mu
	set         atomic.Uint64             // the threshold set last, for tests and logs
}

func newSnapStagger(cfg Config, log hclog.Logger) *snapStagger {
	return &snapStagger{base: cfg.SnapshotThreshold, phase: cfg.SnapshotPhase(), log: log}
}

// initial is the threshold raft starts with, given the index of the newest snapshot on disk
// (zero for none).
func (s *snapStagger) initial(last uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = last
	t := s.threshold()
	s.set.Store(t)
	return t
}

// threshold is raft's threshold for the next snapshot after s.last; s.mu is held.
func (s *snapStagger) threshold() uint64 {
	t := nextSnapshotThreshold(s.base, s.phase, s.last)
	if s.leading {
		t += leaderDeferral * s.base
	}
	return t
}

// start hands the stagger the node's raft, once it runs, and applies what it learned before.
func (s *snapStagger) start(r *raft.Raft) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raft.Store(r)
	s.apply()
}

// snapshotted is called when a snapshot at index has been written and closed.
func (s *snapStagger) snapshotted(index uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = index
	s.apply()
}

// lead is called when this node gains (true) or loses leadership.
func (s *snapStagger) lead(leading bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading = leading
	s.apply()
}

// apply sets raft's threshold to s.threshold(); s.mu is held.
func (s *snapStagger) apply() {
	r := s.raft.Load()
	if r == nil {
		return
	}
	rc := r.ReloadableConfig()
	rc.SnapshotThreshold = s.threshold()
	if err := r.ReloadConfig(rc); err != nil {
		s.log.Warn("could not move the snapshot threshold to this node's phase", "error", err)
		return
	}
	s.set.Store(rc.SnapshotThreshold)
}
