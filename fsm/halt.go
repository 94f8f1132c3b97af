package fsm

import "fmt"

// local is the FSM's node-local part: what this node can do and whether it has stopped.
// None of it is replicated or written to a snapshot.
type local struct {
	// maxVersion is the newest protocol version this node speaks (Options.MaxVersion).
	maxVersion uint64
	// haltErr is set, once, when the FSM meets a command it does not know and may not skip.
	haltErr error
	// counts counts applied entries (overview.go); node-local, never in a snapshot.
	counts appliedCounts
}

// Halted returns nil while the state machine applies entries, and after it has halted the
// reason, which wraps ErrHalted and ErrUnknownCommand and names the entry's index.
//
// A command type this node does not know, and that is not marked skippable, comes from a
// newer node whose change this node cannot apply. Skipping it would leave this node's state
// silently different from its peers' from then on, so instead the FSM stops: it keeps the
// state of the last entry it understood, answers every later entry with StatusHalted, and
// refuses to snapshot. The caller should log the error and stop the process; after an
// upgrade the node replays the log from its last snapshot and goes on.
func (f *FSM) Halted() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.haltErr
}

// haltAt halts the FSM before the entry at index, which failed to decode with err. It is
// called with mu held and records EventHalted, which only this call ever records.
func (f *FSM) haltAt(index uint64, err error) *Result {
	f.haltErr = fmt.Errorf("%w before entry %d: %w", ErrHalted, index, err)
	f.record(Event{Kind: EventHalted, Index: index, Err: f.haltErr})
	return &Result{Status: StatusHalted, Index: index, Err: f.haltErr}
}

// haltedLast adjusts the EventApplied that ends a batch once the FSM has halted: it reports
// the last entry actually applied, not the last one handed in. Called with mu held.
func (f *FSM) haltedLast(last Event) Event {
	if f.haltErr != nil && last.Kind == EventApplied {
		last.Index = f.s.applied
	}
	return last
}
