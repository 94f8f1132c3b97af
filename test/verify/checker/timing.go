package checker

import (
	"fmt"
	"sort"
	"time"
)

// Margin is subtracted from a lease's protected time before it is held against the server:
// it covers the millisecond rounding of TTLs and cluster time. The clock is the one
// monotonic clock of the campaign process, so there is no drift to allow for.
const Margin = 2 * time.Millisecond

// leaseInfo is what the history tells about one lease, keyed by its owner label.
type leaseInfo struct {
	ttl int64 // ns
	// refreshes are the answered operations that set the deadline: creation, keepalives,
	// grants; their call times, ascending.
	refreshes []int64
	// revokes are the call times of every revoke of the lease (any outcome).
	revokes []int64
}

// protectedAfter returns the end of the protected time given the refreshes answered with
// a call time before t (all of them when t is Never): max(call + TTL) - Margin.
func (l *leaseInfo) protected(before int64) int64 {
	best := int64(-1 << 62)
	for _, c := range l.refreshes {
		if c >= before {
			break
		}
		if c+l.ttl > best {
			best = c + l.ttl
		}
	}
	return best - int64(Margin)
}

func (l *leaseInfo) revokedBefore(t int64) (int64, bool) {
	return l.revokedIn(-1<<62, t)
}

// revokedIn returns the first revoke call in (from, to).
func (l *leaseInfo) revokedIn(from, to int64) (int64, bool) {
	for _, c := range l.revokes {
		if c > from && c < to {
			return c, true
		}
	}
	return 0, false
}

func leases(ops []Op) map[string]*leaseInfo {
	out := map[string]*leaseInfo{}
	get := func(owner string) *leaseInfo {
		l := out[owner]
		if l == nil {
			l = &leaseInfo{}
			out[owner] = l
		}
		return l
	}
	for _, o := range ops {
		if o.Owner == "" {
			continue
		}
		switch {
		case o.Kind == KindCreateLease && o.Outcome == OutOK:
			l := get(o.Owner)
			l.ttl = o.TTLMs * int64(time.Millisecond)
			l.refreshes = append(l.refreshes, o.Call)
		case o.Kind == KindKeepAlive && o.Outcome == OutOK, o.Kind == KindAcquire && o.Outcome == OutOK:
			get(o.Owner).refreshes = append(get(o.Owner).refreshes, o.Call)
		case o.Kind == KindRevoke:
			get(o.Owner).revokes = append(get(o.Owner).revokes, o.Call)
		}
	}
	for _, l := range out {
		sort.Slice(l.refreshes, func(i, j int) bool { return l.refreshes[i] < l.refreshes[j] })
		sort.Slice(l.revokes, func(i, j int) bool { return l.revokes[i] < l.revokes[j] })
	}
	return out
}

// grant is an acknowledged grant with the end of the time in which its holder must still
// hold the lock: its lease's protected time, or the holder's first release or revoke call
// (whatever its outcome: an ambiguous release may have taken effect).
type grant struct {
	op  Op
	end int64
	why string
}

// grantsOf returns the acknowledged grants among one lock's ops (all of them, whatever their
// outcome).
func grantsOf(lockOps []Op, ls map[string]*leaseInfo) []grant {
	var out []grant
	for _, g := range lockOps {
		if g.Kind != KindAcquire || g.Outcome != OutOK {
			continue
		}
		l := ls[g.Owner]
		if l == nil || l.ttl == 0 {
			continue // a lease created implicitly; its TTL is not known here
		}
		end := l.protected(Never)
		why := "protected until " + ms(end+int64(Margin)) + " by its last answered refresh"
		for _, r := range lockOps {
			if r.Kind == KindRelease && r.Owner == g.Owner && r.Call > g.Call && r.Call < end {
				end, why = r.Call, "until its release at "+ms(r.Call)
			}
		}
		if c, ok := l.revokedIn(g.Call, end); ok {
			end, why = c, "until its revoke at "+ms(c)
		}
		out = append(out, grant{op: g, end: end, why: why})
	}
	return out
}

// CheckTiming is checker 5: no other lease is granted a lock while its holder's lease is
// protected, and no lease is reported missing while protected.
func CheckTiming(ops []Op) *Verdict {
	v := newVerdict("timing")
	ls := leases(ops)
	locks := byLock(ops, func(Op) bool { return true })
	for _, name := range sortedKeys(locks) {
		gs := grantsOf(locks[name], ls)
		for _, g2 := range gs {
			v.Checked++
			for _, g1 := range gs {
				if g1.op.Owner == g2.op.Owner || g1.op.Token >= g2.op.Token {
					continue
				}
				if g2.op.Return < g1.end {
					v.add("granted_while_protected", fmt.Sprintf("lock %s: %s was granted to %s at %s, but %s held it with token %d %s (%s)",
						name, g2.op, g2.op.Owner, ms(g2.op.Return), g1.op.Owner, g1.op.Token, g1.why, g1.op))
				}
			}
		}
	}
	// A lease reported missing while protected by refreshes answered before the report.
	for _, o := range ops {
		if o.Outcome != OutLeaseNotFound || o.Owner == "" {
			continue
		}
		if o.Kind != KindKeepAlive && o.Kind != KindReadLease && o.Kind != KindAcquire && o.Kind != KindRelease {
			continue
		}
		l := leaseToCheck(v, ls, o)
		if l == nil {
			continue
		}
		if p := l.protected(o.Call); o.Return < p {
			v.add("lease_expired_early", fmt.Sprintf("%s answered lease_not_found at %s, but lease %s was protected until %s", o, ms(o.Return), o.Owner, ms(p+int64(Margin))))
		}
	}
	return v
}

// leaseToCheck returns the lease of o, an answer about it, when that answer is to be
// checked against the lease's protected time, or nil. A lease whose TTL is unknown is not
// checked; one revoked before o returned counts as checked (in v) and needs no more.
func leaseToCheck(v *Verdict, ls map[string]*leaseInfo, o Op) *leaseInfo {
	l := ls[o.Owner]
	if l == nil || l.ttl == 0 {
		return nil
	}
	v.Checked++
	if _, ok := l.revokedBefore(o.Return); ok {
		return nil
	}
	return l
}

// CheckAcknowledged is checker 4: a lock status read that starts after a grant was
// acknowledged and ends within the grant's protected time shows that grant; a lease read in
// its lease's protected time finds the lease and lists the locks it was granted and has not
// released.
func CheckAcknowledged(ops []Op) *Verdict {
	v := newVerdict("acknowledged")
	ls := leases(ops)
	locks := byLock(ops, func(Op) bool { return true })
	held := map[string][]grant{} // by owner
	for _, name := range sortedKeys(locks) {
		gs := grantsOf(locks[name], ls)
		for _, g := range gs {
			held[g.op.Owner] = append(held[g.op.Owner], g)
		}
		for _, r := range locks[name] {
			if r.Kind != KindStatus || r.Outcome != OutOK {
				continue
			}
			v.Checked++
			for _, g := range gs {
				if r.Call <= g.op.Return || r.Return >= g.end {
					continue
				}
				if !r.Held || r.Token != g.op.Token || r.StatusOwner != g.op.Owner {
					v.add("grant_not_reflected", fmt.Sprintf("lock %s: %s, but %s was granted token %d (%s) and held it %s",
						name, r, g.op.Owner, g.op.Token, g.op, g.why))
				}
			}
		}
	}
	for _, r := range ops {
		if r.Kind != KindReadLease || (r.Outcome != OutOK && r.Outcome != OutLeaseNotFound) {
			continue
		}
		l := leaseToCheck(v, ls, r)
		if l == nil {
			continue
		}
		if r.Outcome == OutLeaseNotFound {
			if p := l.protected(r.Call); r.Return < p {
				v.add("lease_not_reflected", fmt.Sprintf("%s, but the lease was protected until %s", r, ms(p+int64(Margin))))
			}
			continue
		}
		listed := map[string]bool{}
		for _, n := range r.Locks {
			listed[n] = true
		}
		for _, g := range held[r.Owner] {
			if r.Call > g.op.Return && r.Return < g.end && !listed[g.op.Lock] {
				v.add("grant_not_reflected", fmt.Sprintf("%s lists %v, missing %s granted by %s and held %s", r, r.Locks, g.op.Lock, g.op, g.why))
			}
		}
	}
	return v
}
