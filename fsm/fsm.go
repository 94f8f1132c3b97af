package fsm

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/leases"
)

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventLockChanged: lock Name changed at Index (granted, released, queue changed).
	EventLockChanged EventKind = iota + 1
	// EventGranted: a queued Lease was granted lock Name with Token.
	EventGranted
	// EventWaitEnded: Lease left the queue of lock Name without a grant (its wait ended,
	// it was dequeued, or the lease is gone).
	EventWaitEnded
	// EventApplied: every entry up to Index has been applied.
	EventApplied
	// EventRestored: the state was replaced by a snapshot; anything may have changed.
	EventRestored
	// EventHalted: the entry at Index is a command this node does not know and may not
	// skip, so the state machine stopped before it (Err says why); it is sent once.
	EventHalted
	// EventHistory: History happened to lock Name at Index (history.go). It is sent at
	// every protocol version; the replicated history keeps it from version 2 on.
	EventHistory
)

// Event tells an observer what an applied entry did, so that waiting requests are answered
// by the commit that decides them, without polling. Events carry no state of their own:
// the state machine behaves the same with or without an observer.
type Event struct {
	Kind EventKind
	// Space is the namespace of Name: a lock (the zero value), a semaphore or an
	// election. EventGranted, EventWaitEnded and EventLockChanged (then: the semaphore or
	// election changed) come in every space; the others concern locks.
	Space Space
	// Freed marks an EventLockChanged that freed the lock (its state was dropped), or
	// deleted the semaphore or election.
	Freed bool
	Name  string
	Lease LeaseID
	Token uint64
	Owner string
	Index uint64
	// Err is the reason of an EventHalted.
	Err error
	// History is the event of an EventHistory.
	History HistoryEvent
	// Value is the elected candidate's value (EventGranted of an election).
	Value string
}

// FSM is the lock state machine. It implements raft.FSM, raft.BatchingFSM and
// raft.ConfigurationStore. Apply runs on raft's FSM goroutine; the read methods may be
// called from any goroutine.
type FSM struct {
	mu      sync.RWMutex
	s       *state
	observe func(Event)
	pending []Event // events of the entries being applied, emitted after mu is released
	applied atomic.Uint64
	local             // node-local: the versions this node speaks, and whether it halted (halt.go)
	ret     retention // applied entries the snapshot shadow has yet to see (shadow.go)
	shadow  shadow
}

// New returns an empty state machine. observe, when non-nil, is called on raft's FSM
// goroutine after each entry (or batch) is applied, with the FSM's lock released, so it may
// read the FSM; it must not block.
func New(observe func(Event)) *FSM {
	return NewWithOptions(Options{Observe: observe})
}

// record queues an event while the write lock is held.
func (f *FSM) record(e Event) {
	if f.observe != nil {
		f.pending = append(f.pending, e)
	}
}

// flush hands the queued events to the observer; it is called with mu released, from the
// only goroutine that applies.
func (f *FSM) flush(last Event) {
	if f.observe == nil {
		return
	}
	f.mu.Lock()
	evs := f.pending
	f.pending = nil
	last = f.haltedLast(last)
	f.mu.Unlock()
	for _, e := range evs {
		f.observe(e)
	}
	f.observe(last)
}

// Apply implements raft.FSM. It returns a *Result.
func (f *FSM) Apply(l *raft.Log) interface{} {
	f.mu.Lock()
	r := f.applyLocked(l)
	f.mu.Unlock()
	f.flush(Event{Kind: EventApplied, Index: l.Index})
	return r
}

// ApplyBatch implements raft.BatchingFSM: one lock acquisition for a batch of entries.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	f.mu.Lock()
	for i, l := range logs {
		out[i] = f.applyLocked(l)
	}
	f.mu.Unlock()
	if n := len(logs); n > 0 {
		f.flush(Event{Kind: EventApplied, Index: logs[n-1].Index})
	}
	return out
}

// StoreConfiguration implements raft.ConfigurationStore. The state machine keeps no copy
// of the configuration; it only counts the entry as applied, so that a read waiting for
// the commit index is not stranded behind a configuration change.
func (f *FSM) StoreConfiguration(index uint64, _ raft.Configuration) {
	f.mu.Lock()
	if f.haltErr == nil {
		_, _, _ = f.step(f.s, index, raft.LogConfiguration, nil)
		f.retain(index, raft.LogConfiguration, nil)
	}
	f.applied.Store(f.s.applied)
	f.mu.Unlock()
	f.flush(Event{Kind: EventApplied, Index: index})
}

func (f *FSM) applyLocked(l *raft.Log) *Result {
	if f.haltErr != nil {
		return &Result{Status: StatusHalted, Index: l.Index, Err: f.haltErr}
	}
	r, typ, err := f.step(f.s, l.Index, l.Type, l.Data)
	if err != nil {
		return f.haltAt(l.Index, err)
	}
	if typ != 0 {
		f.counts.count(typ)
	}
	f.retain(l.Index, l.Type, l.Data)
	f.applied.Store(f.s.applied)
	return r
}

// ApplyCommand applies a command at index directly, without raft. Tests and tools use it
// to drive the state machine exactly as committed entries would.
func (f *FSM) ApplyCommand(index uint64, c *Command) *Result {
	return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: c.Encode(nil)}).(*Result)
}

// AppliedIndex returns the index of the last entry applied.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Time returns the state machine's cluster time in milliseconds.
func (f *FSM) Time() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.time
}

// LockView is a read-only copy of a lock's state.
type LockView struct {
	Name string
	Held bool
	// Shared reports a lock held in shared mode.
	Shared bool
	// Holder, Token and Owner are the exclusive holder's grant. For a lock held shared,
	// Holder and Owner are the oldest reader's and Token the newest (highest) token.
	Holder LeaseID
	Token  uint64
	Owner  string
	// Holders are every grant in grant order (one when exclusive).
	Holders     []Holding
	Waiters     []LeaseID
	ModifyIndex uint64
}

func (s *state) view(name string) LockView {
	lk := s.locks[name]
	if lk == nil {
		return LockView{Name: name, ModifyIndex: s.freedIndex}
	}
	v := LockView{Name: name, Held: true, Holder: lk.holder, Token: lk.token, Owner: lk.owner, ModifyIndex: lk.modify}
	if lk.isShared() {
		v.Shared, v.Holders, v.Token = true, lk.readers.holdings(), lk.readers.tail.token
	} else {
		v.Holders = []Holding{{Lease: lk.holder, Token: lk.token, Owner: lk.owner}}
	}
	for w := lk.queue.head; w != nil; w = w.next {
		v.Waiters = append(v.Waiters, w.lease)
	}
	return v
}

// Lock returns the state of lock name. A free lock reports the index of the last entry
// that freed any lock as its ModifyIndex: at least the index that freed this one, and
// never lower than an index reported before.
func (f *FSM) Lock(name string) LockView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.view(name)
}

// Locks returns one page of the held locks whose names start with prefix, in name order:
// those whose names sort strictly after the cursor after (all of them when after is ""),
// at most limit of them when limit > 0 (no limit otherwise). truncated reports that at
// least one more such lock follows the page; the next page is asked for with after set
// to the last name of this one. The work under the read lock is one descent of the name
// index plus the page itself, whatever the number of locks, so that a listing holds up
// Apply only for as long as its page takes. views is empty, not nil, when nothing matches.
func (f *FSM) Locks(prefix, after string, limit int) (views []LockView, truncated bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	views = make([]LockView, 0, min(max(limit, 0), maxPagePrealloc))
	// The names with a prefix are contiguous in name order: start at the later of prefix
	// and after, and stop at the first name without the prefix.
	f.s.names.AscendGreaterOrEqual(max(prefix, after), func(n string) bool {
		switch {
		case n == after:
			return true // the cursor itself was on the previous page
		case !strings.HasPrefix(n, prefix):
			return false
		case limit > 0 && len(views) == limit:
			truncated = true
			return false
		}
		views = append(views, f.s.view(n))
		return true
	})
	return views, truncated
}

// maxPagePrealloc caps the room reserved for a page up front, so that a huge limit does
// not allocate for locks that may not exist.
const maxPagePrealloc = 1024

// LeaseView is a read-only copy of a lease's state.
type LeaseView struct {
	ID       LeaseID
	TTL      int64
	Deadline int64
	Locks    []string
	Waiting  []string
}

// Lease returns the state of a lease and whether it exists.
func (f *FSM) Lease(id LeaseID) (LeaseView, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	l := f.s.leases[id]
	if l == nil {
		return LeaseView{}, false
	}
	return LeaseView{ID: id, TTL: l.ttl, Deadline: l.deadline, Locks: sortedNames(l.held), Waiting: sortedNames(l.waiting)}, true
}

// LeaseCount returns the number of live leases.
func (f *FSM) LeaseCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.leases)
}

// NextDeadline returns the earliest pending deadline (of a lease or of a waiter) in
// cluster time, and false when nothing is pending.
func (f *FSM) NextDeadline() (int64, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	next, ok := int64(0), false
	for _, t := range []*leases.Table{&f.s.leaseExp, &f.s.waitExp, &f.s.semWaitExp, &f.s.elecWaitExp} {
		if _, d, has := t.Next(); has && (!ok || d < next) {
			next, ok = d, true
		}
	}
	return next, ok
}

// Nodes returns the registered nodes sorted by ID.
func (f *FSM) Nodes() []NodeInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]NodeInfo, 0, len(f.s.nodes))
	for _, n := range f.s.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Node returns the registration of node id.
func (f *FSM) Node(id string) (NodeInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.s.nodes[id]
	return n, ok
}

var (
	_ raft.BatchingFSM        = (*FSM)(nil)
	_ raft.ConfigurationStore = (*FSM)(nil)
)

// LockCount returns the number of held locks (free locks take no state).
func (f *FSM) LockCount() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.s.locks)
}
