package cluster

import (
	"context"
	"time"

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
	if n.fsm.Version() >= fsm.TypeSetLimits.Since() && n.fsm.Limits() != n.cfg.Limits {
		if _, err := n.prop.apply(&fsm.Command{Type: fsm.TypeSetLimits, Limits: n.cfg.Limits}); err != nil {
			n.log.Warn("writing the configured limits failed", "error", err)
			return
		}
		n.log.Info("limits set", "max_leases", n.cfg.Limits.MaxLeases, "max_locks_per_lease", n.cfg.Limits.MaxLocksPerLease, "max_waiters_per_lock", n.cfg.Limits.MaxWaitersPerLock)
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
