package checker

import (
	"fmt"
	"sort"
)

// Deadlock checks of the lockset workload ("set"), from the history alone:
//
//   - deadlock_unbacked: a deadlock answer's cycle must be possible at one instant of the
//     refused request: its lease is the cycle's first, asking for the first lock; each later
//     lease of the cycle had a waiting request on its lock in flight then; and each lock
//     was then possibly held by, or asked for by a request in flight of, the next lease.
//   - undetected_cycle: no instant at which leases waited for each other in a cycle,
//     every wait of which ended by wait_timeout and every lock of which was certainly held
//     by the next lease. The server refuses the request that would close a cycle, so
//     such a cycle means one was queued instead.
//
// Windows. A grant of lock x to lease Q is possibly held from its call to the return of
// the op that ended it (a release or lockset release answered ok or not_holder, a revoke
// answered ok or lease_not_found; never, without one), and certainly held from its return
// to the call of the first op of Q that could have ended it, or to its call plus its
// maximum hold, whichever is first. Leases of this workload never expire in a round.
// A wait of w ms answered wait_timeout was queued, in a correct server, from the commit of
// its queueing entry to an expiry no earlier than its call + w (cluster time starts at or
// after the call and never runs faster than real time), and the expiry came at least w
// after the queueing entry's stamp. With the entry committed within QueueCommit of its
// stamp, the wait was certainly queued from its return - w + QueueCommit to its call + w.
// That commit bound is an assumption (a slower commit would make this check see a cycle
// that did not exist: a false alarm, never a missed deadlock).

// QueueCommit bounds, for undetected_cycle, how long after its stamp the entry that
// queued a timed-out wait committed.
const QueueCommit = 250_000_000 // 250 ms, in ns

// window is a closed interval of the history's clock.
type window struct{ lo, hi int64 }

func (w window) has(t int64) bool { return w.lo <= t && t <= w.hi }

// setHold is one grant of a lock of the set workload.
type setHold struct {
	owner, lock       string
	possible, certain window
}

// setWait is one waiting request of the set workload on one of its locks.
type setWait struct {
	op   Op
	lock string
}

// opLocks returns the locks an op names: its lock, or a lockset's names.
func opLocks(o Op) []string {
	if o.Lock != "" {
		return []string{o.Lock}
	}
	return o.Names
}

// setHolds reconstructs every grant of the set workload's locks with its windows.
func setHolds(ops []Op) []setHold {
	byOwner := map[string][]Op{}
	for _, o := range ops {
		if o.Workload == "set" && o.Owner != "" {
			byOwner[o.Owner] = append(byOwner[o.Owner], o)
		}
	}
	var out []setHold
	for _, list := range byOwner {
		sort.Slice(list, func(i, j int) bool { return list[i].Call < list[j].Call })
		for i, g := range list {
			if (g.Kind != KindAcquire && g.Kind != KindLockSet) || (g.Outcome != OutOK && g.Outcome != OutAmbiguous) {
				continue
			}
			for _, lock := range opLocks(g) {
				h := setHold{owner: g.Owner, lock: lock, possible: window{g.Call, Never}, certain: window{Never, Never}}
				if g.Outcome == OutOK {
					h.certain = window{g.Return, Never}
					if g.MaxHoldMs > 0 {
						h.certain.hi = g.Call + g.MaxHoldMs*1_000_000
					}
				}
				for _, e := range list[i+1:] {
					if !ends(e, lock) || e.Outcome == OutUnavailable {
						continue
					}
					if e.Call < h.certain.hi {
						h.certain.hi = e.Call
					}
					if e.Outcome == OutOK || e.Outcome == OutNotHolder || e.Outcome == OutLeaseNotFound {
						h.possible.hi = e.Return
						break
					}
				}
				out = append(out, h)
			}
		}
	}
	return out
}

// ends reports whether op e could end its lease's grant of lock.
func ends(e Op, lock string) bool {
	switch e.Kind {
	case KindRevoke:
		return true
	case KindRelease, KindLockSetRelease:
		for _, l := range opLocks(e) {
			if l == lock {
				return true
			}
		}
	}
	return false
}

// setWaits returns the waiting requests of the set workload that were, or may have been,
// queued (any answer but a refusal that queues nothing), one per lock asked for.
func setWaits(ops []Op) []setWait {
	var out []setWait
	for _, o := range ops {
		if o.Workload != "set" || (o.Kind != KindAcquire && o.Kind != KindLockSet) || o.WaitMs <= 0 {
			continue
		}
		switch o.Outcome {
		case OutOK, OutWaitTimeout, OutAmbiguous:
		default:
			continue
		}
		for _, l := range opLocks(o) {
			out = append(out, setWait{op: o, lock: l})
		}
	}
	return out
}

// CheckDeadlocks runs both deadlock checks on the set workload's ops.
func CheckDeadlocks(ops []Op) *Verdict {
	v := newVerdict("deadlocks")
	holds, waits := setHolds(ops), setWaits(ops)
	owners := map[string]string{} // fingerprint -> owner
	for _, o := range ops {
		if o.Kind == KindCreateLease && o.Fingerprint != "" {
			owners[o.Fingerprint] = o.Owner
		}
	}
	for _, o := range ops {
		if o.Workload == "set" && o.Outcome == OutDeadlock {
			v.Checked++
			if why := unbacked(o, owners, holds, waits); why != "" {
				v.add("deadlock_unbacked", fmt.Sprintf("%s: cycle %v: %s", o, o.Cycle, why))
			}
		}
	}
	checkUndetected(v, ops, holds)
	return v
}

// unbacked returns why deadlock answer o is not backed by a possible cycle ("" if it is).
func unbacked(o Op, owners map[string]string, holds []setHold, waits []setWait) string {
	if len(o.Cycle) == 0 {
		return "the answer names no cycle"
	}
	lease := make([]string, len(o.Cycle))
	for i, st := range o.Cycle {
		owner, ok := owners[st.Lease]
		if !ok {
			return fmt.Sprintf("lease %s is none of the workload's", st.Lease)
		}
		lease[i] = owner
	}
	if lease[0] != o.Owner {
		return fmt.Sprintf("the cycle starts with %s, not the requester", lease[0])
	}
	asked := false
	for _, l := range opLocks(o) {
		asked = asked || l == o.Cycle[0].Lock
	}
	if !asked {
		return fmt.Sprintf("the request did not ask for %s", o.Cycle[0].Lock)
	}
	// edge reports whether step i of the cycle is possible at t.
	edge := func(i int, t int64) bool {
		lock, next := o.Cycle[i].Lock, lease[(i+1)%len(lease)]
		if i > 0 && !waitingAt(waits, lease[i], lock, t) {
			return false
		}
		for _, h := range holds {
			if h.owner == next && h.lock == lock && h.possible.has(t) {
				return true
			}
		}
		return waitingAt(waits, next, lock, t)
	}
	// The feasible instants are a union of closed windows, each starting at the call or
	// at the start of one of the windows tested: trying those is enough.
	cands := []int64{o.Call}
	for _, h := range holds {
		cands = append(cands, h.possible.lo)
	}
	for _, w := range waits {
		cands = append(cands, w.op.Call)
	}
	for _, t := range cands {
		if t < o.Call || t > o.Return {
			continue
		}
		all := true
		for i := range o.Cycle {
			if all = edge(i, t); !all {
				break
			}
		}
		if all {
			return ""
		}
	}
	return "no instant of the request at which every step of it was possible"
}

// waitingAt reports whether owner had a waiting request on lock in flight at t.
func waitingAt(waits []setWait, owner, lock string, t int64) bool {
	for _, w := range waits {
		if w.op.Owner == owner && w.lock == lock && w.op.Call <= t && (t <= w.op.Return || w.op.Outcome == OutAmbiguous) {
			return true
		}
	}
	return false
}

// timedOut is a wait answered wait_timeout with the window in which it was certainly
// queued (see the package comment above).
type timedOut struct {
	op     Op
	queued window
}

// checkUndetected adds an undetected_cycle anomaly for each instant-connected cycle of
// timed-out waits on certainly held locks (one per cycle found, by its first instant).
func checkUndetected(v *Verdict, ops []Op, holds []setHold) {
	var tos []timedOut
	for _, o := range ops {
		if o.Workload == "set" && o.Outcome == OutWaitTimeout && o.WaitMs > 0 {
			w := o.WaitMs * 1_000_000
			q := window{o.Return - w + QueueCommit, o.Call + w}
			v.Checked++
			if q.lo <= q.hi {
				tos = append(tos, timedOut{op: o, queued: q})
			}
		}
	}
	reported := map[string]bool{}
	for _, cand := range tos {
		t := cand.queued.lo
		// The graph at t: owner -> owners certainly holding a lock it certainly waited for.
		graph := map[string][]string{}
		for _, w := range tos {
			if !w.queued.has(t) {
				continue
			}
			for _, l := range opLocks(w.op) {
				for _, h := range holds {
					if h.lock == l && h.owner != w.op.Owner && h.certain.has(t) {
						graph[w.op.Owner] = append(graph[w.op.Owner], h.owner+"@"+l)
					}
				}
			}
		}
		if cyc := findCycle(graph, cand.op.Owner); cyc != nil {
			key := fmt.Sprint(sortedCopy(cyc))
			if !reported[key] {
				reported[key] = true
				v.add("undetected_cycle", fmt.Sprintf("at %s, %s waited (wait_timeout) in the cycle %v with every lock certainly held", ms(t), cand.op, cyc))
			}
		}
	}
}

// findCycle returns a cycle through root in graph (edges "owner@lock"), or nil.
func findCycle(graph map[string][]string, root string) []string {
	seen := map[string]bool{}
	var path []string
	var dfs func(n string) bool
	dfs = func(n string) bool {
		for _, e := range graph[n] {
			to, lock := splitEdge(e)
			path = append(path, n+" waits for "+lock+" held by "+to)
			if to == root {
				return true
			}
			if !seen[to] {
				seen[to] = true
				if dfs(to) {
					return true
				}
			}
			path = path[:len(path)-1]
		}
		return false
	}
	if dfs(root) {
		return path
	}
	return nil
}

func splitEdge(e string) (owner, lock string) {
	for i := 0; i < len(e); i++ {
		if e[i] == '@' {
			return e[:i], e[i+1:]
		}
	}
	return e, ""
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}
