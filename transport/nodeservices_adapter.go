package transport

// This file is the temporary bridge between the role interfaces (roles.go) and today's
// *cluster.Node, whose methods still carry the old names and millisecond int64s. When
// cluster provides its role types (CONTRACT.md: n.Leases(), n.Locks(), ...), the file is
// deleted and NodeServices wires the accessors directly:
//
//	Services{Leases: n.Leases(), Locks: n.Locks(), Semaphores: n.Semaphores(),
//		Elections: n.Elections(), Members: n.Members(), ACL: n.ACL(), Events: n.Events(),
//		Routing: n, Status: n, Backups: n}
//
// and ttlMs / setTTL below become plain d.Milliseconds() and time.Duration(ms)*time.Millisecond.

import (
	"context"
	"time"

	"github.com/raftlock/raftlock/cluster"
)

// NodeServices returns the roles of node n, for Config.Services.
func NodeServices(n *cluster.Node) Services {
	return Services{
		Leases:     nodeLeases{n},
		Locks:      nodeLocks{n},
		Semaphores: nodeSemaphores{n},
		Elections:  nodeElections{n},
		Members:    nodeMembers{n},
		Routing:    n,
		Status:     nodeStatus{n},
		ACL:        nodeACL{n},
		Events:     nodeEvents{n},
		Backups:    n,
	}
}

// fromMs converts milliseconds of the old API to a Duration.
func fromMs(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// ttlMs reads a TTL field of cluster's request and grant types in milliseconds, whether
// the field is today's int64 milliseconds or the contract's time.Duration.
func ttlMs[T ~int64](v T) int64 {
	if d, ok := any(v).(time.Duration); ok {
		return d.Milliseconds()
	}
	return int64(v)
}

// setTTL sets a TTL field of cluster's request types from milliseconds, whether the field
// is today's int64 milliseconds or the contract's time.Duration.
func setTTL[T ~int64](dst *T, msv int64) {
	if d, ok := any(dst).(*time.Duration); ok {
		*d = fromMs(msv)
		return
	}
	*dst = T(msv)
}

type nodeLeases struct{ n *cluster.Node }

func (a nodeLeases) Create(ctx context.Context, ttl time.Duration) (cluster.LeaseID, error) {
	return a.n.CreateLease(ctx, ttl.Milliseconds())
}

func (a nodeLeases) KeepAlive(ctx context.Context, id cluster.LeaseID) (time.Duration, error) {
	ttl, err := a.n.KeepAlive(ctx, id)
	return fromMs(ttl), err
}

func (a nodeLeases) KeepAliveMany(ctx context.Context, ids []cluster.LeaseID) ([]time.Duration, []bool, error) {
	ttls, found, err := a.n.KeepAliveMany(ctx, ids)
	var out []time.Duration
	if ttls != nil {
		out = make([]time.Duration, len(ttls))
		for i, t := range ttls {
			out[i] = fromMs(t)
		}
	}
	return out, found, err
}

func (a nodeLeases) Revoke(ctx context.Context, id cluster.LeaseID) ([]string, error) {
	return a.n.Revoke(ctx, id)
}

func (a nodeLeases) Lookup(ctx context.Context, id cluster.LeaseID, stale bool) (cluster.LeaseView, error) {
	v, err := a.n.Lease(ctx, id, stale)
	return cluster.LeaseView{TTL: fromMs(v.TTL), Locks: v.Locks}, err
}

type nodeLocks struct{ n *cluster.Node }

func (a nodeLocks) Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.Grant, error) {
	return a.n.Acquire(ctx, req)
}

func (a nodeLocks) Release(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error {
	return a.n.Release(ctx, name, lease, token)
}

func (a nodeLocks) Status(ctx context.Context, name string, q cluster.Query) (cluster.LockView, error) {
	return a.n.LockStatus(ctx, name, q.Stale, q.WaitIndex, q.Wait)
}

func (a nodeLocks) List(ctx context.Context, prefix, after string, limit int, stale bool) ([]cluster.LockView, bool, error) {
	return a.n.Locks(ctx, prefix, after, limit, stale)
}

type nodeSemaphores struct{ n *cluster.Node }

func (a nodeSemaphores) Acquire(ctx context.Context, req cluster.SemaphoreRequest) (cluster.SemaphoreGrant, error) {
	return a.n.SemaphoreAcquire(ctx, req)
}

func (a nodeSemaphores) Release(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error {
	return a.n.SemaphoreRelease(ctx, name, lease, token)
}

func (a nodeSemaphores) Status(ctx context.Context, name string, q cluster.Query) (cluster.SemaphoreView, error) {
	return a.n.SemaphoreStatus(ctx, name, q.Stale, q.WaitIndex, q.Wait)
}

type nodeElections struct{ n *cluster.Node }

func (a nodeElections) Campaign(ctx context.Context, req cluster.CampaignRequest) (cluster.ElectionGrant, error) {
	return a.n.Campaign(ctx, req)
}

func (a nodeElections) Resign(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error {
	return a.n.Resign(ctx, name, lease, token)
}

func (a nodeElections) Status(ctx context.Context, name string, q cluster.Query) (cluster.ElectionView, error) {
	return a.n.ElectionStatus(ctx, name, q.Stale, q.WaitIndex, q.Wait)
}

type nodeMembers struct{ n *cluster.Node }

func (a nodeMembers) Add(ctx context.Context, info cluster.NodeInfo, replace bool) error {
	return a.n.AddVoter(ctx, info, replace)
}
func (a nodeMembers) Remove(ctx context.Context, id string) error { return a.n.RemoveServer(ctx, id) }
func (a nodeMembers) TransferLeadership(ctx context.Context, to string) (string, error) {
	return a.n.TransferLeadership(ctx, to)
}
func (a nodeMembers) RaftAddr(id string) (string, bool) { return a.n.MemberRaftAddr(id) }
func (a nodeMembers) Has(id string) bool                { return a.n.HasMember(id) }
func (a nodeMembers) Self() cluster.NodeInfo            { return a.n.SelfInfo() }
func (a nodeMembers) NeedsRegistration() bool           { return a.n.NeedsRegistration() }
func (a nodeMembers) NeedsVersionRegistration() bool    { return a.n.NeedsVersionRegistration() }
func (a nodeMembers) MaxVersion() uint64                { return a.n.MaxVersion() }
func (a nodeMembers) RegisterVersion(ctx context.Context, id string, v uint64) error {
	return a.n.RegisterVersion(ctx, id, v)
}

type nodeStatus struct{ n *cluster.Node }

func (a nodeStatus) Status() cluster.Status { return a.n.Status() }

// Metrics reads today's metric maps by their keys, which from the merge on only
// transport/metrics.go knows.
func (a nodeStatus) Metrics() cluster.Metrics {
	g, c := a.n.MetricsSnapshot(), a.n.MetricsCounters()
	return cluster.Metrics{
		IsLeader:           g["raftlock_is_leader"] == 1,
		Term:               uint64(g["raftlock_raft_term"]),
		CommitIndex:        uint64(g["raftlock_raft_commit_index"]),
		AppliedIndex:       uint64(g["raftlock_applied_index"]),
		ClusterTime:        fromMs(int64(g["raftlock_cluster_time_ms"])),
		Leases:             int(g["raftlock_leases"]),
		LocksHeld:          int(g["raftlock_locks_held"]),
		SemaphoresInUse:    int(g["raftlock_semaphores_in_use"]),
		SemaphorePermits:   int(g["raftlock_semaphore_permits"]),
		ElectionsLed:       int(g["raftlock_elections_led"]),
		SnapshotLagEntries: uint64(g["raftlock_snapshot_lag_entries"]),
		GrantsTotal:        uint64(c["raftlock_grants_total"]),
		HandoversTotal:     uint64(c["raftlock_handovers_total"]),
		RenewEntriesTotal:  uint64(c["raftlock_renew_entries_total"]),
	}
}

type nodeACL struct{ n *cluster.Node }

func (a nodeACL) Bootstrap(ctx context.Context) (cluster.ACLToken, error) {
	return a.n.ACLBootstrap(ctx)
}
func (a nodeACL) SetPolicy(ctx context.Context, name, description string, rules []cluster.ACLRule) error {
	return a.n.ACLSetPolicy(ctx, name, description, rules)
}
func (a nodeACL) DeletePolicy(ctx context.Context, name string) error {
	return a.n.ACLDeletePolicy(ctx, name)
}
func (a nodeACL) CreateToken(ctx context.Context, description string, policies []string) (cluster.ACLToken, error) {
	return a.n.ACLCreateToken(ctx, description, policies)
}
func (a nodeACL) DeleteToken(ctx context.Context, accessor string) error {
	return a.n.ACLDeleteToken(ctx, accessor)
}
func (a nodeACL) Resolve(secret string) (cluster.ACLIdentity, bool) { return a.n.ACLResolve(secret) }
func (a nodeACL) Anonymous() cluster.ACLIdentity                    { return a.n.ACLAnonymous() }
func (a nodeACL) Bootstrapped() bool                                { return a.n.ACLBootstrapped() }
func (a nodeACL) Policies() []cluster.ACLPolicyView                 { return a.n.ACLPolicies() }
func (a nodeACL) Tokens() []cluster.ACLTokenView                    { return a.n.ACLTokens() }
func (a nodeACL) Token(accessor string) (cluster.ACLTokenView, bool) {
	return a.n.ACLTokenView(accessor)
}

type nodeEvents struct{ n *cluster.Node }

func (a nodeEvents) Subscribe(prefix string, from uint64) (*cluster.Subscription, error) {
	return a.n.Subscribe(prefix, from)
}
func (a nodeEvents) Subscribers() int { return a.n.EventSubscribers() }
func (a nodeEvents) History(ctx context.Context, name string, stale bool) ([]cluster.HistoryEvent, time.Duration, error) {
	evs, now, err := a.n.History(ctx, name, stale)
	return evs, fromMs(now), err
}
func (a nodeEvents) Overview(prefix, after string, limit int, soon time.Duration) cluster.Overview {
	return a.n.Overview(prefix, after, limit, soon.Milliseconds())
}
func (a nodeEvents) Watches() int { return a.n.WatchCount() }

// Today's *cluster.Node already has the methods of these roles.
var (
	_ Routing = (*cluster.Node)(nil)
	_ Backups = (*cluster.Node)(nil)
)
