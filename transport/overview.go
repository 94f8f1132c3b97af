package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
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

// overviewParts are the parts of the overview beside the locks that a caller asks for
// with ?include=, each at some cost to this node.
var overviewParts = []string{"waits_for", "semaphores", "elections"}

// overviewQuery is what GET /v1/overview asks for.
type overviewQuery struct {
	prefix, after string
	limit, queue  int
	soon          time.Duration
	include       map[string]bool
	// waitIndex and wait make a blocking overview: answered once a name under prefix
	// changed after waitIndex, or after wait.
	waitIndex  uint64
	wait       time.Duration
	waitLeader string // the leader the caller last saw (cluster.LeaderUnknown: not given)
	// self leaves the other members out (members=self): they are listed, not asked.
	self bool
}

// parseOverviewQuery reads the query of GET /v1/overview.
func parseOverviewQuery(q url.Values) (overviewQuery, error) {
	out := overviewQuery{prefix: q.Get("prefix"), after: q.Get("after"), soon: defaultSoon, include: map[string]bool{}}
	err := knownQuery(q, "prefix", "after", "limit", "soon_ms", "queue", "include", "wait_index", "wait_ms", "wait_leader", "members")
	out.waitLeader = cluster.LeaderUnknown
	if q.Has("wait_leader") {
		out.waitLeader = q.Get("wait_leader")
	}
	var limit, soonMs, queue, waitMs uint64
	if err == nil {
		limit, err = queryUint(q, "limit", api.MaxListLimit)
	}
	if err == nil {
		soonMs, err = queryUint(q, "soon_ms", 24*60*60*1000)
	}
	if err == nil {
		queue, err = queryUint(q, "queue", api.MaxQueueList)
	}
	if err == nil {
		out.waitIndex, err = queryUint(q, "wait_index", 1<<63-1)
	}
	if err == nil {
		waitMs, err = queryUint(q, "wait_ms", api.MaxWaitMs)
	}
	switch m := q.Get("members"); {
	case err != nil:
	case m == "self":
		out.self = true
	case m != "" && m != "all":
		err = api.Errorf(api.CodeInvalidArgument, "query parameter members=%q must be all or self", m)
	}
	if err == nil && q.Get("include") != "" {
		for _, part := range strings.Split(q.Get("include"), ",") {
			if !slices.Contains(overviewParts, part) {
				err = api.Errorf(api.CodeInvalidArgument, "query parameter include=%q: %q is none of %s", q.Get("include"), part, strings.Join(overviewParts, ", "))
				break
			}
			out.include[part] = true
		}
	}
	if err != nil {
		return out, err
	}
	if q.Has("soon_ms") {
		out.soon = time.Duration(soonMs) * time.Millisecond
	}
	out.limit, out.queue, out.wait = int(limit), int(queue), time.Duration(waitMs)*time.Millisecond
	if out.limit == 0 {
		out.limit = api.DefaultListLimit
	}
	return out, nil
}

// overview serves GET /v1/overview: the dashboard's view of the locks, leases and
// members, and with ?include= the wait-for edges and the deadlock detector's refusals,
// the semaphores and the elections. The locks and leases come from this node's applied
// state (it answers without a leader, during an election too); each member's indexes come
// from the member itself (with members=self, only this node's). Every part leaves out,
// before paging, the names the caller may not read. With wait_ms it is a blocking read:
// it answers once a lock, semaphore or election under the prefix changed in an entry
// after wait_index (pass the last answer's applied_index), once the leader is another
// than wait_leader (when given) or changes, or after wait_ms, and the caller's rights are
// checked again before it answers.
func (h overviewRoutes) overview(w http.ResponseWriter, r *http.Request) (call, error) {
	oq, err := parseOverviewQuery(r.URL.Query())
	if err != nil {
		return call{}, err
	}
	return call{need: accessRead, name: anyName, wait: oq.wait, do: func(ctx context.Context) (any, error) {
		if oq.wait > 0 {
			if err := h.events.WaitChange(ctx, oq.prefix, oq.waitIndex, oq.waitLeader, oq.wait); err != nil {
				return nil, err
			}
			// Rights may have narrowed, or the token gone, while it waited.
			if _, err := h.auth.authorized(r, accessRead, anyName); err != nil {
				return nil, err
			}
		}
		// The members are asked first and in parallel, the local state read last, so
		// that the locks are as fresh as the answer can be.
		nodes := h.memberStatuses(r, oq.self)
		applied := h.status.Status().AppliedIndex
		var o cluster.Overview
		first, canRead := true, h.auth.reader(r)
		details, truncated, _ := readablePage(oq.limit, oq.after,
			func(d cluster.LockDetail) bool { return canRead(d.Name) },
			func(d cluster.LockDetail) string { return d.Name },
			func(after string, n int) ([]cluster.LockDetail, bool, error) {
				page := h.events.Overview(oq.prefix, after, n, oq.soon, oq.queue)
				if first {
					o, first = page, false // the lease counts and the time of the first reading
				}
				return page.Locks, page.Truncated, nil
			})
		out := api.Overview{
			NodeID: h.routing.ID(), ClusterTimeMs: o.Time, AppliedIndex: applied, Nodes: nodes,
			Leases: api.LeaseSummary{Count: o.Leases, ExpiringSoon: o.Expiring, SoonMs: oq.soon.Milliseconds()},
			Locks:  make([]api.LockDetail, 0, len(details)), Truncated: truncated,
		}
		// The lease counts are of the whole cluster: with ACLs on, only a token with
		// admin on the empty prefix sees them.
		if h.auth.on && h.auth.authorize(r, accessAdmin, "") != nil {
			out.Leases = api.LeaseSummary{SoonMs: oq.soon.Milliseconds(), Withheld: true}
		}
		for _, d := range details {
			ld := api.LockDetail{LockStatus: lockStatus(d.LockView, canRead), LeaseFingerprint: d.Lease.String(), TTLMs: d.TTL, TTLLeftMs: max(d.Deadline-o.Time, 0)}
			if d.Granted >= 0 {
				granted, age := d.Granted, o.Time-d.Granted
				ld.GrantedMs, ld.AgeMs = &granted, &age
			}
			out.Locks = append(out.Locks, ld)
		}
		if truncated {
			out.Next = details[len(details)-1].Name
		}
		if oq.include["waits_for"] {
			out.WaitsFor, out.WaitsForTruncated = h.waitsFor(oq, canRead)
			out.Refusals = refusalsFor(h.events.Refusals(oq.prefix, refusalsScanned), canRead, h.auth.mayRead(r))
		}
		if oq.include["semaphores"] {
			sems, more, _ := readablePage(oq.limit, "",
				func(v cluster.SemaphoreView) bool { return canRead(v.Name) },
				func(v cluster.SemaphoreView) string { return v.Name },
				func(after string, n int) ([]cluster.SemaphoreView, bool, error) {
					vs, more := h.events.Semaphores(oq.prefix, after, n, oq.queue)
					return vs, more, nil
				})
			out.Semaphores, out.SemaphoresTruncated = make([]api.SemaphoreStatus, 0, len(sems)), more
			for _, v := range sems {
				out.Semaphores = append(out.Semaphores, semaphoreStatus(v))
			}
		}
		if oq.include["elections"] {
			els, more, _ := readablePage(oq.limit, "",
				func(v cluster.ElectionView) bool { return canRead(v.Name) },
				func(v cluster.ElectionView) string { return v.Name },
				func(after string, n int) ([]cluster.ElectionView, bool, error) {
					vs, more := h.events.Elections(oq.prefix, after, n, oq.queue)
					return vs, more, nil
				})
			out.Elections, out.ElectionsTruncated = make([]api.ElectionStatus, 0, len(els)), more
			for _, v := range els {
				out.Elections = append(out.Elections, electionStatus(v))
			}
		}
		return out, nil
	}}, nil
}

// waitsFor is the overview's wait-for part: the edges of a page of the readable locks
// with waiters, at most oq.queue a lock (at least one, so that a lock's blockers show).
func (h overviewRoutes) waitsFor(oq overviewQuery, canRead func(string) bool) ([]api.LockWaits, bool) {
	perLock := max(oq.queue, 1)
	page, truncated, _ := readablePage(oq.limit, "",
		func(lw cluster.LockWaits) bool { return canRead(lw.Lock) },
		func(lw cluster.LockWaits) string { return lw.Lock },
		func(after string, n int) ([]cluster.LockWaits, bool, error) {
			lws, more := h.events.WaitsFor(oq.prefix, after, n, perLock)
			return lws, more, nil
		})
	out := make([]api.LockWaits, 0, len(page))
	for _, lw := range page {
		a := api.LockWaits{Lock: lw.Lock, Edges: make([]api.WaitEdge, 0, len(lw.Edges)), More: lw.More}
		for _, e := range lw.Edges {
			by := api.WaitsForQueuedAhead
			switch {
			case e.Holds:
				by = api.WaitsForHolder
			case e.ForSet:
				by = api.WaitsForLockSetGrant
			}
			a.Edges = append(a.Edges, api.WaitEdge{
				WaiterFingerprint: cluster.LeaseFingerprint(e.Waiter).String(), WaiterOwner: e.WaiterOwner, WaiterMode: modeName(e.WaiterShared),
				BlockerFingerprint: cluster.LeaseFingerprint(e.Blocker).String(), BlockerOwner: e.BlockerOwner, By: by,
			})
		}
		out = append(out, a)
	}
	return out, truncated
}

// refusalsScanned is how many refusals the overview reads before leaving out those on
// locks the caller may not read.
const refusalsScanned = 4 * api.MaxRefusals

// refusalsFor turns the deadlock detector's recorded refusals into the API's, for a
// caller that may read the names canRead accepts (may: nil with ACLs off): refusals on
// locks it may not read are left out, and the cycle of each shows only what it may read
// (the same rules as a deadlock error's, cycles.go). This is the one place that reads a
// refusal's cycle: today it is parsed back from the history's text; a state that keeps
// cycles as steps would change only this function.
func refusalsFor(rs []cluster.Refusal, canRead, may func(string) bool) []api.Refusal {
	var out []api.Refusal
	for _, r := range rs {
		if !canRead(r.Name) || len(out) == api.MaxRefusals {
			continue
		}
		a := api.Refusal{Lock: r.Name, Index: r.Index, TimeMs: r.Time, Owner: r.Owner, LeaseFingerprint: r.Lease.String(), Cycle: []api.CycleStep{}, Detail: r.Detail}
		if may != nil {
			a.Detail = detailFor(r.Detail, may)
		}
		cycle, _ := parseCycle(r.Detail)
		for i, st := range cycle {
			step := api.CycleStep{LeaseFingerprint: st.Lease.String(), Lock: st.Lock}
			if n := len(cycle); may != nil && !may(st.Lock) {
				// As describeCycleFor: a lease still shows when the lock it is queued
				// ahead on or holds (the previous step's) is readable.
				step.Lock, step.Hidden = "", true
				if !may(cycle[(i+n-1)%n].Lock) {
					step.LeaseFingerprint = ""
				}
			}
			a.Cycle = append(a.Cycle, step)
		}
		out = append(out, a)
	}
	return out
}

// memberStatuses returns every member's own view of the cluster: this node's from its
// state, the others' from their GET /v1/cluster, asked with the caller's Authorization
// header (or, with TLS, this node's certificate, which GET /v1/cluster accepts from a
// member). A member that does not answer within memberTimeout is reported unreachable.
// With self, the others are listed but not asked (their error says so).
func (h overviewRoutes) memberStatuses(r *http.Request, self bool) []api.NodeStatus {
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
		case self:
			out[i].Error = notAsked
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

// notAsked is the error of a member that an overview with members=self did not ask.
const notAsked = "not asked (members=self)"

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
