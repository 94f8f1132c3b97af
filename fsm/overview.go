package fsm

import (
	"strings"
	"sync/atomic"
)

// appliedCounts counts the entries this node has applied since it started, by kind. It is
// node-local bookkeeping for metrics: it never changes what Apply does and is not in
// snapshots (a node that restores a snapshot counts only what it applies afterwards).
type appliedCounts struct {
	renew atomic.Uint64
}

func (c *appliedCounts) count(t Type) {
	if t == TypeRenew {
		c.renew.Add(1)
	}
}

// RenewEntries returns how many Renew entries (batched keepalives: one entry renews every
// lease of a batch) this node has applied since it started.
func (f *FSM) RenewEntries() uint64 { return f.counts.renew.Load() }

// LockDetail is a held lock as a dashboard shows it: its view, with its holder's lease
// (by fingerprint, never by ID), the lease's TTL and deadline, and when the grant was made.
type LockDetail struct {
	LockView
	// Lease is the fingerprint of the holder's lease.
	Lease Fingerprint
	// TTL and Deadline are the holder lease's TTL and deadline in cluster time.
	TTL      int64
	Deadline int64
	// Granted is the cluster time of the current grant, from the lock's history; it is
	// -1 when the history does not hold it (histories are kept from protocol version 2
	// on, and bounded).
	Granted int64
}

// Overview is one consistent reading of what a dashboard shows, taken under one read
// lock: a page of held locks with their details, and the lease counts.
type Overview struct {
	// Time is the cluster time of the reading.
	Time int64
	// Locks is the page of held locks under the prefix, in name order; Truncated reports
	// that more follow.
	Locks     []LockDetail
	Truncated bool
	// Leases is the number of live leases; Expiring of them have a deadline at most the
	// asked-for margin after Time.
	Leases   int
	Expiring int
}

// Overview returns a page of at most limit held locks whose names start with prefix and
// sort after after (see Locks), with their holders' leases and grant times and each
// lock's first queue waiters (LockView.Queue), and how many leases expire within soon ms
// of cluster time. Its cost under the read lock is the page (with at most queue waiters
// of each lock) plus the leases expiring soon, whatever the number of locks and leases.
func (f *FSM) Overview(prefix, after string, limit int, soon int64, queue int) Overview {
	f.mu.RLock()
	defer f.mu.RUnlock()
	o := Overview{Time: f.s.time, Leases: len(f.s.leases), Expiring: f.s.leaseExp.CountUntil(f.s.time + soon)}
	o.Locks = make([]LockDetail, 0, min(max(limit, 0), maxPagePrealloc))
	f.s.names.AscendGreaterOrEqual(max(prefix, after), func(n string) bool {
		switch {
		case n == after:
			return true
		case !strings.HasPrefix(n, prefix):
			return false
		case limit > 0 && len(o.Locks) == limit:
			o.Truncated = true
			return false
		}
		d := LockDetail{LockView: f.s.view(n), Granted: -1}
		if lk := f.s.locks[n]; queue != 0 {
			d.Queue = f.s.queueOf(&lk.ro().queue, queue)
		}
		if d.Held {
			// LeaseFingerprint, not the lease's cached fingerprint: filling that cache
			// would write under a read lock.
			d.Lease = LeaseFingerprint(d.Holder)
			if l := f.s.leases[d.Holder]; l != nil {
				d.TTL, d.Deadline = l.ttl, l.deadline
			}
			if lh := f.s.hist.byName[histKey{SpaceLock, n}]; lh != nil {
				evs := lh.ordered()
				for i := len(evs) - 1; i >= 0; i-- {
					if evs[i].Kind == HistoryGranted && evs[i].Token == d.Token {
						d.Granted = evs[i].Time
						break
					}
				}
			}
		}
		o.Locks = append(o.Locks, d)
		return true
	})
	return o
}
