package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/internal/mutant"
)

// HistoryLen is how many events the state machine keeps per lock: the newest HistoryLen,
// older ones are overwritten.
const HistoryLen = 32

// HistoryLocks bounds how many locks (and, from protocol version 7, semaphores and
// elections: one bound for all) have a history at once, so a stream of distinct names costs
// at most HistoryLocks × HistoryLen events. Past it one history is dropped:
//
//   - before protocol version 5, that of the lock least recently active (the one whose
//     newest event is oldest, ties broken by the order in which the log touched them);
//   - from version 5, the bound is shared between identities: each history belongs to
//     the identity whose lease first made it (the creator of that lease, "" for none), and
//     the identity with the most histories (ties: the smallest identity) loses its least
//     recently active one. An identity therefore never loses a history to another's churn
//     while it has no more histories than that other one: one with at most HistoryLocks
//     divided by the number of identities with a history keeps all of them.
const HistoryLocks = 100_000

// HistoryKind says what a HistoryEvent records.
type HistoryKind uint8

// History event kinds. A handover is two events at the same index: the end of the old
// grant (released, expired or revoked), then the granted event of the next holder, which
// has FromQueue set.
const (
	// HistoryGranted: lease Lease (owner Owner) was granted the lock with Token.
	HistoryGranted HistoryKind = iota + 1
	// HistoryReleased: the holder released the grant Token.
	HistoryReleased
	// HistoryExpired: the holder's lease expired (Deadline; Renewed is its last renewal).
	HistoryExpired
	// HistoryRevoked: the holder's lease was revoked.
	HistoryRevoked
	// HistoryWaitAbandoned: a waiter left the queue because its client gave up (dequeue).
	HistoryWaitAbandoned
	// HistoryWaitTimedOut: a waiter's wait deadline passed (Deadline) before a grant.
	HistoryWaitTimedOut
	// HistoryWaitLeaseEnded: a waiter's lease expired or was revoked while it waited.
	HistoryWaitLeaseEnded
	// HistoryDeadlock: a waiting request of lease Lease was refused because it would
	// close a wait-for cycle, described in Detail (version 3).
	HistoryDeadlock
	// HistoryMaxHold: the grant Token was held for its maximum and ended (version 3).
	HistoryMaxHold
	// HistoryLockDelay: the lease of an ended grant with a lock delay ended without a
	// release; nobody is granted the lock before Deadline (version 3).
	HistoryLockDelay
	// HistoryLockDelayEnded: the lock delay is over; the lock goes to its next waiter.
	HistoryLockDelayEnded
	// The kinds of a semaphore's history (semHistoryKinds), each the semaphore's
	// counterpart of the lock kind its name echoes: a permit granted (Token, FromQueue,
	// Waited), released, ended by its lease's expiry (Deadline, Renewed) or revoke or by
	// its maximum hold, and a wait for a permit abandoned, timed out (Deadline) or ended
	// with its lease.
	HistoryPermitGranted
	HistoryPermitReleased
	HistoryPermitExpired
	HistoryPermitRevoked
	HistoryPermitMaxHold
	HistoryPermitWaitAbandoned
	HistoryPermitWaitTimedOut
	HistoryPermitWaitLeaseEnded
	// The kinds of an election's history (electionHistoryKinds): a lease elected (Token,
	// the term of office; FromQueue, Waited), the leader resigned, its lease expired or was
	// revoked, a new value proclaimed by the leader (Token), and a candidacy abandoned,
	// timed out or ended with its lease.
	HistoryElected
	HistoryResigned
	HistoryLeaderExpired
	HistoryLeaderRevoked
	HistoryProclaimed
	HistoryCandidateAbandoned
	HistoryCandidateTimedOut
	HistoryCandidateLeaseEnded
	historyKindEnd // one past the last kind
)

// primHistorySince is the protocol version from which the histories of semaphores and
// elections are kept in the replicated state. Before it their events go to the observer
// only (the event stream shows them at every version), as a lock's do at version 1.
const primHistorySince = 7

// lockHistoryKinds are the kinds a lock's history records (its row in primitives), with
// the version from which a snapshot holds each.
var lockHistoryKinds = []historyKind{
	{kind: HistoryGranted, name: "granted", since: 2},
	{kind: HistoryReleased, name: "released", since: 2},
	{kind: HistoryExpired, name: "expired", since: 2},
	{kind: HistoryRevoked, name: "revoked", since: 2},
	{kind: HistoryWaitAbandoned, name: "wait_abandoned", since: 2},
	{kind: HistoryWaitTimedOut, name: "wait_timed_out", since: 2},
	{kind: HistoryWaitLeaseEnded, name: "wait_lease_ended", since: 2},
	{kind: HistoryDeadlock, name: "deadlock_refused", since: 3},
	{kind: HistoryMaxHold, name: "max_hold_ended", since: 3},
	{kind: HistoryLockDelay, name: "lock_delay", since: 3},
	{kind: HistoryLockDelayEnded, name: "lock_delay_ended", since: 3},
}

// semHistoryKinds are the kinds a semaphore's history records (its row in primitives),
// each standing for the lock kind in as.
var semHistoryKinds = []historyKind{
	{kind: HistoryPermitGranted, name: "permit_granted", since: primHistorySince, as: HistoryGranted},
	{kind: HistoryPermitReleased, name: "permit_released", since: primHistorySince, as: HistoryReleased},
	{kind: HistoryPermitExpired, name: "permit_expired", since: primHistorySince, as: HistoryExpired},
	{kind: HistoryPermitRevoked, name: "permit_revoked", since: primHistorySince, as: HistoryRevoked},
	{kind: HistoryPermitMaxHold, name: "permit_max_hold_ended", since: primHistorySince, as: HistoryMaxHold},
	{kind: HistoryPermitWaitAbandoned, name: "permit_wait_abandoned", since: primHistorySince, as: HistoryWaitAbandoned},
	{kind: HistoryPermitWaitTimedOut, name: "permit_wait_timed_out", since: primHistorySince, as: HistoryWaitTimedOut},
	{kind: HistoryPermitWaitLeaseEnded, name: "permit_wait_lease_ended", since: primHistorySince, as: HistoryWaitLeaseEnded},
}

// electionHistoryKinds are the kinds an election's history records (its row in
// primitives), each standing for the lock kind in as (proclaimed stands for none).
var electionHistoryKinds = []historyKind{
	{kind: HistoryElected, name: "elected", since: primHistorySince, as: HistoryGranted},
	{kind: HistoryResigned, name: "resigned", since: primHistorySince, as: HistoryReleased},
	{kind: HistoryLeaderExpired, name: "leader_expired", since: primHistorySince, as: HistoryExpired},
	{kind: HistoryLeaderRevoked, name: "leader_revoked", since: primHistorySince, as: HistoryRevoked},
	{kind: HistoryProclaimed, name: "proclaimed", since: primHistorySince},
	{kind: HistoryCandidateAbandoned, name: "candidate_abandoned", since: primHistorySince, as: HistoryWaitAbandoned},
	{kind: HistoryCandidateTimedOut, name: "candidate_timed_out", since: primHistorySince, as: HistoryWaitTimedOut},
	{kind: HistoryCandidateLeaseEnded, name: "candidate_lease_ended", since: primHistorySince, as: HistoryWaitLeaseEnded},
}

// String names the kind as the HTTP API does.
func (k HistoryKind) String() string {
	if k < historyKindEnd && historyKinds[k].name != "" {
		return historyKinds[k].name
	}
	return "unknown"
}

// Fingerprint is a short one-way hash of a lease ID: enough to tell a lock's leases apart
// in its history, useless to act on the lease (the ID is a bearer secret and is never
// kept in a history).
type Fingerprint [4]byte

// String returns the fingerprint in hex.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// LeaseFingerprint returns the fingerprint of lease id: the first bytes of a
// domain-separated SHA-256.
func LeaseFingerprint(id LeaseID) Fingerprint {
	var in [len("raftlock lease fingerprint\x00") + len(id)]byte
	n := copy(in[:], "raftlock lease fingerprint\x00")
	copy(in[n:], id[:])
	sum := sha256.Sum256(in[:])
	var f Fingerprint
	copy(f[:], sum[:])
	return f
}

// fingerprint returns the lease's fingerprint, hashing its ID once: a lease is usually
// recorded many times (each grant and release), and the hash is most of a record's cost.
// It is derived, not replicated, state.
func (l *lease) fingerprint() Fingerprint {
	if l.fp == nil {
		fp := LeaseFingerprint(l.id)
		l.fp = &fp
	}
	return *l.fp
}

// HistoryEvent is one event in a lock's history. Times are cluster time in milliseconds.
type HistoryEvent struct {
	Kind HistoryKind
	// FromQueue marks a grant to a waiter (a handover, or a grant after the lock was
	// freed by an expiry); Waited is then how long it waited, in ms, when known (0 for a
	// wait that began before version 2 was active).
	FromQueue bool
	// Lease is the fingerprint of the lease concerned: the grantee, the holder whose
	// grant ended, or the waiter.
	Lease Fingerprint
	// Index is the log index of the entry, and Time the cluster time it was applied at.
	Index uint64
	Time  int64
	// Token is the grant concerned (granted: the new token; released, expired, revoked:
	// the ended grant's token; 0 for wait events).
	Token uint64
	// Owner is the owner label of the grantee, holder or waiter.
	Owner  string
	Waited int64
	// Deadline is the lease's deadline (expired) or the wait's deadline (wait_timed_out).
	Deadline int64
	// Renewed is the lease's last renewal (expired): its deadline minus its TTL.
	Renewed int64
	// Detail is the wait-for cycle of a refused request (deadlock_refused), written as
	// DescribeCycle does.
	Detail string
}

// lockHistory is the ring of the newest events of one name of a primitive (a lock, or
// from version 7 a semaphore or an election: space), linked into the history's activity
// order.
type lockHistory struct {
	name       string
	space      Space
	events     []HistoryEvent // grows to HistoryLen, then wraps at head
	head       int            // index of the oldest event once the ring is full
	prev, next *lockHistory   // activity order: prev is less recently active
	// owner is the identity the history is charged to (version 5), and by the histories
	// of its owner in activity order.
	owner *historyOwner
	by    struct{ prev, next *lockHistory }
}

// historyOwner is one identity's histories: how many, and their activity order.
type historyOwner struct {
	id             string
	n              int
	oldest, newest *lockHistory
}

// ownerLess orders identities for eviction: the most histories first, then by identity.
func ownerLess(a, b *historyOwner) bool {
	if a.n != b.n {
		return a.n > b.n
	}
	return a.id < b.id
}

// ordered returns the events oldest first.
func (h *lockHistory) ordered() []HistoryEvent {
	out := make([]HistoryEvent, 0, len(h.events))
	out = append(out, h.events[h.head:]...)
	return append(out, h.events[:h.head]...)
}

func (h *lockHistory) add(e HistoryEvent) {
	if len(h.events) < HistoryLen {
		h.events = append(h.events, e)
		return
	}
	h.events[h.head] = e
	h.head = (h.head + 1) % HistoryLen
}

// history holds the per-lock histories. It is replicated state from protocol version 2
// on: every node records the same events at the same entries, and snapshot format 2
// carries it, in activity order, so that eviction stays the same after a restore.
type history struct {
	byName    map[histKey]*lockHistory
	oldest    *lockHistory // least recently active: evicted first
	newest    *lockHistory
	waitCause HistoryKind // scratch for one entry: why the waiters leaving now leave
	endCause  HistoryKind // scratch for one entry: why the leases removed now end
	maxLocks  int         // HistoryLocks; tests lower it
	// observed is set when the FSM has an observer: events are then built at every
	// version (for the event stream); otherwise only from version 2 on, to be kept.
	observed bool
	// owners are the identities with a history, by identity and in eviction order
	// (version 5; derived from the histories' owners, which the snapshot keeps).
	owners     map[string]*historyOwner
	byEviction *btree.BTreeG[*historyOwner]
}

// histKey names a history: a name in a primitive's namespace (one name may be a lock, a
// semaphore and an election at once, each with its own history).
type histKey struct {
	space Space
	name  string
}

func (lh *lockHistory) key() histKey { return histKey{lh.space, lh.name} }

func (h *history) len() int { return len(h.byName) }

// unlink takes lh out of the activity order.
func (h *history) unlink(lh *lockHistory) {
	if lh.prev != nil {
		lh.prev.next = lh.next
	} else {
		h.oldest = lh.next
	}
	if lh.next != nil {
		lh.next.prev = lh.prev
	} else {
		h.newest = lh.prev
	}
	lh.prev, lh.next = nil, nil
}

// pushNewest appends lh as the most recently active.
func (h *history) pushNewest(lh *lockHistory) {
	lh.prev, lh.next = h.newest, nil
	if h.newest != nil {
		h.newest.next = lh
	} else {
		h.oldest = lh
	}
	h.newest = lh
}

// add appends e to the history of name in space, making it the most recently active, and
// evicts a history past the bound: the least recently active one, or, with shares
// (version 5), the least recently active one of the identity with the most (see
// HistoryLocks). A new history is charged to identity owner. From version 7 the bound
// counts the histories of semaphores and elections with the locks'.
func (h *history) add(space Space, name, owner string, e HistoryEvent, shares bool) {
	if h.byName == nil {
		h.byName = make(map[histKey]*lockHistory)
	}
	k := histKey{space, name}
	lh := h.byName[k]
	if lh == nil {
		lh = &lockHistory{name: name, space: space}
		h.byName[k] = lh
		if shares {
			h.own(lh, owner)
		}
	} else {
		h.unlink(lh)
		if lh.owner != nil {
			h.unlinkOwned(lh)
			h.pushOwned(lh)
		}
	}
	lh.add(e)
	h.pushNewest(lh)
	limit := h.maxLocks
	if limit <= 0 {
		limit = HistoryLocks
	}
	for len(h.byName) > limit {
		old := h.oldest
		if shares && h.byEviction != nil && h.byEviction.Len() > 0 && !mutant.Is("history-shares-off") {
			top, _ := h.byEviction.Min()
			old = top.oldest
		}
		h.drop(old)
	}
}

// drop forgets history lh.
func (h *history) drop(lh *lockHistory) {
	h.unlink(lh)
	delete(h.byName, lh.key())
	if o := lh.owner; o != nil {
		h.unlinkOwned(lh)
		h.byEviction.Delete(o)
		o.n--
		if o.n == 0 {
			delete(h.owners, o.id)
		} else {
			h.byEviction.ReplaceOrInsert(o)
		}
		lh.owner = nil
	}
}

// own charges the new history lh to identity id, as its most recently active one.
func (h *history) own(lh *lockHistory, id string) {
	if h.owners == nil {
		h.owners = make(map[string]*historyOwner)
		h.byEviction = btree.NewG(8, ownerLess)
	}
	o := h.owners[id]
	if o == nil {
		o = &historyOwner{id: id}
		h.owners[id] = o
	} else {
		h.byEviction.Delete(o)
	}
	o.n++
	h.byEviction.ReplaceOrInsert(o)
	lh.owner = o
	h.pushOwned(lh)
}

// ownAll charges every history to the identity "", in activity order: what version 5
// finds when it is activated, made before histories had an owner. It runs once, in the
// entry that activates version 5.
func (h *history) ownAll() {
	for lh := h.oldest; lh != nil; lh = lh.next {
		h.own(lh, "")
	}
}

// pushOwned appends lh as its owner's most recently active history.
func (h *history) pushOwned(lh *lockHistory) {
	o := lh.owner
	lh.by.prev, lh.by.next = o.newest, nil
	if o.newest != nil {
		o.newest.by.next = lh
	} else {
		o.oldest = lh
	}
	o.newest = lh
}

// unlinkOwned takes lh out of its owner's activity order.
func (h *history) unlinkOwned(lh *lockHistory) {
	o := lh.owner
	if lh.by.prev != nil {
		lh.by.prev.by.next = lh.by.next
	} else {
		o.oldest = lh.by.next
	}
	if lh.by.next != nil {
		lh.by.next.by.prev = lh.by.prev
	} else {
		o.newest = lh.by.prev
	}
	lh.by.prev, lh.by.next = nil, nil
}

// record builds nothing unless someone needs it: the event goes to the observer always
// (the event stream works at every version) and into the replicated history only when
// the active version is 2 or more, so that a version 1 node and this one never differ.
// who is the lease the event concerns (nil for none): a new history is charged to its
// creator from version 5.
func (s *state) record(name string, who *lease, e HistoryEvent) {
	if s.version < 2 && !s.hist.observed {
		return // nobody keeps or reads it
	}
	e.Index, e.Time = s.applied, s.time
	if s.version >= 2 {
		owner := ""
		if who != nil {
			owner = who.creator
		}
		s.hist.add(SpaceLock, name, owner, e, s.version >= 5)
	}
	s.notify(Event{Kind: EventHistory, Name: name, Index: e.Index, History: e})
}

// recordEnd records the end of lk's grant, held by lease l, for cause.
func (s *state) recordEnd(name string, lk *lock, l *lease, cause HistoryKind) {
	if s.version < 2 && !s.hist.observed {
		return
	}
	token, owner, _ := lk.grantOf(l.id)
	e := HistoryEvent{Kind: cause, Lease: l.fingerprint(), Token: token, Owner: owner}
	if cause == HistoryExpired {
		e.Deadline, e.Renewed = l.deadline, l.deadline-l.ttl
	}
	s.record(name, l, e)
}

// recordWaitEnd records that waiter w, of lease l, left the queue of lock name, for the
// current waitCause.
func (s *state) recordWaitEnd(name string, w *waiter, l *lease) {
	if s.version < 2 && !s.hist.observed {
		return
	}
	cause := s.hist.waitCause
	if cause == 0 {
		cause = HistoryWaitAbandoned
	}
	e := HistoryEvent{Kind: cause, Lease: l.fingerprint(), Owner: w.owner}
	if w.since > 0 {
		e.Waited = s.time - (w.since - 1)
	}
	if cause == HistoryWaitTimedOut {
		e.Deadline = w.deadline
	}
	s.record(name, l, e)
}

// recordIn records e for name in space: a lock's event through record; a semaphore's or
// an election's goes to the observer at every version (the event stream shows it), and is
// kept in the replicated history from primHistorySince on. who is the lease the event
// concerns (nil for none).
func (s *state) recordIn(space Space, name string, who *lease, e HistoryEvent) {
	if space == SpaceLock {
		s.record(name, who, e)
		return
	}
	keep := s.version >= primHistorySince
	if !keep && !s.hist.observed {
		return // nobody keeps or reads it
	}
	e.Index, e.Time = s.applied, s.time
	if keep {
		owner := ""
		if who != nil {
			owner = who.creator
		}
		s.hist.add(space, name, owner, e, true)
	}
	s.notify(Event{Kind: EventHistory, Space: space, Name: name, Index: e.Index, History: e})
}

// knownSpace reports whether space is a primitive's namespace.
func knownSpace(space Space) bool {
	for i := range primitives {
		if primitives[i].space == space {
			return true
		}
	}
	return false
}

// recorded reports whether an event of space at this entry would be kept or observed, so
// that callers build none for nobody.
func (s *state) recorded(space Space) bool {
	if space == SpaceLock {
		return s.version >= 2 || s.hist.observed
	}
	return s.version >= primHistorySince || s.hist.observed
}

// fingerprintOf is the fingerprint of lease id, through who when it is that lease (its
// cached fingerprint) and hashed otherwise.
func fingerprintOf(id LeaseID, who *lease) Fingerprint {
	if who != nil && who.id == id {
		return who.fingerprint()
	}
	return LeaseFingerprint(id)
}

// recordGrantIn records that lease l was granted name in space with token, to owner: from
// the queue when w, its wait, is not nil (with how long it waited, when known).
func (s *state) recordGrantIn(space Space, name string, l *lease, token uint64, owner string, w *waiter) {
	if !s.recorded(space) {
		return
	}
	e := HistoryEvent{Kind: kindIn[space][HistoryGranted], Lease: l.fingerprint(), Token: token, Owner: owner}
	if w != nil {
		e.FromQueue = true
		if w.since > 0 {
			e.Waited = s.time - (w.since - 1)
		}
	}
	s.recordIn(space, name, l, e)
}

// recordEndIn records the end of lease id's grant (token, owner) of name in space, for
// cause (a lock kind: released, expired, revoked, max_hold_ended); who is that lease when
// the caller has it (it may have left the table already).
func (s *state) recordEndIn(space Space, name string, id LeaseID, who *lease, token uint64, owner string, cause HistoryKind) {
	if !s.recorded(space) {
		return
	}
	e := HistoryEvent{Kind: kindIn[space][cause], Lease: fingerprintOf(id, who), Token: token, Owner: owner}
	if who == nil {
		who = s.leases[id]
	}
	if cause == HistoryExpired && who != nil {
		e.Deadline, e.Renewed = who.deadline, who.deadline-who.ttl
	}
	s.recordIn(space, name, who, e)
}

// recordWaitEndIn records that waiter w, of lease l, left the queue of name in space
// without a grant, for the current waitCause (abandoned when none is set).
func (s *state) recordWaitEndIn(space Space, name string, w *waiter, l *lease) {
	if !s.recorded(space) {
		return
	}
	cause := s.hist.waitCause
	if cause == 0 {
		cause = HistoryWaitAbandoned
	}
	e := HistoryEvent{Kind: kindIn[space][cause], Lease: l.fingerprint(), Owner: w.owner}
	if w.since > 0 {
		e.Waited = s.time - (w.since - 1)
	}
	if cause == HistoryWaitTimedOut {
		e.Deadline = w.deadline
	}
	s.recordIn(space, name, l, e)
}

// History returns the newest events of lock name, oldest first (nil when it has none).
func (f *FSM) History(name string) []HistoryEvent { return f.HistoryOf(SpaceLock, name) }

// HistoryOf returns the newest events of name in space, oldest first (nil when it has
// none): a lock's from version 2, a semaphore's or an election's from version 7.
func (f *FSM) HistoryOf(space Space, name string) []HistoryEvent {
	f.mu.RLock()
	defer f.mu.RUnlock()
	lh := f.s.hist.byName[histKey{space, name}]
	if lh == nil {
		return nil
	}
	return lh.ordered()
}

// HistoryCount returns how many locks have a history.
func (f *FSM) HistoryCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.hist.len()
}

// encodeHistory writes the histories (format 2 on, the lock's first part of the snapshot)
// in activity order, least recent first; each event is written in full so that the
// encoding is canonical. From version 7 each history says its namespace (a byte, after
// its name): versions before it hold the locks' only, and write what they wrote.
func (s *state) encodeHistory(e *snapEncoder) {
	e.buf = binary.AppendUvarint(e.buf, uint64(s.hist.len()))
	for lh := s.hist.oldest; lh != nil; lh = lh.next {
		buf := appendString(e.buf, lh.name)
		if s.version >= primHistorySince {
			buf = append(buf, byte(lh.space))
		}
		if s.version >= 5 {
			buf = appendString(buf, lh.owner.id)
		}
		buf = binary.AppendUvarint(buf, uint64(len(lh.events)))
		// Oldest first without the copy ordered() makes: the ring from head, then before it.
		for i := range lh.events {
			buf = appendHistoryEvent(buf, &lh.events[(lh.head+i)%len(lh.events)])
		}
		e.buf = buf
		e.spill()
	}
}

// appendHistoryEvent appends one event of a lock's history.
func appendHistoryEvent(buf []byte, e *HistoryEvent) []byte {
	buf = append(buf, byte(e.Kind))
	if e.FromQueue {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = append(buf, e.Lease[:]...)
	buf = binary.AppendUvarint(buf, e.Index)
	buf = binary.AppendUvarint(buf, uint64(e.Time))
	buf = binary.AppendUvarint(buf, e.Token)
	buf = appendString(buf, e.Owner)
	buf = binary.AppendUvarint(buf, uint64(e.Waited))
	buf = binary.AppendUvarint(buf, uint64(e.Deadline))
	buf = binary.AppendUvarint(buf, uint64(e.Renewed))
	if e.Kind == HistoryDeadlock { // a version 3 kind: version 2 bytes are unchanged
		buf = appendString(buf, e.Detail)
	}
	return buf
}

// decodeHistory reads what encodeHistory wrote. Activity order must be by the newest
// event's index, and each kind one that the state's version knows; the canonical-form
// check that decodeSnapshot ends with catches the rest.
func (s *state) decodeHistory(d *decoder) error {
	n := d.uvarint()
	if n > uint64(len(d.b)) || n > HistoryLocks {
		return badSnapshot("history of %d locks", n)
	}
	var newest uint64 // the newest index of the previous lock: activity order
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.string()
		space := SpaceLock
		if s.version >= primHistorySince {
			space = Space(d.byte())
		}
		var owner string
		if s.version >= 5 {
			owner = d.string()
		}
		m := d.uvarint()
		if d.err != nil {
			break
		}
		if name == "" || m == 0 || m > HistoryLen || s.hist.byName[histKey{space, name}] != nil || !knownSpace(space) {
			return badSnapshot("history of %s %q: %d events, duplicate, or no such primitive", space, name, m)
		}
		lh := &lockHistory{name: name, space: space, events: make([]HistoryEvent, 0, m)}
		last := uint64(0)
		for j := uint64(0); j < m && d.err == nil; j++ {
			e := HistoryEvent{Kind: HistoryKind(d.byte())}
			q := d.byte()
			for k := range e.Lease {
				e.Lease[k] = d.byte()
			}
			e.FromQueue = q == 1
			e.Index, e.Time, e.Token = d.uvarint(), d.int64(), d.uvarint()
			e.Owner = d.string()
			e.Waited, e.Deadline, e.Renewed = d.int64(), d.int64(), d.int64()
			if e.Kind == HistoryDeadlock {
				e.Detail = d.string()
			}
			if d.err == nil && e.Kind < historyKindEnd && historyKinds[e.Kind].since > s.version {
				return badSnapshot("history of lock %q: a version %d event at version %d", name, historyKinds[e.Kind].since, s.version)
			}
			if d.err == nil && (e.Kind >= historyKindEnd || historyKinds[e.Kind].kind == 0 || historyKinds[e.Kind].space != space || q > 1 || e.Index < last) {
				return badSnapshot("history of lock %q: bad event", name)
			}
			last = e.Index
			lh.events = append(lh.events, e)
		}
		if d.err == nil && last < newest {
			return badSnapshot("history of lock %q: out of activity order", name)
		}
		newest = last
		if s.hist.byName == nil {
			s.hist.byName = make(map[histKey]*lockHistory)
		}
		s.hist.byName[lh.key()] = lh
		s.hist.pushNewest(lh)
		if s.version >= 5 {
			s.hist.own(lh, owner)
		}
	}
	return nil
}
