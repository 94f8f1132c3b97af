package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
)

// Protocol versions and rolling upgrades.
//
// Every node registers the highest protocol version it speaks (a NodeVersion entry, which
// nodes of older releases skip). The leader raises the cluster's active version with a
// SetVersion entry only once every voter has registered a version at least that high: a
// command or snapshot format that some voter does not understand is never written, since
// that voter would halt on it. Quotas (SetLimits) are a version 2 command, so they take
// effect only then.

// upgradeLoop runs on the leader: it keeps its own version registered, raises the active
// version when every voter can follow, and writes the configured limits.
func (l *leader) upgradeLoop(ctx context.Context) {
	t := time.NewTicker(l.n.cfg.TickInterval)
	defer t.Stop()
	for {
		l.upgradeStep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// upgradeStep does at most one thing per call, in order: register this node's version,
// raise the active version, write the limits.
func (l *leader) upgradeStep() {
	n := l.n
	if n.members.NeedsVersionRegistration() {
		if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeNodeVersion, Node: fsm.NodeInfo{ID: n.cfg.ID}, Version: n.fsm.MaxVersion()}); err != nil {
			n.log.Debug("registering this node's protocol version failed", "error", err)
		}
		return
	}
	if target, ok := l.upgradeTarget(); ok {
		if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeSetVersion, Version: target}); err != nil {
			n.log.Warn("raising the cluster's protocol version failed", "to", target, "error", err)
			return
		}
		n.log.Info("raised the cluster's protocol version: every voter speaks it", "version", target)
		return
	}
	// Only the limits the active version has a place for: before version 5 a SetLimits
	// carrying version 5's limits would not decode on an older member, and the state
	// would never equal the configuration, so the limits would be written on every tick.
	v := n.fsm.Version()
	want := n.cfg.Limits.ForVersion(v)
	if v >= fsm.TypeSetLimits.Since() && n.fsm.Limits() != want {
		if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeSetLimits, Limits: want}); err != nil {
			n.log.Warn("writing the configured limits failed", "error", err)
			return
		}
		n.log.Info("limits set", "max_leases", want.MaxLeases, "max_locks_per_lease", want.MaxLocksPerLease, "max_waiters_per_lock", want.MaxWaitersPerLock,
			"max_locks", want.MaxLocks, "max_waiters", want.MaxWaiters, "max_leases_per_identity", want.PerIdentity.MaxLeases,
			"max_locks_per_identity", want.PerIdentity.MaxLocks, "max_waiters_per_identity", want.PerIdentity.MaxWaiters)
	}
}

// upgradeTarget returns the version the cluster can move to now: the lowest version any
// voter has registered, when that is above the active version.
func (l *leader) upgradeTarget() (uint64, bool) {
	n := l.n
	target := n.fsm.MaxVersion()
	servers := n.servers()
	if len(servers) == 0 {
		return 0, false
	}
	// Every member applies the log, voter or not, so every member must speak the version.
	for _, s := range servers {
		v, ok := n.fsm.NodeVersion(string(s.ID))
		if !ok {
			return 0, false // not registered: an older release, or not yet
		}
		target = min(target, v)
	}
	return target, target > n.fsm.Version()
}

// settleFreshVersion runs on the first leader of a fresh cluster before it is ready: it
// registers this node (its addresses, so followers can reach it, and its version), then
// raises the active version as far as every member's registered version allows, until
// all members speak this node's newest version or FreshVersionWait ends. Nothing has been
// served yet, so the wait costs no request anything; a member down at bootstrap costs the
// wait once.
func (l *leader) settleFreshVersion(ctx context.Context) {
	n := l.n
	if n.cfg.FreshVersionWait <= 0 || len(n.fsm.Nodes()) > 0 {
		return
	}
	start := time.Now()
	l.fresh.Store(true)
	defer l.fresh.Store(false)
	if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeRegisterNode, Node: n.members.Self()}); err != nil {
		return
	}
	deadline := time.Now().Add(n.cfg.FreshVersionWait)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for n.fsm.Version() < n.fsm.MaxVersion() && time.Now().Before(deadline) {
		if n.members.NeedsVersionRegistration() {
			if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeNodeVersion, Node: fsm.NodeInfo{ID: n.cfg.ID}, Version: n.fsm.MaxVersion()}); err != nil {
				return
			}
		} else if target, ok := l.upgradeTarget(); ok {
			if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeSetVersion, Version: target}); err != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	lagging := []string{}
	for _, s := range n.servers() {
		if v, ok := n.fsm.NodeVersion(string(s.ID)); !ok || v < n.fsm.MaxVersion() {
			lagging = append(lagging, string(s.ID))
		}
	}
	n.log.Info("fresh cluster: protocol version settled before serving", "version", n.fsm.Version(), "after", time.Since(start).Round(time.Millisecond), "members_below_this_release", lagging)
}

// settling reports whether this node is the first leader of a fresh cluster settling its
// protocol version: it then takes the members' version registrations before it is ready.
func (l *leader) settling() bool {
	return l.fresh.Load() && l.n.raft.State() == raft.Leader
}
