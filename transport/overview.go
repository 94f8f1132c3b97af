package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// overviewRoutes serves GET /v1/overview, the dashboard's data. Without an EventSource
// it answers 404.
type overviewRoutes struct {
	events  EventSource
	status  StatusReporter
	routing Routing
	auth    *guard
	peers   *http.Client // asks the other members for their status
	scheme  string       // "http://" or "https://"
}

// defaultSoon is how far ahead a lease deadline counts as "expiring soon" by default.
const defaultSoon = 5 * time.Second

// memberTimeout bounds how long the overview waits for each member's own status.
const memberTimeout = time.Second

// overview serves GET /v1/overview: the dashboard's view of the locks, leases and
// members. The locks and leases come from this node's applied state (it answers without a
// leader, during an election too); each member's indexes come from the member itself.
func (h overviewRoutes) overview(w http.ResponseWriter, r *http.Request) (call, error) {
	q := r.URL.Query()
	err := knownQuery(q, "prefix", "after", "limit", "soon_ms")
	var limit, soonMs uint64
	if err == nil {
		limit, err = queryUint(q, "limit", api.MaxListLimit)
	}
	if err == nil {
		soonMs, err = queryUint(q, "soon_ms", 24*60*60*1000)
	}
	if err != nil {
		return call{}, err
	}
	soon := time.Duration(soonMs) * time.Millisecond
	if !q.Has("soon_ms") {
		soon = defaultSoon
	}
	if limit == 0 {
		limit = api.DefaultListLimit
	}
	return call{need: accessRead, name: anyName, do: func(context.Context) (any, error) {
		// The members are asked first and in parallel, the local state read last, so
		// that the locks are as fresh as the answer can be.
		nodes := h.memberStatuses(r)
		applied := h.status.Status().AppliedIndex
		var o cluster.Overview
		first, canRead := true, h.auth.reader(r)
		details, truncated, _ := readablePage(int(limit), q.Get("after"),
			func(d cluster.LockDetail) bool { return canRead(d.Name) },
			func(d cluster.LockDetail) string { return d.Name },
			func(after string, n int) ([]cluster.LockDetail, bool, error) {
				page := h.events.Overview(q.Get("prefix"), after, n, soon)
				if first {
					o, first = page, false // the lease counts and the time of the first reading
				}
				return page.Locks, page.Truncated, nil
			})
		out := api.Overview{
			NodeID: h.routing.ID(), ClusterTimeMs: o.Time, AppliedIndex: applied, Nodes: nodes,
			Leases: api.LeaseSummary{Count: o.Leases, ExpiringSoon: o.Expiring, SoonMs: soon.Milliseconds()},
			Locks:  make([]api.LockDetail, 0, len(details)), Truncated: truncated,
		}
		// The lease counts are of the whole cluster: with ACLs on, only a token with
		// admin on the empty prefix sees them.
		if h.auth.on && h.auth.authorize(r, accessAdmin, "") != nil {
			out.Leases = api.LeaseSummary{SoonMs: soon.Milliseconds(), Withheld: true}
		}
		for _, d := range details {
			ld := api.LockDetail{LockStatus: lockStatus(d.LockView), LeaseFingerprint: d.Lease.String(), TTLMs: d.TTL, TTLLeftMs: max(d.Deadline-o.Time, 0)}
			if d.Granted >= 0 {
				granted, age := d.Granted, o.Time-d.Granted
				ld.GrantedMs, ld.AgeMs = &granted, &age
			}
			out.Locks = append(out.Locks, ld)
		}
		if truncated {
			out.Next = details[len(details)-1].Name
		}
		return out, nil
	}}, nil
}

// memberStatuses returns every member's own view of the cluster: this node's from its
// state, the others' from their GET /v1/cluster, asked with the caller's Authorization
// header (or, with TLS, this node's certificate, which GET /v1/cluster accepts from a
// member). A member that does not answer within memberTimeout is reported unreachable.
func (h overviewRoutes) memberStatuses(r *http.Request) []api.NodeStatus {
	st := h.status.Status()
	out := make([]api.NodeStatus, len(st.Members))
	var wg sync.WaitGroup
	for i, m := range st.Members {
		out[i].Node = api.Node{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Leader: m.Leader}
		switch {
		case m.ID == h.routing.ID():
			serving := h.routing.Serving()
			out[i].Reachable, out[i].LeaderID, out[i].Term = true, st.LeaderID, st.Term
			out[i].CommitIndex, out[i].AppliedIndex = st.CommitIndex, st.AppliedIndex
			out[i].Ready, out[i].Serving = serving != "", serving
		case m.HTTPAddr == "":
			out[i].Error = "its HTTP address is not registered yet"
		default:
			wg.Add(1)
			go func(ns *api.NodeStatus) {
				defer wg.Done()
				c, err := h.memberCluster(r, ns.HTTPAddr)
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
func (h overviewRoutes) memberCluster(r *http.Request, addr string) (api.Cluster, error) {
	var c api.Cluster
	ctx, cancel := context.WithTimeout(r.Context(), memberTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.scheme+addr+"/v1/cluster", nil)
	if err != nil {
		return c, err
	}
	if h := r.Header.Get(api.AuthorizationHeader); h != "" {
		req.Header.Set(api.AuthorizationHeader, h)
	}
	resp, err := h.peers.Do(req)
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
