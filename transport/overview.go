package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
)

// OverviewNode is what GET /v1/overview (the dashboard's data) and the apply counters of
// /metrics need of a node, beside Node. It is found at run time, so that test doubles of
// Node need not implement it; a node without it answers GET /v1/overview with 404 and
// exports no apply counters.
type OverviewNode interface {
	// Overview reads a page of the held locks under prefix, with their holders' leases
	// and grant times, and the lease counts, from the node's applied state.
	Overview(prefix, after string, limit int, soonMs int64) fsm.Overview
	// MetricsCounters returns counters by Prometheus name (see counterHelp).
	MetricsCounters() map[string]float64
}

// defaultSoonMs is how far ahead a lease deadline counts as "expiring soon" by default.
const defaultSoonMs = 5000

// memberTimeout bounds how long the overview waits for each member's own status.
const memberTimeout = time.Second

// handleOverview serves GET /v1/overview: the dashboard's view of the locks, leases and
// members. The locks and leases come from this node's applied state (it answers without a
// leader, during an election too); each member's indexes come from the member itself.
func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) {
	on, ok := s.node.(OverviewNode)
	if !ok {
		writeError(w, api.Errorf(api.CodeNotFound, "this node does not serve an overview"))
		return
	}
	q := r.URL.Query()
	err := knownQuery(q, "prefix", "after", "limit", "soon_ms")
	var limit, soon uint64
	if err == nil {
		limit, err = queryUint(q, "limit", api.MaxListLimit)
	}
	if err == nil {
		soon, err = queryUint(q, "soon_ms", 24*60*60*1000)
	}
	if err == nil && !q.Has("soon_ms") {
		soon = defaultSoonMs
	}
	if err == nil {
		err = s.authorize(r, accessRead, anyName)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if limit == 0 {
		limit = api.DefaultListLimit
	}
	// The members are asked first and in parallel, the local state read last, so that
	// the locks are as fresh as the answer can be.
	nodes := s.memberStatuses(r)
	applied := s.node.Status().AppliedIndex
	o := on.Overview(q.Get("prefix"), q.Get("after"), int(limit), int64(soon))
	out := api.Overview{
		NodeID: s.node.ID(), ClusterTimeMs: o.Time, AppliedIndex: applied, Nodes: nodes,
		Leases: api.LeaseSummary{Count: o.Leases, ExpiringSoon: o.Expiring, SoonMs: int64(soon)},
		Locks:  make([]api.LockDetail, 0, len(o.Locks)), Truncated: o.Truncated,
	}
	for _, d := range o.Locks {
		if !s.canRead(r, d.Name) {
			continue // the cursor still moves past it, as in GET /v1/locks
		}
		ld := api.LockDetail{LockStatus: lockStatus(d.LockView), LeaseFingerprint: d.Lease.String(), TTLMs: d.TTL, TTLLeftMs: max(d.Deadline-o.Time, 0)}
		if d.Granted >= 0 {
			granted, age := d.Granted, o.Time-d.Granted
			ld.GrantedMs, ld.AgeMs = &granted, &age
		}
		out.Locks = append(out.Locks, ld)
	}
	if o.Truncated && len(o.Locks) > 0 {
		out.Next = o.Locks[len(o.Locks)-1].Name
	}
	writeJSON(w, http.StatusOK, out)
}

// memberStatuses returns every member's own view of the cluster: this node's from its
// state, the others' from their GET /v1/cluster, asked with the caller's Authorization
// header (or, with TLS, this node's certificate, which GET /v1/cluster accepts from a
// member). A member that does not answer within memberTimeout is reported unreachable.
func (s *Server) memberStatuses(r *http.Request) []api.NodeStatus {
	st := s.node.Status()
	out := make([]api.NodeStatus, len(st.Members))
	var wg sync.WaitGroup
	for i, m := range st.Members {
		out[i].Node = api.Node{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Leader: m.Leader}
		switch {
		case m.ID == s.node.ID():
			serving := s.node.Serving()
			out[i].Reachable, out[i].LeaderID, out[i].Term = true, st.LeaderID, st.Term
			out[i].CommitIndex, out[i].AppliedIndex = st.CommitIndex, st.AppliedIndex
			out[i].Ready, out[i].Serving = serving != "", serving
		case m.HTTPAddr == "":
			out[i].Error = "its HTTP address is not registered yet"
		default:
			wg.Add(1)
			go func(ns *api.NodeStatus) {
				defer wg.Done()
				c, err := s.memberCluster(r, ns.HTTPAddr)
				if err != nil {
					ns.Error = err.Error()
					return
				}
				ns.Reachable, ns.LeaderID, ns.Term = true, c.LeaderID, c.Term
				ns.CommitIndex, ns.AppliedIndex, ns.Ready, ns.Serving = c.CommitIndex, c.AppliedIndex, c.Ready, c.Serving
			}(&out[i])
		}
	}
	wg.Wait()
	return out
}

// memberCluster asks the member at addr for its GET /v1/cluster. Errors name the member's
// address and the status, never the credentials sent.
func (s *Server) memberCluster(r *http.Request, addr string) (api.Cluster, error) {
	var c api.Cluster
	ctx, cancel := context.WithTimeout(r.Context(), memberTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme()+addr+"/v1/cluster", nil)
	if err != nil {
		return c, err
	}
	if h := r.Header.Get(api.AuthorizationHeader); h != "" {
		req.Header.Set(api.AuthorizationHeader, h)
	}
	resp, err := s.fwd.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return c, fmt.Errorf("no answer from %s within %v", addr, memberTimeout)
		}
		return c, fmt.Errorf("no answer from %s (%s)", addr, describeDialError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("%s answered %d", addr, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return c, fmt.Errorf("%s answered something else than its cluster status", addr)
	}
	return c, nil
}

// describeDialError shortens a client error to its last part ("connection refused").
func describeDialError(err error) string {
	var last error = err
	for {
		u, ok := last.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return last.Error()
		}
		last = u.Unwrap()
	}
}

// counterHelp documents the counters an OverviewNode exports.
var counterHelp = map[string]string{
	"raftlock_grants_total":        "Locks granted by the entries this node applied (every node applies every entry, so any node's rate is the cluster's).",
	"raftlock_handovers_total":     "Grants to a waiter, made by the release, revoke or expiry that freed the lock, in the same entry, as applied by this node.",
	"raftlock_renew_entries_total": "Renew entries (one per batch of keepalives) applied by this node.",
}

// counterCollector reports an OverviewNode's counters at scrape time.
type counterCollector struct{ node OverviewNode }

func (c counterCollector) Describe(ch chan<- *prometheus.Desc) {
	for name, help := range counterHelp {
		ch <- prometheus.NewDesc(name, help, nil, nil)
	}
}

func (c counterCollector) Collect(ch chan<- prometheus.Metric) {
	vals := c.node.MetricsCounters()
	for name, help := range counterHelp {
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, vals[name])
	}
}
