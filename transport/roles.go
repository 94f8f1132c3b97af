package transport

import (
	"context"
	"reflect"
	"time"

	"github.com/raftlock/raftlock/cluster"
)

// The roles below are what the server needs of a cluster node, one interface per area of
// the API, in the server's words. Each method keeps the node's behaviour and errors
// (transport maps them in errors.go); a method that proposes nothing on a follower
// returns cluster.ErrNotLeader, and the server then forwards the request to the leader.
// NodeServices wires them to a *cluster.Node. NewServer refuses to build a server that
// lacks one; a handler's test fakes only the role it uses and stubs the others
// (roles_test.go, stubRoles).

// LeaseService creates, renews, reads and revokes leases.
type LeaseService interface {
	// Create makes a lease with ttl and returns its ID.
	Create(ctx context.Context, ttl time.Duration) (cluster.LeaseID, error)
	// KeepAlive renews a lease and returns its TTL.
	KeepAlive(ctx context.Context, id cluster.LeaseID) (time.Duration, error)
	// KeepAliveMany renews many leases in one entry: per lease, its TTL and whether it exists.
	KeepAliveMany(ctx context.Context, ids []cluster.LeaseID) (ttls []time.Duration, found []bool, err error)
	// Revoke ends a lease and returns the names of the locks it released.
	Revoke(ctx context.Context, id cluster.LeaseID) ([]string, error)
	// Lookup reads a lease, linearizably unless stale.
	Lookup(ctx context.Context, id cluster.LeaseID, stale bool) (cluster.LeaseView, error)
	// Creator returns the ACL accessor that created a lease ("" when none was recorded)
	// and whether the lease exists, from this node's applied state.
	Creator(id cluster.LeaseID) (string, bool)
	// ReadBarrier makes the Creator answers that follow linearizable (a heartbeat round,
	// no log entry); on a follower it returns cluster.ErrNotLeader.
	ReadBarrier(ctx context.Context) error
	// ImplicitLease returns the lease an acquire with requestID and no lease_id acts on
	// for ctx's caller.
	ImplicitLease(ctx context.Context, requestID string) cluster.LeaseID
}

// LockService grants, releases and reads locks.
type LockService interface {
	// Acquire grants a lock (or queues for it with req.Wait) and returns the grant.
	Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.Grant, error)
	// Release gives back the grant of lease with token.
	Release(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error
	// Status reads a lock as q says (linearizable, stale or blocking).
	Status(ctx context.Context, name string, q cluster.Query) (cluster.LockView, error)
	// List reads a page of the locks under prefix after a name, and whether more follow.
	List(ctx context.Context, prefix, after string, limit int, stale bool) ([]cluster.LockView, bool, error)
}

// LockSetService grants and releases several locks at once (protocol version 3).
type LockSetService interface {
	// AcquireSet grants every lock of req.Names in one commit (or queues for them all).
	AcquireSet(ctx context.Context, req cluster.LockSetRequest) (cluster.LockSetGrant, error)
	// ReleaseSet gives back every lock of locks held by lease, in one commit, or none.
	ReleaseSet(ctx context.Context, lease cluster.LeaseID, locks []cluster.LockToken) error
}

// SemaphoreService grants, releases and reads semaphore permits.
type SemaphoreService interface {
	// Acquire grants a permit (or queues for one with req.Wait) and returns the grant.
	Acquire(ctx context.Context, req cluster.SemaphoreRequest) (cluster.SemaphoreGrant, error)
	// Release gives back the permit of lease with token.
	Release(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error
	// Status reads a semaphore as q says.
	Status(ctx context.Context, name string, q cluster.Query) (cluster.SemaphoreView, error)
}

// ElectionService runs leader elections.
type ElectionService interface {
	// Campaign makes the lease a candidate (or, with a token, proclaims a new value).
	Campaign(ctx context.Context, req cluster.CampaignRequest) (cluster.ElectionGrant, error)
	// Resign gives up the leadership (or candidacy) of lease with token.
	Resign(ctx context.Context, name string, lease cluster.LeaseID, token uint64) error
	// Status reads an election as q says.
	Status(ctx context.Context, name string, q cluster.Query) (cluster.ElectionView, error)
}

// Membership changes and reads the cluster's members and the protocol version they speak.
type Membership interface {
	// Add makes info a voter (replace: also when its ID is a member at another address).
	Add(ctx context.Context, info cluster.NodeInfo, replace bool) error
	// Remove takes member id out of the cluster.
	Remove(ctx context.Context, id string) error
	// TransferLeadership hands leadership to voter to ("" for any) and returns the new leader.
	TransferLeadership(ctx context.Context, to string) (string, error)
	// RaftAddr returns member id's Raft address, and whether it is a member.
	RaftAddr(id string) (string, bool)
	// Has reports whether id is a member.
	Has(id string) bool
	// RegisterVersion records that member id speaks protocol versions up to v.
	RegisterVersion(ctx context.Context, id string, v uint64) error
}

// Registrar is what this node registers with the leader so that the cluster knows it:
// its addresses and the protocol version it speaks. Only the server's register loop
// (register.go) uses it.
type Registrar interface {
	// Self returns this node's ID and addresses, as it registers them.
	Self() cluster.NodeInfo
	// NeedsRegistration reports whether the state machine lacks this node's addresses.
	NeedsRegistration() bool
	// NeedsVersionRegistration reports whether the state machine lacks this node's protocol version.
	NeedsVersionRegistration() bool
	// MaxVersion returns the highest protocol version this node speaks.
	MaxVersion() uint64
}

// Routing says who this node is, who leads, and whether it serves; the server forwards by it.
type Routing interface {
	// ID returns this node's ID.
	ID() string
	// HTTPAddr returns the HTTP address this node advertises (and registers), or "".
	HTTPAddr() string
	// IsLeader reports whether this node is the ready leader.
	IsLeader() bool
	// LeaderWatch returns the leader's ID ("" for none) and a channel closed when it changes.
	LeaderWatch() (string, <-chan struct{})
	// LeaderHTTPAddr returns the leader's registered HTTP address, or "".
	LeaderHTTPAddr() string
	// ElectionTimeout returns the cluster's election timeout, which bounds a forward.
	ElectionTimeout() time.Duration
	// Serving says how a write sent here now is served ("leader", "forward"), or "" when it is not.
	Serving() string
	// StorageErr returns the error that makes this node's storage unusable, or nil.
	StorageErr() error
}

// StatusReporter reports the node's view of the cluster and its metrics.
type StatusReporter interface {
	// Status returns the leader, term, indexes, members and limits as this node sees them.
	Status() cluster.Status
	// Metrics returns the node's state and counters, read by /metrics.
	Metrics() cluster.Metrics
}

// ACLStore holds the ACL policies and tokens: the administration of /v1/acl.
type ACLStore interface {
	// Bootstrap creates the management token, once in the cluster's life.
	Bootstrap(ctx context.Context) (cluster.ACLToken, error)
	// SetPolicy creates or replaces a policy, with the quotas it grants (zero: none).
	SetPolicy(ctx context.Context, name, description string, rules []cluster.ACLRule, quotas cluster.Quotas) error
	// DeletePolicy deletes a policy.
	DeletePolicy(ctx context.Context, name string) error
	// CreateToken creates a token with policies and its own quotas (zero: none) and
	// returns it with its secret.
	CreateToken(ctx context.Context, description string, policies []string, quotas cluster.Quotas) (cluster.ACLToken, error)
	// UpdateToken replaces a token's description, policies and quotas; its secret stays.
	UpdateToken(ctx context.Context, accessor, description string, policies []string, quotas cluster.Quotas) (cluster.ACLToken, error)
	// DeleteToken revokes the token with accessor.
	DeleteToken(ctx context.Context, accessor string) error
	// Policies returns every policy.
	Policies() []cluster.ACLPolicyView
	// Tokens returns every token, without secrets.
	Tokens() []cluster.ACLTokenView
	// Token returns the token with accessor, and whether it exists.
	Token(accessor string) (cluster.ACLTokenView, bool)
}

// Identities tells who a caller is: every request's token check (Config.ACL), and an
// event stream's end when its token is deleted.
type Identities interface {
	// Resolve returns the identity of a token's secret, and whether it is known.
	Resolve(secret string) (cluster.ACLIdentity, bool)
	// Anonymous returns the identity of a caller without a token.
	Anonymous() cluster.ACLIdentity
	// Bootstrapped reports whether the management token exists: until it does, ACLs on
	// refuse every caller but the bootstrap.
	Bootstrapped() bool
	// Revoked returns a channel closed once the token with accessor is deleted (never
	// for ""), and the func that stops watching.
	Revoked(accessor string) (<-chan struct{}, func())
}

// UsageReader reads each identity's use of the cluster against its quotas: /v1/usage and
// the admin's gauges on /metrics.
type UsageReader interface {
	// Usage returns an identity's use and quotas ("" for leases made without ACLs).
	Usage(identity string) cluster.UsageView
	// Usages returns every identity's use, and the cluster's leases, grants and waits.
	Usages() (ids []cluster.UsageView, leases, locks, waiters uint64)
}

// EventSource serves what this node applied: the event stream, lock histories and the
// dashboard's overview.
type EventSource interface {
	// Subscribe starts this node's stream of the events of spaces (none: locks) under
	// prefix at index from.
	Subscribe(prefix string, from uint64, spaces ...cluster.Space) (*cluster.Subscription, error)
	// Subscribers returns the number of event stream subscribers.
	Subscribers() int
	// HistoryOf returns the recorded events of name in space (a lock's, a semaphore's or
	// an election's) and the cluster time of the read, linearizably unless stale.
	HistoryOf(ctx context.Context, space cluster.Space, name string, stale bool) ([]cluster.HistoryEvent, time.Duration, error)
	// Overview reads a page of the held locks under prefix, each with its first queue
	// waiters, and the lease counts (leases expiring within soon) from this node's
	// applied state.
	Overview(prefix, after string, limit int, soon time.Duration, queue int) cluster.Overview
	// WaitsFor reads the wait-for edges of a page of the locks with waiters under
	// prefix (at most perLock edges each) from this node's applied state.
	WaitsFor(prefix, after string, limit, perLock int) ([]cluster.LockWaits, bool)
	// Refusals reads the newest refusals of the deadlock detector on locks under prefix
	// from this node's lock histories.
	Refusals(prefix string, limit int) []cluster.Refusal
	// Semaphores reads a page of the semaphores in use under prefix, each with its first
	// queue waiters, from this node's applied state.
	Semaphores(prefix, after string, limit, queue int) ([]cluster.SemaphoreView, bool)
	// Elections reads a page of the elections in use under prefix, each with its first
	// queue candidates, from this node's applied state.
	Elections(prefix, after string, limit, queue int) ([]cluster.ElectionView, bool)
	// WaitChange waits until a name under prefix changes in an entry after index after,
	// the leader changes (or is not leader, unless that is cluster.LeaderUnknown), or
	// wait passes (the blocking form of the overview).
	WaitChange(ctx context.Context, prefix string, after uint64, leader string, wait time.Duration) error
	// Watches returns the number of registered blocking-query watches.
	Watches() int
}

// Backups reads the state machine for a backup.
type Backups interface {
	// Backup returns the state machine's canonical state at a linearizable point and its summary.
	Backup(ctx context.Context) ([]byte, cluster.BackupSummary, error)
}

// Services are the roles a Server serves, one field per role. Every role is required:
// NewServer refuses a Services with a nil role (or a nil pointer in one), naming it
// (ErrMissingRole), so that a role left unwired fails the start, not a request.
// NodeServices sets them all.
type Services struct {
	// Leases serves /v1/leases, and tells whose a lease is for the ACL checks of every
	// route that names one.
	Leases LeaseService
	// Locks serves /v1/locks (exclusive and shared).
	Locks LockService
	// Semaphores serves /v1/semaphores (protocol version 2).
	Semaphores SemaphoreService
	// Elections serves /v1/elections (protocol version 2).
	Elections ElectionService
	// Members serves /v1/cluster/nodes and /v1/cluster/transfer-leader, and tells which
	// callers are member nodes.
	Members Membership
	// Registrar is what the server registers with the leader.
	Registrar Registrar
	// Routing is this node's identity, its leader and whether it serves: the forwarding
	// of every write and the readiness checks.
	Routing Routing
	// Status serves GET /v1/cluster, the overview's cluster part and the node's metrics.
	Status StatusReporter
	// ACL serves /v1/acl.
	ACL ACLStore
	// Identities resolves the callers' tokens (Config.ACL).
	Identities Identities
	// Usage serves /v1/usage and the use gauges of /metrics.
	Usage UsageReader
	// Events serves /v1/events, /v1/history and /v1/overview.
	Events EventSource
	// Backups serves /v1/backup (and its older name, /v1/snapshot).
	Backups Backups
	// LockSets serves /v1/locksets (protocol version 3).
	LockSets LockSetService
}

// missing returns the names of the roles svc lacks, in field order: a nil interface, or
// a nil pointer in one (the accessor of a node whose role was never built). It reads the
// fields by reflection, so that a role added to Services is checked without a line here.
func (svc Services) missing() []string {
	v := reflect.ValueOf(svc)
	var out []string
	for i := range v.NumField() {
		f := v.Field(i)
		if f.IsNil() || (f.Elem().Kind() == reflect.Pointer && f.Elem().IsNil()) {
			out = append(out, "Services."+v.Type().Field(i).Name)
		}
	}
	return out
}
