package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Prefix routing across clusters. Past one cluster's ceiling (docs/SCALING.md) the names are
// split between several clusters, each owning some prefixes, and a Router sends each request
// to the cluster owning the longest prefix of its name. Clusters share nothing: a lease, and
// so every grant and fencing token, belongs to the one cluster that created it, and tokens
// stay monotonic per lock because a lock's name always routes to the same cluster (a prefix
// moves only by a restore under a token floor, docs/SCALING.md). A lease of one cluster used
// for a name another cluster owns is refused with ErrCrossCluster before anything is sent.

var (
	// ErrNoRoute: no route of the Router owns the name (no prefix of it is routed and there
	// is no default route ""). Also matches ErrInvalid.
	ErrNoRoute = errors.New("client: no cluster owns the name")
	// ErrCrossCluster: a lease of one cluster was given for a name another cluster owns.
	// Nothing was sent: a lease, its grants and their tokens exist on one cluster only.
	// Also matches ErrInvalid.
	ErrCrossCluster = errors.New("client: the lease belongs to another cluster")
)

// Route gives one cluster the names that start with its prefixes.
type Route struct {
	// Name labels the cluster in errors ("eu-1"); empty means "cluster N", N its position
	// in the list given to NewRouter, from 1.
	Name string
	// Prefixes are the name prefixes the cluster owns, compared byte by byte ("accounts/"
	// owns "accounts/A"). The empty prefix is the default route: it owns every name no
	// other prefix matches. A prefix may be routed to one cluster only.
	Prefixes []string
	// Endpoints are the cluster's endpoints, as for New.
	Endpoints []string
	// Options apply to this cluster's client after the Router's own (its token, say).
	Options []Option
}

// Router sends each request to the cluster that owns its name: the one routed the longest
// prefix of the name. Leases are per cluster: NewLease creates one on the cluster that owns
// the name it is given, and the Router remembers which cluster each lease it created (or
// that an Acquire created with a grant) belongs to, refusing with ErrCrossCluster to use it
// for a name of another cluster. A lease ID the Router never saw goes to the cluster of the
// name, which refuses it with ErrLeaseNotFound unless the lease is its own.
//
// For the primitives without a Router method (semaphores, elections, watches), ClientFor
// returns the cluster's Client, and CheckLease says whether a lease fits a name. A Router is
// safe for concurrent use.
type Router struct {
	clusters []routeCluster
	prefixes []routePrefix // longest first

	mu      sync.Mutex
	leases  map[string]leaseHome // lease ID -> where it lives
	sweepAt int                  // len(leases) at which expired entries are swept
}

type routeCluster struct {
	name string
	c    *Client
}

type routePrefix struct {
	prefix  string
	cluster int
}

// leaseHome is the cluster a lease lives on. A lease made by NewLease stays until it is
// done; one created with a grant until its TTL has passed, when it can no longer be used.
type leaseHome struct {
	cluster int
	until   time.Time // zero: held until the Lease is done
}

// NewRouter returns a Router for routes, each cluster's client made with opts followed by
// the route's own Options. It refuses an empty list, a route without prefixes or
// endpoints, and a prefix routed twice.
func NewRouter(routes []Route, opts ...Option) (*Router, error) {
	if len(routes) == 0 {
		return nil, errors.New("client: NewRouter: no routes given")
	}
	r := &Router{leases: map[string]leaseHome{}, sweepAt: 64}
	owner := map[string]string{}
	for i, rt := range routes {
		name := rt.Name
		if name == "" {
			name = fmt.Sprintf("cluster %d", i+1)
		}
		if len(rt.Prefixes) == 0 {
			return nil, fmt.Errorf("client: NewRouter: route %s has no prefixes (give \"\" for the default route)", name)
		}
		c, err := New(rt.Endpoints, append(slices.Clip(opts), rt.Options...)...)
		if err != nil {
			return nil, fmt.Errorf("client: NewRouter: route %s: %w", name, err)
		}
		for _, p := range rt.Prefixes {
			if other, dup := owner[p]; dup {
				return nil, fmt.Errorf("client: NewRouter: prefix %q is routed to both %s and %s", p, other, name)
			}
			owner[p] = name
			r.prefixes = append(r.prefixes, routePrefix{prefix: p, cluster: i})
		}
		r.clusters = append(r.clusters, routeCluster{name: name, c: c})
	}
	slices.SortStableFunc(r.prefixes, func(a, b routePrefix) int { return len(b.prefix) - len(a.prefix) })
	return r, nil
}

// route returns the index of the cluster owning name, for the operation verb (its errors
// say "verb \"name\"", built only when there is one).
func (r *Router) route(verb, name string) (int, error) {
	for _, p := range r.prefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.cluster, nil
		}
	}
	return 0, wrap(ErrNoRoute, ErrInvalid, "%s %q: no route owns the name (no routed prefix matches it, and there is no default route \"\")", verb, name)
}

// ClientFor returns the Client of the cluster that owns name.
func (r *Router) ClientFor(name string) (*Client, error) {
	i, err := r.route("route", name)
	if err != nil {
		return nil, err
	}
	return r.clusters[i].c, nil
}

// ClusterFor returns the label of the cluster that owns name (Route.Name).
func (r *Router) ClusterFor(name string) (string, error) {
	i, err := r.route("route", name)
	if err != nil {
		return "", err
	}
	return r.clusters[i].name, nil
}

// CheckLease returns nil when lease may hold name: when the cluster that owns name is the
// one the lease lives on. Otherwise it returns ErrCrossCluster (or ErrNoRoute).
func (r *Router) CheckLease(lease *Lease, name string) error {
	i, err := r.route("lease for", name)
	if err != nil {
		return err
	}
	if lease.c != r.clusters[i].c {
		return wrap(ErrCrossCluster, ErrInvalid, "lease %s for %q: the name is %s's, the lease another cluster's (%s); take a lease on %s", redactID(lease.ID()), name, r.clusters[i].name, r.clusterOf(lease.c), r.clusters[i].name)
	}
	return nil
}

// clusterOf names the cluster whose client is c.
func (r *Router) clusterOf(c *Client) string {
	for _, cl := range r.clusters {
		if cl.c == c {
			return cl.name
		}
	}
	return "a client outside this router"
}

// checkLeaseID refuses leaseID for name, of cluster i, in the operation verb when the
// Router knows the lease lives on another cluster.
func (r *Router) checkLeaseID(verb, name string, i int, leaseID string) error {
	r.mu.Lock()
	home, ok := r.leases[leaseID]
	if ok && !home.until.IsZero() && time.Now().After(home.until) {
		delete(r.leases, leaseID)
		ok = false
	}
	r.mu.Unlock()
	if ok && home.cluster != i {
		return wrap(ErrCrossCluster, ErrInvalid, "%s %q: the name is %s's, lease %s is %s's; take a lease on %s", verb, name, r.clusters[i].name, redactID(leaseID), r.clusters[home.cluster].name, r.clusters[i].name)
	}
	return nil
}

// remember records that leaseID lives on cluster i, until until (zero: until forget).
func (r *Router) remember(leaseID string, i int, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leases[leaseID] = leaseHome{cluster: i, until: until}
	if len(r.leases) < r.sweepAt {
		return
	}
	now := time.Now()
	for id, h := range r.leases {
		if !h.until.IsZero() && now.After(h.until) {
			delete(r.leases, id)
		}
	}
	r.sweepAt = 2*len(r.leases) + 64
}

func (r *Router) forget(leaseID string) {
	r.mu.Lock()
	delete(r.leases, leaseID)
	r.mu.Unlock()
}

// NewLease creates a lease, kept alive in the background, on the cluster that owns name (a
// lock name or a prefix: the lease may hold any name of that cluster). See Client.NewLease.
func (r *Router) NewLease(ctx context.Context, name string, ttl time.Duration, opts ...LeaseOption) (*Lease, error) {
	i, err := r.route("new lease for", name)
	if err != nil {
		return nil, err
	}
	l, err := r.clusters[i].c.NewLease(ctx, ttl, opts...)
	if err != nil {
		return nil, err
	}
	r.remember(l.ID(), i, time.Time{})
	go func() {
		<-l.Done()
		r.forget(l.ID())
	}()
	return l, nil
}

// Acquire takes lock name on the cluster that owns it (see Client.Acquire). With
// opts.LeaseID set, a lease this Router knows to live on another cluster is refused with
// ErrCrossCluster. A lease created with the grant is remembered as the owning cluster's.
func (r *Router) Acquire(ctx context.Context, name string, opts AcquireOptions) (api.Grant, error) {
	i, err := r.route("acquire", name)
	if err != nil {
		return api.Grant{}, err
	}
	if opts.LeaseID != "" {
		if err := r.checkLeaseID("acquire", name, i, opts.LeaseID); err != nil {
			return api.Grant{}, err
		}
	}
	g, err := r.clusters[i].c.Acquire(ctx, name, opts)
	if err == nil && opts.LeaseID == "" && g.LeaseID != "" {
		r.remember(g.LeaseID, i, time.Now().Add(time.Duration(g.TTLMs)*time.Millisecond))
	}
	return g, err
}

// Release releases lock name on the cluster that owns it (see Client.Release); a lease this
// Router knows to live on another cluster is refused with ErrCrossCluster.
func (r *Router) Release(ctx context.Context, name, leaseID string, token uint64) error {
	i, err := r.route("release", name)
	if err != nil {
		return err
	}
	if err := r.checkLeaseID("release", name, i, leaseID); err != nil {
		return err
	}
	return r.clusters[i].c.Release(ctx, name, leaseID, token)
}

// Status reads lock name on the cluster that owns it (see Client.Status).
func (r *Router) Status(ctx context.Context, name string, opts StatusOptions) (api.LockStatus, error) {
	c, err := r.ClientFor(name)
	if err != nil {
		return api.LockStatus{}, err
	}
	return c.Status(ctx, name, opts)
}

// NewMutex returns a Mutex for lock name on the cluster that owns it, creating its own
// lease there for each hold (see Client.NewMutex).
func (r *Router) NewMutex(name string, opts ...MutexOption) (*Mutex, error) {
	c, err := r.ClientFor(name)
	if err != nil {
		return nil, err
	}
	return c.NewMutex(name, opts...), nil
}

// NewMutexWith returns a Mutex for lock name held with lease (see NewMutex), or
// ErrCrossCluster when the lease lives on another cluster than the one that owns name.
func (r *Router) NewMutexWith(lease *Lease, name string, opts ...MutexOption) (*Mutex, error) {
	if err := r.CheckLease(lease, name); err != nil {
		return nil, err
	}
	return NewMutex(lease, name, opts...), nil
}
