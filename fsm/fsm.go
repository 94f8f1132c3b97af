package fsm

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
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
	// EventTokenDeleted: the ACL token whose accessor is Name was deleted at Index, so
	// that the requests it made that are still open (blocking queries, streams, waits)
	// end at once instead of at their next check.
	EventTokenDeleted
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

// Space is the namespace an Event's Name belongs to.
type Space uint8

// SpaceLock is the lock table's namespace. It is the zero value, so that an observer
// which knows only locks reads their events without looking at Space. Every other
// primitive declares its own beside it, one past the last (SpaceSemaphore in
// semaphores.go, SpaceElection in elections.go): a space indexes the primitives' row
// table and each lease's use of them.
const SpaceLock Space = 0

// String names the namespace as its primitive's row does (primitives.go).
func (sp Space) String() string {
	for _, p := range primitives {
		if p.space == sp {
			return p.name
		}
	}
	return "space(?)"
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
	// sweepBudget is the units of sweep an entry does (Options; SweepBudget).
	sweepBudget int
}

// Options configure a state machine. The zero value is what New uses.
type Options struct {
	// Observe, when non-nil, is called on raft's FSM goroutine after each entry (or batch)
	// is applied, with the FSM's lock released, so it may read the FSM; it must not block.
	Observe func(Event)
	// MaxVersion is the newest protocol version the node speaks; 0 means Version, and
	// values above Version are treated as Version. A lower value makes the node behave
	// exactly like the code of that version, which is how mixed-version clusters are tested
	// and how a node is kept from registering a version before it is rolled out everywhere.
	MaxVersion uint64
	// sweepBudget, when not zero, replaces SweepBudget: the package's tests lower it so that
	// small states exercise the sliced sweep. Every node of a cluster must use the same.
	sweepBudget int
}

// New returns an empty state machine. observe, when non-nil, is called on raft's FSM
// goroutine after each entry (or batch) is applied, with the FSM's lock released, so it may
// read the FSM; it must not block.
func New(observe func(Event)) *FSM {
	return NewWithOptions(Options{Observe: observe})
}

// NewWithOptions returns an empty state machine configured by o. Its cluster starts at
// protocol version 1.
func NewWithOptions(o Options) *FSM {
	f := &FSM{observe: o.Observe}
	f.maxVersion = o.MaxVersion
	if f.maxVersion == 0 || f.maxVersion > Version {
		f.maxVersion = Version
	}
	f.sweepBudget = o.sweepBudget
	if f.sweepBudget <= 0 {
		f.sweepBudget = SweepBudget
	}
	f.s = f.emptyState(f.record)
	f.s.hist.observed = f.observe != nil
	return f
}

// emptyState returns the state a cluster starts with, as this node speaks it: protocol
// version 1, nothing applied. The live state and the snapshot shadow both start here.
func (f *FSM) emptyState(notify func(Event)) *state {
	s := newState(notify)
	s.version, s.maxVersion = 1, f.maxVersion
	s.budgetMax = f.sweepBudget
	return s
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

// Apply implements raft.FSM. It returns a *Result. The entry's path through the package
// is step (apply.go); doc.go follows one command along it.
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
		_, _, _ = f.step(f.s, index, raft.LogConfiguration, nil, nil)
		f.retain(index, raft.LogConfiguration, nil, entryStrings{})
	}
	f.applied.Store(f.s.applied)
	f.mu.Unlock()
	f.flush(Event{Kind: EventApplied, Index: index})
}

// applyLocked applies one entry to the live state, with mu held: step does the work, then
// the entry is counted and kept for the snapshot shadow (retain). A command this node does
// not know and may not skip halts the FSM instead (haltAt).
func (f *FSM) applyLocked(l *raft.Log) *Result {
	if f.haltErr != nil {
		return &Result{Status: StatusHalted, Index: l.Index, Err: f.haltErr}
	}
	strs := entryStrings{fill: true} // the decoded strings, for the shadow to share
	r, typ, err := f.step(f.s, l.Index, l.Type, l.Data, &strs)
	if err != nil {
		return f.haltAt(l.Index, err)
	}
	if typ != 0 {
		f.counts.count(typ)
	}
	f.retain(l.Index, l.Type, l.Data, strs)
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

var (
	_ raft.BatchingFSM        = (*FSM)(nil)
	_ raft.ConfigurationStore = (*FSM)(nil)
)
