package transport

import (
	"context"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

// nodeAdapter serves a *cluster.Node through the Node interface of this package, until
// transport reaches the node's role accessors itself.
type nodeAdapter struct{ n *cluster.Node }

var (
	_ Node         = nodeAdapter{}
	_ HistoryNode  = nodeAdapter{}
	_ OverviewNode = nodeAdapter{}
)

func ms(d time.Duration) int64   { return d.Milliseconds() }
func dur(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

func (a nodeAdapter) ID() string { return a.n.ID() }
func (a nodeAdapter) CreateLease(ctx context.Context, ttl int64) (fsm.LeaseID, error) {
	return a.n.Leases().Create(ctx, dur(ttl))
}
func (a nodeAdapter) KeepAlive(ctx context.Context, id fsm.LeaseID) (int64, error) {
	ttl, err := a.n.Leases().KeepAlive(ctx, id)
	return ms(ttl), err
}
func (a nodeAdapter) KeepAliveMany(ctx context.Context, ids []fsm.LeaseID) ([]int64, []bool, error) {
	ttls, found, err := a.n.Leases().KeepAliveMany(ctx, ids)
	var out []int64
	if ttls != nil {
		out = make([]int64, len(ttls))
		for i, t := range ttls {
			out[i] = ms(t)
		}
	}
	return out, found, err
}
func (a nodeAdapter) Revoke(ctx context.Context, id fsm.LeaseID) ([]string, error) {
	return a.n.Leases().Revoke(ctx, id)
}
func (a nodeAdapter) Lease(ctx context.Context, id fsm.LeaseID, stale bool) (fsm.LeaseView, error) {
	v, err := a.n.Leases().Lookup(ctx, id, stale)
	if err != nil {
		return fsm.LeaseView{}, err
	}
	return fsm.LeaseView{ID: id, TTL: ms(v.TTL), Locks: v.Locks}, nil
}
func (a nodeAdapter) Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.Grant, error) {
	return a.n.Locks().Acquire(ctx, req)
}
func (a nodeAdapter) Release(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error {
	return a.n.Locks().Release(ctx, name, lease, token)
}
func (a nodeAdapter) LockStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.LockView, error) {
	return a.n.Locks().Status(ctx, name, cluster.Query{Stale: stale, WaitIndex: waitIndex, Wait: wait})
}
func (a nodeAdapter) Locks(ctx context.Context, prefix, after string, limit int, stale bool) ([]fsm.LockView, bool, error) {
	return a.n.Locks().List(ctx, prefix, after, limit, stale)
}
func (a nodeAdapter) SemaphoreAcquire(ctx context.Context, req cluster.SemaphoreRequest) (cluster.SemaphoreGrant, error) {
	return a.n.Semaphores().Acquire(ctx, req)
}
func (a nodeAdapter) SemaphoreRelease(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error {
	return a.n.Semaphores().Release(ctx, name, lease, token)
}
func (a nodeAdapter) SemaphoreStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.SemaphoreView, error) {
	return a.n.Semaphores().Status(ctx, name, cluster.Query{Stale: stale, WaitIndex: waitIndex, Wait: wait})
}
func (a nodeAdapter) Campaign(ctx context.Context, req cluster.CampaignRequest) (cluster.ElectionGrant, error) {
	return a.n.Elections().Campaign(ctx, req)
}
func (a nodeAdapter) Resign(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error {
	return a.n.Elections().Resign(ctx, name, lease, token)
}
func (a nodeAdapter) ElectionStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.ElectionView, error) {
	return a.n.Elections().Status(ctx, name, cluster.Query{Stale: stale, WaitIndex: waitIndex, Wait: wait})
}
func (a nodeAdapter) Status() cluster.Status { return a.n.Status() }
func (a nodeAdapter) AddVoter(ctx context.Context, info fsm.NodeInfo, replace bool) error {
	return a.n.Members().Add(ctx, info, replace)
}
func (a nodeAdapter) MemberRaftAddr(id string) (string, bool) { return a.n.Members().RaftAddr(id) }
func (a nodeAdapter) RemoveServer(ctx context.Context, id string) error {
	return a.n.Members().Remove(ctx, id)
}
func (a nodeAdapter) TransferLeadership(ctx context.Context, to string) (string, error) {
	return a.n.Members().TransferLeadership(ctx, to)
}
func (a nodeAdapter) LeaderHTTPAddr() string                 { return a.n.LeaderHTTPAddr() }
func (a nodeAdapter) LeaderWatch() (string, <-chan struct{}) { return a.n.LeaderWatch() }
func (a nodeAdapter) ElectionTimeout() time.Duration         { return a.n.ElectionTimeout() }
func (a nodeAdapter) IsLeader() bool                         { return a.n.IsLeader() }
func (a nodeAdapter) Ready() bool                            { return a.n.Ready() }
func (a nodeAdapter) Serving() string                        { return a.n.Serving() }
func (a nodeAdapter) StorageErr() error                      { return a.n.StorageErr() }
func (a nodeAdapter) NeedsRegistration() bool                { return a.n.Members().NeedsRegistration() }
func (a nodeAdapter) NeedsVersionRegistration() bool {
	return a.n.Members().NeedsVersionRegistration()
}
func (a nodeAdapter) MaxVersion() uint64 { return a.n.Members().MaxVersion() }
func (a nodeAdapter) RegisterVersion(ctx context.Context, id string, v uint64) error {
	return a.n.Members().RegisterVersion(ctx, id, v)
}
func (a nodeAdapter) ACLBootstrap(ctx context.Context) (cluster.ACLToken, error) {
	return a.n.ACL().Bootstrap(ctx)
}
func (a nodeAdapter) ACLSetPolicy(ctx context.Context, name, description string, rules []fsm.ACLRule) error {
	return a.n.ACL().SetPolicy(ctx, name, description, rules)
}
func (a nodeAdapter) ACLDeletePolicy(ctx context.Context, name string) error {
	return a.n.ACL().DeletePolicy(ctx, name)
}
func (a nodeAdapter) ACLCreateToken(ctx context.Context, description string, policies []string) (cluster.ACLToken, error) {
	return a.n.ACL().CreateToken(ctx, description, policies)
}
func (a nodeAdapter) ACLDeleteToken(ctx context.Context, accessor string) error {
	return a.n.ACL().DeleteToken(ctx, accessor)
}
func (a nodeAdapter) ACLResolve(secret string) (fsm.ACLIdentity, bool) {
	return a.n.ACL().Resolve(secret)
}
func (a nodeAdapter) ACLAnonymous() fsm.ACLIdentity    { return a.n.ACL().Anonymous() }
func (a nodeAdapter) ACLBootstrapped() bool            { return a.n.ACL().Bootstrapped() }
func (a nodeAdapter) ACLPolicies() []fsm.ACLPolicyView { return a.n.ACL().Policies() }
func (a nodeAdapter) ACLTokens() []fsm.ACLTokenView    { return a.n.ACL().Tokens() }
func (a nodeAdapter) SelfInfo() fsm.NodeInfo           { return a.n.Members().Self() }
func (a nodeAdapter) ACLTokenView(accessor string) (fsm.ACLTokenView, bool) {
	return a.n.ACL().Token(accessor)
}
func (a nodeAdapter) Backup(ctx context.Context) ([]byte, fsm.SnapshotSummary, error) {
	return a.n.Backup(ctx)
}
func (a nodeAdapter) MetricsSnapshot() map[string]float64 {
	m := a.n.Metrics()
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return map[string]float64{
		"raftlock_is_leader":            b(m.IsLeader),
		"raftlock_raft_term":            float64(m.Term),
		"raftlock_raft_commit_index":    float64(m.CommitIndex),
		"raftlock_applied_index":        float64(m.AppliedIndex),
		"raftlock_cluster_time_ms":      float64(m.ClusterTime.Milliseconds()),
		"raftlock_leases":               float64(m.Leases),
		"raftlock_locks_held":           float64(m.LocksHeld),
		"raftlock_semaphores_in_use":    float64(m.SemaphoresInUse),
		"raftlock_semaphore_permits":    float64(m.SemaphorePermits),
		"raftlock_elections_led":        float64(m.ElectionsLed),
		"raftlock_snapshot_lag_entries": float64(m.SnapshotLagEntries),
	}
}
func (a nodeAdapter) MetricsCounters() map[string]float64 {
	m := a.n.Metrics()
	return map[string]float64{
		"raftlock_grants_total":        float64(m.GrantsTotal),
		"raftlock_handovers_total":     float64(m.HandoversTotal),
		"raftlock_renew_entries_total": float64(m.RenewEntriesTotal),
	}
}
func (a nodeAdapter) History(ctx context.Context, name string, stale bool) ([]fsm.HistoryEvent, int64, error) {
	evs, t, err := a.n.Events().History(ctx, name, stale)
	return evs, ms(t), err
}
func (a nodeAdapter) Subscribe(prefix string, from uint64) (*cluster.Subscription, error) {
	return a.n.Events().Subscribe(prefix, from)
}
func (a nodeAdapter) Overview(prefix, after string, limit int, soonMs int64) fsm.Overview {
	return a.n.Events().Overview(prefix, after, limit, dur(soonMs))
}
