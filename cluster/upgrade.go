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
func (n *Node) upgradeLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.TickInterval)
	defer t.Stop()
	for {
		n.upgradeStep()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// upgradeStep does at most one thing per call, in order: register this node's version,
// raise the active version, write the limits.
func (n *Node) upgradeStep() {
	if n.NeedsVersionRegistration() {
		if _, err := n.apply(&fsm.Command{Type: fsm.TypeNodeVersion, Node: fsm.NodeInfo{ID: n.cfg.ID}, Version: n.fsm.MaxVersion()}); err != nil {
			n.log.Debug("registering this node's protocol version failed", "error", err)
		}
		return
	}
	if target, ok := n.upgradeTarget(); ok {
		if _, err := n.apply(&fsm.Command{Type: fsm.TypeSetVersion, Version: target}); err != nil {
			n.log.Warn("raising the cluster's protocol version failed", "to", target, "error", err)
			return
		}
		n.log.Info("raised the cluster's protocol version: every voter speaks it", "version", target)
		return
	}
	if n.fsm.Version() >= fsm.TypeSetLimits.Since() && n.fsm.Limits() != n.cfg.Limits {
		if _, err := n.apply(&fsm.Command{Type: fsm.TypeSetLimits, Limits: n.cfg.Limits}); err != nil {
			n.log.Warn("writing the configured limits failed", "error", err)
			return
		}
		n.log.Info("limits set", "max_leases", n.cfg.Limits.MaxLeases, "max_locks_per_lease", n.cfg.Limits.MaxLocksPerLease, "max_waiters_per_lock", n.cfg.Limits.MaxWaitersPerLock)
	}
}

// upgradeTarget returns the version the cluster can move to now: the lowest version any
// voter has registered, when that is above the active version.
func (n *Node) upgradeTarget() (uint64, bool) {
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

// NeedsVersionRegistration reports whether this node speaks a protocol that records node
// versions and its registration is missing or out of date. Nodes of the first protocol
// version never register (they do not know how), so they hold every upgrade back.
func (n *Node) NeedsVersionRegistration() bool {
	max := n.fsm.MaxVersion()
	if max < fsm.TypeNodeVersion.Since() {
		return false
	}
	v, ok := n.fsm.NodeVersion(n.cfg.ID)
	return !ok || v != max
}

// MaxVersion returns the highest protocol version this node speaks.
func (n *Node) MaxVersion() uint64 { return n.fsm.MaxVersion() }

// RegisterVersion records that node id speaks protocol versions up to v. Followers call
// it on the leader through the API.
func (n *Node) RegisterVersion(ctx context.Context, id string, v uint64) error {
	if !n.HasMember(id) {
		return ErrNotMember
	}
	_, err := n.propose(ctx, &fsm.Command{Type: fsm.TypeNodeVersion, Node: fsm.NodeInfo{ID: id}, Version: v})
	return err
}

// quotaError names the limit a refused command would have exceeded.
func (n *Node) quotaError(limit string) error {
	l := n.fsm.Limits()
	var v uint64
	switch limit {
	case fsm.QuotaLeases:
		v = l.MaxLeases
	case fsm.QuotaLocksPerLease:
		v = l.MaxLocksPerLease
	case fsm.QuotaWaitersPerLock:
		v = l.MaxWaitersPerLock
	}
	return &QuotaError{Limit: limit, Value: v}
}
