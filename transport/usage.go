package transport

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// The quotas per identity at the API (protocol version 5): GET /v1/usage. The quotas are
// set on policies and tokens (acl.go) and by serve's flags; the state machine decides them
// (fsm/quotas.go).

// usageRoutes serves /v1/usage.
type usageRoutes struct {
	reader UsageReader
	auth   *guard
}

// usageJSON is identity v's use against its quotas, under the name the API gives it.
func usageJSON(name string, v cluster.UsageView) api.Usage {
	return api.Usage{Identity: name,
		Leases:  api.Use{Used: v.Leases, Limit: v.Quotas.MaxLeases},
		Locks:   api.Use{Used: v.Locks, Limit: v.Quotas.MaxLocks},
		Waiters: api.Use{Used: v.Waiters, Limit: v.Quotas.MaxWaiters}}
}

// usage answers GET /v1/usage: the caller's own use of the cluster against its quotas,
// from this node's applied state; with ?all, for a token with admin on the empty prefix,
// every identity's and the whole cluster's against its limits. With ACLs off every caller
// is one identity, anonymous, whose quotas are the cluster's limits.
func (h usageRoutes) usage(w http.ResponseWriter, r *http.Request) (call, error) {
	if r.URL.Query().Has("all") {
		return call{need: accessAdmin, do: func(context.Context) (any, error) {
			ids, leases, locks, waiters := h.reader.Usages()
			none := h.reader.Usage("") // its quotas are the cluster's limits
			out := api.UsageList{Identities: []api.Usage{}, Cluster: api.Usage{Identity: "cluster",
				Leases:  api.Use{Used: leases, Limit: none.Quotas.MaxLeases},
				Locks:   api.Use{Used: locks, Limit: none.Quotas.MaxLocks},
				Waiters: api.Use{Used: waiters, Limit: none.Quotas.MaxWaiters}}}
			for _, v := range ids {
				out.Identities = append(out.Identities, usageJSON(v.Identity, v))
			}
			return out, nil
		}}, nil
	}
	if !h.auth.on {
		return call{do: func(context.Context) (any, error) { return usageJSON(cluster.CallerAnonymous, h.reader.Usage("")), nil }}, nil
	}
	if !h.auth.ids.Bootstrapped() {
		return call{}, api.Errorf(api.CodeUnauthenticated, "ACLs are on but not bootstrapped yet: run `raftlock acl bootstrap` once to get the management token")
	}
	id, hasToken, err := h.auth.identity(r)
	switch {
	case err != nil:
		return call{}, err
	case !hasToken && !id.AnyAccess(cluster.AccessRead):
		return call{}, denied(false, accessRead, anyName)
	}
	self := id.Accessor
	if !hasToken {
		self = cluster.CallerAnonymous
	}
	return call{do: func(context.Context) (any, error) { return usageJSON(self, h.reader.Usage(self)), nil }}, nil
}

func (h aclRoutes) listTokens(w http.ResponseWriter, r *http.Request) (call, error) {
	return call{need: accessAdmin, do: func(context.Context) (any, error) {
		out := api.ACLTokenList{Tokens: []api.ACLToken{}}
		for _, t := range h.acl.Tokens() {
			out.Tokens = append(out.Tokens, tokenViewJSON(t))
		}
		return out, nil
	}}, nil
}

func (h aclRoutes) deleteToken(w http.ResponseWriter, r *http.Request) (call, error) {
	accessor := r.PathValue("accessor")
	return call{need: accessAdmin, do: func(ctx context.Context) (any, error) {
		if err := h.acl.DeleteToken(ctx, accessor); err != nil {
			return nil, err
		}
		h.log.Info("ACL token revoked", "accessor_id", accessor)
		return map[string]string{"revoked": accessor}, nil
	}}, nil
}

// The per-identity gauges of /metrics: each identity's leases, grants and waits. They are
// usage counts (docs/SECURITY.md, "/metrics"): only the registry that a token with admin on
// the empty prefix reads carries them.
var (
	identityLeasesDesc = prometheus.NewDesc("raftlock_identity_leases", "Live leases of one identity (ACL accessor; anonymous: callers without a token; empty: leases made without ACLs).", []string{"identity"}, nil)
	identityLocksDesc  = prometheus.NewDesc("raftlock_identity_locks", "Grants one identity holds: locks, semaphore permits, leaderships.", []string{"identity"}, nil)
	identityWaitsDesc  = prometheus.NewDesc("raftlock_identity_waiters", "Waits of one identity: for locks, permits and leaderships.", []string{"identity"}, nil)
	identityQuotaDesc  = prometheus.NewDesc("raftlock_identity_quota", "One identity's quota in force (kind: leases, locks, waiters; 0: none).", []string{"identity", "kind"}, nil)
)

// usageCollector reports each identity's use at scrape time, from this node's applied
// state.
type usageCollector struct{ usage UsageReader }

func (c usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- identityLeasesDesc
	ch <- identityLocksDesc
	ch <- identityWaitsDesc
	ch <- identityQuotaDesc
}

func (c usageCollector) Collect(ch chan<- prometheus.Metric) {
	ids, _, _, _ := c.usage.Usages()
	for _, v := range ids {
		ch <- prometheus.MustNewConstMetric(identityLeasesDesc, prometheus.GaugeValue, float64(v.Leases), v.Identity)
		ch <- prometheus.MustNewConstMetric(identityLocksDesc, prometheus.GaugeValue, float64(v.Locks), v.Identity)
		ch <- prometheus.MustNewConstMetric(identityWaitsDesc, prometheus.GaugeValue, float64(v.Waiters), v.Identity)
		for kind, q := range map[string]uint64{"leases": v.Quotas.MaxLeases, "locks": v.Quotas.MaxLocks, "waiters": v.Quotas.MaxWaiters} {
			ch <- prometheus.MustNewConstMetric(identityQuotaDesc, prometheus.GaugeValue, float64(q), v.Identity, kind)
		}
	}
}
