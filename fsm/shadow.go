package fsm

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/internal/mutant"
)

// ErrSnapshotSuperseded means a snapshot was persisted after a newer one of the same
// state machine: the shadow it is encoded from has already moved past it. Raft takes and
// persists snapshots one at a time, so only a misuse of the FSM meets it; take a new one.
var ErrSnapshotSuperseded = errors.New("fsm: snapshot superseded by a newer one: take a new snapshot")

// Why a shadow. raft calls Snapshot on the FSM goroutine, between two entries, so whatever
// Snapshot does stalls every apply, and with it every grant and handover. Encoding the
// whole state there took about 2 s at 1,000,000 locks. Instead the FSM keeps a second copy
// of the state, the shadow, that lags behind: Snapshot only notes how many applied entries
// the shadow has yet to see (a slice header, O(1)), and Persist, on raft's snapshot
// goroutine, applies those entries to the shadow and encodes it. The shadow then is the
// state at the snapshot's index, frozen for as long as Persist needs it, because nothing
// else touches it. Both copies advance through step, the one function that applies an
// entry, so they cannot drift apart; Persist checks that the shadow reached the
// snapshot's index before it writes a byte.
//
// The price is memory (the shadow is a second full state once a snapshot was taken, and
// the entries applied since the last one are kept) and applying each entry twice; see
// docs/PERFORMANCE.md "O(1) snapshots".

// retainedEntry is an applied entry kept for the shadow.
type retainedEntry struct {
	index uint64
	typ   raft.LogType
	data  []byte // a private copy: raft's entries may share buffers with the log store
	strs  entryStrings
}

// retention is what the shadow has not yet seen, guarded by FSM.mu. A generation starts at
// New (from the empty state) and at every Restore (from the restored bytes).
type retention struct {
	gen     uint64
	base    []byte          // the encoding the generation starts from; nil: the empty state
	entries []retainedEntry // the generation's applied entries after the first trimmed
	trimmed int             // how many of them Persist has applied to the shadow and dropped
	arena   []byte          // the chunk that the next entries' bytes are copied into
}

// shadow is the lagging copy of the state; mu orders the Persists that advance it.
type shadow struct {
	mu       sync.Mutex
	gen      uint64
	s        *state // nil until a Persist of generation gen builds it
	replayed int    // how many of generation gen's entries s has applied
}

// retain keeps an entry just applied to f.s for the shadow; called with mu held.
func (f *FSM) retain(index uint64, typ raft.LogType, data []byte, strs entryStrings) {
	e := retainedEntry{index: index, typ: typ, strs: strs}
	if len(data) > 0 {
		// Copied into 64 KiB chunks rather than one allocation per entry: the copy is
		// then an append, and the garbage collector sees a few chunks, not an object per
		// entry. Appends write only past the bytes earlier entries point at, so a Persist
		// reading those never races with them.
		a := f.ret.arena
		if cap(a)-len(a) < len(data) {
			a = make([]byte, 0, max(retainChunk, len(data)))
		}
		start := len(a)
		a = append(a, data...)
		e.data = a[start:len(a):len(a)]
		f.ret.arena = a
	}
	f.ret.entries = append(f.ret.entries, e)
}

// retainChunk is the size of the chunks that hold retained entries' bytes.
const retainChunk = 64 << 10

// retainRoom bounds the room a trim leaves for the next entries: twice the default
// snapshot threshold, so that a steady period appends without growing the array.
const retainRoom = 2 * 8192

// SnapshotLag returns how many applied entries the next snapshot's Persist will apply to
// the shadow before it encodes: what the O(1) Snapshot defers. Raft's snapshot threshold
// bounds it.
func (f *FSM) SnapshotLag() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.ret.entries)
}

// persistState advances the shadow to snapshot p and streams its encoding to w. It runs on
// raft's snapshot goroutine, concurrently with Apply, which it never blocks for longer than
// it takes to drop the entries it applied. The shadow stays frozen (sh.mu) until the last
// byte is written.
func (f *FSM) persistState(p *snapshot, w io.Writer) error {
	sh := &f.shadow
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.s == nil || sh.gen != p.gen {
		s, err := f.shadowBase(p)
		if err != nil {
			return err
		}
		sh.s, sh.gen, sh.replayed = s, p.gen, 0
	}
	end := p.start + len(p.entries)
	if sh.replayed > end || sh.replayed < p.start {
		return fmt.Errorf("%w (shadow at entry %d, snapshot ends at %d)", ErrSnapshotSuperseded, sh.replayed, end)
	}
	for i, e := range p.entries[sh.replayed-p.start:] {
		if i == 0 && end-sh.replayed > 1 && mutant.Is("snapshot-shadow-skips-entry") {
			continue
		}
		if _, _, err := f.step(sh.s, e.index, e.typ, e.data, &e.strs); err != nil {
			f.rebase() // unreachable: the live state applied the same entry
			return fmt.Errorf("fsm: snapshot shadow at entry %d: %w", e.index, err)
		}
	}
	sh.replayed = end
	if got := sh.s.applied; got != p.index {
		f.rebase()
		return fmt.Errorf("fsm: snapshot shadow reached index %d, want %d: not written", got, p.index)
	}
	f.trim(p.gen, end) // the shadow has applied them, whatever the write's fate
	return sh.s.writeTo(w)
}

// shadowBase returns the state generation p.gen starts from, without an observer.
func (f *FSM) shadowBase(p *snapshot) (*state, error) {
	if p.base == nil {
		s := f.emptyState(nil)
		s.hist.maxLocks = p.histLocks
		return s, nil
	}
	s, err := decodeSharing(p.base, nil, f.liveStrings) // accepted once already, by Restore
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot shadow: %w", err)
	}
	s.maxVersion = f.maxVersion
	s.budgetMax = f.sweepBudget
	s.hist.maxLocks = p.histLocks
	return s, nil
}

// rebase starts a new generation from the live state, encoded under the lock: the slow
// way back from a shadow that went wrong, which no test has seen happen, paid once so that
// no wrong snapshot is ever written. The next Persist builds the shadow anew from these
// bytes.
func (f *FSM) rebase() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ret = retention{gen: f.ret.gen + 1, base: f.s.encode()}
}

// trim drops the entries of generation gen up to end, which the shadow has applied.
func (f *FSM) trim(gen uint64, end int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ret.gen != gen || end <= f.ret.trimmed {
		return
	}
	n := end - f.ret.trimmed
	clear(f.ret.entries[:n])
	rest := f.ret.entries[n:]
	// A slice of the array would keep it whole (80 B an entry: 80 MB after 1,000,000
	// entries) until appends fill it; once most of it is trimmed, the few entries kept
	// move to an array of their own, with room for a period like this one (at most
	// retainRoom entries, so that a bulk fill's period does not come back), and the old
	// one is freed. Snapshots taken earlier keep their own slices of the old array.
	if n > 3*len(rest) {
		rest = append(make([]retainedEntry, 0, len(rest)+min(n, retainRoom)), rest...)
	}
	f.ret.entries = rest
	f.ret.trimmed = end
}
