package fsm

import (
	"sort"
	"strings"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// lease is one live lease. held and waiting are nil until used, so a lease that holds
// nothing costs a map entry and this struct. waiting maps each lock the lease waits for
// to its node in that lock's queue, so that it leaves the queue without a scan.
type lease struct {
	id       LeaseID
	ttl      int64
	deadline int64
	held     map[string]struct{}
	waiting  map[string]*waiter
	fp       *Fingerprint // LeaseFingerprint(id), computed on first use (history.go)
	prims    *leasePrims  // semaphores and elections (prims.go); nil until used
}

// lock is a held lock. A lock that is free has no waiters (a release hands it to the first
// one) and so is deleted from the table: free locks take no memory.
type lock struct {
	holder LeaseID
	token  uint64
	owner  string
	modify uint64
	queue  waitQueue
	// readers holds every holder while the lock is held shared (shared.go), and is nil
	// while it is held exclusive.
	readers *grantSet
}

// waiter is a lease queued for a lock, with its wait deadline in cluster time, and its
// links in the lock's queue.
type waiter struct {
	lease      LeaseID
	owner      string
	deadline   int64
	since      int64  // cluster time it joined the queue plus one; 0: unknown (version 1)
	shared     bool   // a shared lock request (locks only)
	value      string // the candidate's value (elections only)
	prev, next *waiter
}

// state is the whole replicated state. It has no locking of its own: FSM serializes it.
type state struct {
	time       int64
	applied    uint64 // index of the last entry applied (command or configuration)
	freedIndex uint64 // index of the last entry that freed a lock (dropped its state)
	leases     map[LeaseID]*lease
	locks      map[string]*lock
	names      *btree.BTreeG[string] // the keys of locks in order, so a list page is not a scan
	nodes      map[string]NodeInfo
	leaseExp   leases.Table // keyed by string(lease ID bytes)
	waitExp    leases.Table // keyed by waitKey(name, lease)
	notify     func(Event)
	protocol           // what protocol versions added: see version.go
	hist       history // per-lock histories (history.go): replicated from version 2 on
	primState          // semaphores and elections (prims.go)
}

// nameIndexDegree is the B-tree degree of the lock name index: nodes of up to 63 names
// keep the tree shallow (4 levels at 1,000,000 locks) and a page's names mostly in one
// node.
const nameIndexDegree = 32

func newState(notify func(Event)) *state {
	if notify == nil {
		notify = func(Event) {}
	}
	return &state{
		leases:    make(map[LeaseID]*lease),
		locks:     make(map[string]*lock),
		names:     btree.NewOrderedG[string](nameIndexDegree),
		nodes:     make(map[string]NodeInfo),
		notify:    notify,
		protocol:  protocol{acl: newACL()},
		primState: newPrimState(),
	}
}

// waitKey orders waiters by lock name then lease. Names never contain NUL, so the key is
// unambiguous.
func waitKey(name string, id LeaseID) string {
	return name + "\x00" + string(id[:])
}

func splitWaitKey(k string) (string, LeaseID) {
	i := strings.LastIndexByte(k[:len(k)-16], 0)
	var id LeaseID
	copy(id[:], k[i+1:])
	return k[:i], id
}

// apply applies one decoded command at index. Time moves first, then everything that has
// expired by the new time is expired, then the command itself takes effect.
func (s *state) apply(index uint64, c *Command) *Result {
	s.advance(c.Now)
	s.applied = index
	s.expire(index)
	s.settle(index)
	r := &Result{Index: index}
	defer s.settle(index)
	switch c.Type.known(s.maxVersion) {
	case TypeTick:
	case TypeCreateLease:
		if s.leaseQuota(c.Lease, r) {
			break
		}
		r.TTL = s.createLease(c.Lease, c.TTL).ttl
	case TypeRenew:
		r.Renewed = make([]bool, len(c.Leases))
		r.RenewedTTL = make([]int64, len(c.Leases))
		for i, id := range c.Leases {
			if l := s.leases[id]; l != nil {
				s.touch(l)
				r.Renewed[i], r.RenewedTTL[i] = true, l.ttl
			}
		}
	case TypeRevoke:
		l := s.leases[c.Lease]
		if l == nil {
			r.Status = StatusLeaseNotFound
			break
		}
		if mutant.Is("revoke-leaves-locks") {
			l.held = nil
		}
		s.hist.endCause = HistoryRevoked
		r.Released = s.removeLeases(index, []*lease{l})
	case TypeAcquire:
		s.acquire(index, c, r)
	case TypeAcquireShared:
		if s.active(c.Type, r) {
			s.acquire(index, c, r)
		}
	case TypeSemAcquire, TypeSemRelease, TypeSemDequeue, TypeCampaign, TypeResign, TypeElectionDequeue:
		if s.active(c.Type, r) {
			s.applyPrim(index, c, r)
		}
	case TypeRelease:
		l := s.leases[c.Lease]
		lk := s.locks[c.Name]
		var token uint64
		var holds bool
		if lk != nil {
			token, _, holds = lk.grantOf(c.Lease)
		}
		switch {
		case l == nil:
			r.Status = StatusLeaseNotFound
		case !holds || token != c.Token && !mutant.Is("release-ignores-token"):
			r.Status = StatusNotHolder
		default:
			s.recordEnd(c.Name, lk, l, HistoryReleased)
			s.releaseGrant(index, c.Name, lk, l.id)
		}
	case TypeDequeue:
		s.dequeue(index, c, r)
	case TypeRegisterNode:
		s.nodes[c.Node.ID] = c.Node
	case TypeRemoveNode:
		delete(s.nodes, c.Node.ID)
		delete(s.nodeVersions, c.Node.ID)
	case TypeSetVersion:
		s.setVersion(c)
	case typeNodeVersion:
		s.registerVersion(c, r)
	case TypeSetLimits:
		if s.active(c.Type, r) {
			s.limits = c.Limits
		}
	case TypeACLBootstrap, TypeACLSetPolicy, TypeACLDeletePolicy, TypeACLSetToken, TypeACLDeleteToken:
		s.applyACL(c, r)
	default:
		r.Status = StatusSkipped
	}
	return r
}

func (s *state) createLease(id LeaseID, ttl int64) *lease {
	if l := s.leases[id]; l != nil {
		return l // a re-proposed create is a no-op
	}
	l := &lease{id: id, ttl: ttl}
	s.leases[id] = l
	s.touch(l)
	return l
}

// touch renews a lease: its deadline becomes the entry's stamp plus its TTL. The stamp is
// at least the entry's Now, which the leader read after the request arrived.
func (s *state) touch(l *lease) {
	l.deadline = satAdd(s.stamp, l.ttl)
	if mutant.Is("renew-from-apply-time") {
		l.deadline = satAdd(s.time, l.ttl)
	}
	s.leaseExp.Set(string(l.id[:]), l.deadline)
}

func (s *state) dequeue(index uint64, c *Command, r *Result) {
	lk := s.locks[c.Name]
	if lk != nil {
		if token, owner, ok := lk.grantOf(c.Lease); ok {
			r.Token, r.Owner = token, owner
			return
		}
	}
	r.Status = StatusNotHolder
	if l := s.leases[c.Lease]; l != nil && lk != nil {
		if _, queued := l.waiting[c.Name]; queued && !mutant.Is("abandon-not-dequeued") {
			s.hist.waitCause = HistoryWaitAbandoned
			s.leaveQueue(index, c.Name, l)
		}
	}
}

// expire removes every waiter whose wait has ended and every lease whose deadline has
// passed at the current time. All expired leases leave every queue before any of their
// locks is handed over, so no lock is handed to a lease that expires in the same entry.
func (s *state) expire(index uint64) {
	for _, k := range s.waitExp.PopExpired(s.time) {
		name, id := splitWaitKey(k)
		if l := s.leases[id]; l != nil && !mutant.Is("expired-waiters-stay") {
			s.hist.waitCause = HistoryWaitTimedOut
			s.leaveQueue(index, name, l)
		}
	}
	s.expirePrimWaits(index)
	keys := s.leaseExp.PopExpired(s.time)
	if len(keys) == 0 {
		return
	}
	dead := make([]*lease, 0, len(keys))
	for _, k := range keys {
		var id LeaseID
		copy(id[:], k)
		dead = append(dead, s.leases[id])
	}
	s.hist.endCause = HistoryExpired
	s.removeLeases(index, dead)
}

// removeLeases deletes leases (revoked or expired): first from every queue, then their
// locks are released in name order, handing each to its next waiter. It returns the
// released names when one lease is removed.
func (s *state) removeLeases(index uint64, ls []*lease) []string {
	for _, l := range ls {
		for _, name := range sortedNames(l.waiting) {
			s.hist.waitCause = HistoryWaitLeaseEnded
			s.leaveQueue(index, name, l)
		}
		s.leavePrimQueues(index, l)
		delete(s.leases, l.id)
		s.leaseExp.Delete(string(l.id[:]))
	}
	var released []string
	for _, l := range ls {
		names := sortedNames(l.held)
		for _, name := range names {
			lk := s.locks[name]
			s.recordEnd(name, lk, l, s.hist.endCause)
			s.releaseGrant(index, name, lk, l.id)
		}
		released = names
	}
	s.releasePrims(index, ls)
	if released == nil {
		released = []string{}
	}
	return released
}

// leaveQueue takes lease l, which waits for lock name, out of that lock's queue.
func (s *state) leaveQueue(index uint64, name string, l *lease) {
	w := l.waiting[name]
	delete(l.waiting, name)
	s.waitExp.Delete(waitKey(name, l.id))
	lk := s.locks[name]
	lk.queue.remove(w)
	lk.modify = index
	if lk.isShared() && lk.queue.head != nil && lk.queue.head.shared {
		s.admit = append(s.admit, name) // granted by settle, once the entry's removals are done
	}
	s.recordWaitEnd(name, w, l)
	s.notify(Event{Kind: EventWaitEnded, Name: name, Lease: l.id, Index: index})
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

// release frees lock name, held by lk, and hands it to the first waiter in the same entry:
// the new grant's token is this entry's index.
func (s *state) release(index uint64, name string, lk *lock) {
	if old := s.leases[lk.holder]; old != nil {
		delete(old.held, name)
	}
	s.handOver(index, name, lk)
}

// handOver gives lock name, which has just become free, to the head of its queue at index:
// to the head waiter when it is exclusive, to the shared waiters at the head otherwise. A
// lock with nobody waiting is deleted.
func (s *state) handOver(index uint64, name string, lk *lock) {
	if lk.queue.len == 0 {
		delete(s.locks, name)
		s.names.Delete(name)
		s.freedIndex = index
		s.notify(Event{Kind: EventLockChanged, Name: name, Index: index, Freed: true})
		return
	}
	w := lk.queue.head
	if w.shared {
		s.grantShared(index, name, lk)
		return
	}
	if mutant.Is("handover-skips-head") && w.next != nil {
		w = w.next
	}
	lk.queue.remove(w)
	next := s.leases[w.lease]
	delete(next.waiting, name)
	s.waitExp.Delete(waitKey(name, w.lease))
	addName(&next.held, name)
	token := index
	if mutant.Is("handover-token-plus-one") {
		token = lk.token + 1
	}
	if mutant.Is("regrant-keeps-token") {
		token = lk.token
	}
	lk.holder, lk.token, lk.owner, lk.modify = w.lease, token, w.owner, index
	s.notify(Event{Kind: EventGranted, Name: name, Lease: w.lease, Token: token, Owner: w.owner, Index: index})
	granted := HistoryEvent{Kind: HistoryGranted, FromQueue: true, Lease: next.fingerprint(), Token: token, Owner: w.owner}
	if w.since > 0 {
		granted.Waited = s.time - (w.since - 1)
	}
	s.record(name, granted)
	s.notify(Event{Kind: EventLockChanged, Name: name, Index: index})
}

func addName(m *map[string]struct{}, name string) {
	if *m == nil {
		*m = make(map[string]struct{}, 1)
	}
	(*m)[name] = struct{}{}
}

// addWaiting records that lease l waits for lock name as w.
func addWaiting(l *lease, name string, w *waiter) {
	if l.waiting == nil {
		l.waiting = make(map[string]*waiter, 1)
	}
	l.waiting[name] = w
}

func sortedNames[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
