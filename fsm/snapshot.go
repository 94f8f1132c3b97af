package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/hashicorp/raft"
	"github.com/raftlock/raftlock/internal/mutant"
)

// snapshotMagic starts every snapshot in format 1; its last byte is the format version
// (snapshotMagicV2 starts format 2).
var snapshotMagic = []byte("RLKS\x01")

// Snapshot implements raft.FSM. raft calls it on the FSM goroutine, between entries, so it
// does no work proportional to the state: it captures which applied entries the shadow has
// yet to apply (shadow.go), and Persist, while Apply goes on, applies them to the shadow and
// encodes it. Equal states encode to equal bytes: every collection is written in sorted
// order.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.haltErr != nil {
		return nil, fmt.Errorf("fsm: no snapshot of a halted state machine: %w", f.haltErr)
	}
	n := len(f.ret.entries)
	return &snapshot{f: f, gen: f.ret.gen, base: f.ret.base, start: f.ret.trimmed,
		entries: f.ret.entries[:n:n], index: f.s.applied, histLocks: f.s.hist.maxLocks}, nil
}

// SnapshotBytes returns the snapshot encoding of the current state, for tests and tools
// that compare states byte for byte.
func (f *FSM) SnapshotBytes() []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.s.encode()
}

// Restore implements raft.FSM: it replaces all state with the snapshot's. A snapshot that
// does not decode, or whose parts contradict each other, is refused and the old state kept.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("fsm: reading snapshot: %w", err)
	}
	s, err := f.restorable(data)
	if err != nil {
		return err
	}
	if mutant.Is("restore-drops-waiters") {
		s.mutantDropWaiters()
	}
	if mutant.Is("restore-drops-time") {
		s.time = 0
	}
	f.mu.Lock()
	f.s = s
	f.pending = nil
	f.applied.Store(s.applied)
	f.ret = retention{gen: f.ret.gen + 1, base: data}
	f.mu.Unlock()
	f.flush(Event{Kind: EventRestored, Index: s.applied})
	return nil
}

// restorable decodes a snapshot as a node speaking f.maxVersion restores it: a newer
// format, or a state whose active version is newer, is refused with an error telling to
// upgrade.
func (f *FSM) restorable(data []byte) (*state, error) {
	if err := f.Halted(); err != nil {
		return nil, fmt.Errorf("fsm: restore refused: %w", err)
	}
	format, err := snapshotFormat(data)
	if err != nil {
		return nil, err
	}
	if format > f.maxVersion {
		return nil, fmt.Errorf("%w: snapshot format %d is newer than this node supports (%d): upgrade this node", ErrUnsupportedVersion, format, f.maxVersion)
	}
	s, err := decodeSnapshot(data, f.record)
	if err != nil {
		return nil, err
	}
	if s.version > f.maxVersion {
		return nil, fmt.Errorf("%w: snapshot at protocol version %d is newer than this node supports (%d): upgrade this node", ErrUnsupportedVersion, s.version, f.maxVersion)
	}
	s.maxVersion = f.maxVersion
	s.budgetMax = f.sweepBudget
	s.hist.observed = f.observe != nil
	return s, nil
}

// snapshot is a state frozen by Snapshot: the shadow's generation and the entries that take
// it to index.
type snapshot struct {
	f         *FSM
	gen       uint64
	base      []byte
	start     int // the generation's entries before entries[0]
	entries   []retainedEntry
	index     uint64
	histLocks int
}

// Persist implements raft.FSMSnapshot: it brings the shadow to the snapshot's index and
// streams its encoding to the sink in spillSize writes (encoder.go), never holding the
// whole image.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.f.persistState(s, sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *snapshot) Release() {}

func (s *state) encode() []byte {
	var e snapEncoder
	s.encodeInto(&e)
	return e.buf
}

// encodeInto writes the encoding to e, spilling between records when e streams.
func (s *state) encodeInto(e *snapEncoder) {
	buf := append(e.buf, s.magic()...)
	buf = binary.AppendUvarint(buf, s.applied)
	buf = binary.AppendUvarint(buf, uint64(s.time))
	buf = binary.AppendUvarint(buf, s.freedIndex)
	buf = s.appendProtocol(buf)

	nodes := sortedNames(s.nodes)
	buf = binary.AppendUvarint(buf, uint64(len(nodes)))
	for _, id := range nodes {
		n := s.nodes[id]
		buf = appendString(buf, n.ID)
		buf = appendString(buf, n.RaftAddr)
		buf = appendString(buf, n.HTTPAddr)
	}
	e.buf = buf
	e.spill()

	ids := make([]LeaseID, 0, len(s.leases))
	for id := range s.leases {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	e.buf = binary.AppendUvarint(e.buf, uint64(len(ids)))
	for _, id := range ids {
		l := s.leases[id]
		buf := append(e.buf, id[:]...)
		buf = binary.AppendUvarint(buf, uint64(l.ttl))
		buf = binary.AppendUvarint(buf, uint64(l.deadline))
		if s.version >= 3 {
			buf = appendString(buf, l.creator)
		}
		e.buf = s.appendLeaseFlags(buf, l)
		e.spill()
	}
	if s.version >= 6 {
		e.buf = s.appendRevoking(e.buf)
	}

	// Locks in name order, from the name index (the same keys, kept sorted) rather than a
	// sorted copy of 1,000,000 names.
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s.locks)))
	s.names.Ascend(func(n string) bool {
		lk := s.locks[n]
		buf := appendString(e.buf, n)
		buf = append(buf, lk.holder[:]...)
		buf = binary.AppendUvarint(buf, lk.token)
		buf = appendString(buf, lk.owner)
		buf = binary.AppendUvarint(buf, lk.modify)
		buf = binary.AppendUvarint(buf, uint64(lk.ro().queue.len))
		for w := lk.ro().queue.head; w != nil; w = w.next {
			buf = appendWaiter(buf, w, s.version >= 2)
		}
		e.buf = buf
		e.spill()
		return true
	})
	s.encodeSections(e) // every primitive's parts (primitives.go)
}

// appendWaiter appends a lock's or a semaphore's waiter: lease, owner, deadline, and since
// when the format has it.
func appendWaiter(buf []byte, w *waiter, since bool) []byte {
	buf = append(buf, w.lease[:]...)
	buf = appendString(buf, w.owner)
	buf = binary.AppendUvarint(buf, uint64(w.deadline))
	if since {
		buf = binary.AppendUvarint(buf, uint64(w.since))
	}
	return buf
}

// waiter reads what appendWaiter wrote.
func (d *decoder) waiter(since bool) *waiter {
	w := &waiter{lease: d.leaseID(), owner: d.string(), deadline: d.int64()}
	if since {
		w.since = d.int64()
	}
	return w
}

func badSnapshot(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, args...)...)
}

// decodeSnapshot decodes a snapshot encoding, of either format, into a state whose events
// go to notify. It accepts only the canonical encoding of a state whose parts agree; which
// versions this node may restore is restorable's question.
func decodeSnapshot(data []byte, notify func(Event)) (*state, error) {
	return decodeSharing(data, notify, nil)
}

// decodeSharing is decodeSnapshot that passes each lock's name and owner through share,
// when given, to keep strings another state already holds (sharing.go).
func decodeSharing(data []byte, notify func(Event), share func(name, owner string) (string, string)) (*state, error) {
	format, err := snapshotFormat(data)
	if err != nil {
		return nil, err
	}
	d := decoder{b: data[len(snapshotMagic):]}
	s := newState(notify)
	s.applied = d.uvarint()
	s.time = d.int64()
	s.freedIndex = d.uvarint()
	if err := s.decodeProtocol(&d, format); err != nil {
		return nil, err
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		ni := NodeInfo{ID: d.string(), RaftAddr: d.string(), HTTPAddr: d.string()}
		s.nodes[ni.ID] = ni
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		l := &lease{id: d.leaseID(), ttl: d.int64(), deadline: d.int64()}
		if s.version >= 3 {
			l.creator = d.string()
		}
		s.decodeLeaseFlags(&d, l)
		s.leases[l.id] = l
		s.leaseExp.Set(string(l.id[:]), l.deadline)
	}
	if s.version >= 6 {
		if err := s.decodeRevoking(&d); err != nil {
			return nil, err
		}
	}
	for i, n := 0, d.count(1); i < n && d.err == nil; i++ {
		name := d.string()
		lk := &lock{holder: d.leaseID(), token: d.uvarint(), owner: d.string(), modify: d.uvarint()}
		if share != nil && d.err == nil {
			name, lk.owner = share(name, lk.owner)
		}
		holder := s.leases[lk.holder]
		// From version 3 a lock may be held by nobody (locksets.go): the zero lease.
		if s.version >= 3 && lk.holder == (LeaseID{}) && lk.token == 0 && lk.owner == "" {
			lk.rw().v3.vacant = true
		}
		if d.err == nil && (holder == nil && !lk.ro().v3.vacant || name == "" || s.locks[name] != nil) {
			return nil, badSnapshot("lock %q: holder lease missing or duplicate lock", name)
		}
		if d.err != nil {
			break
		}
		if holder != nil {
			addName(&holder.held, name)
		}
		for j, m := 0, d.count(1); j < m && d.err == nil; j++ {
			w := d.waiter(format >= 2)
			wl := s.leases[w.lease]
			if d.err != nil {
				break
			}
			if wl == nil || wl == holder {
				return nil, badSnapshot("lock %q: waiter lease missing or is the holder", name)
			}
			if _, dup := wl.waiting[name]; dup {
				return nil, badSnapshot("lock %q: lease queued twice", name)
			}
			addWaiter(&wl.waiting, name, w)
			lk.rw().queue.push(w)
			s.waitExp.Set(waitKey(name, w.lease), w.deadline)
		}
		s.locks[name] = lk
		s.names.ReplaceOrInsert(name) // the indexes are derived state: rebuilt, never encoded
		if lk.ro().queue.len > 0 {
			s.waited.ReplaceOrInsert(name)
		}
	}
	if err := s.decodeSections(&d); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, badSnapshot("%v", d.err)
	}
	if len(d.b) != 0 {
		return nil, badSnapshot("%d trailing bytes", len(d.b))
	}
	s.recount() // the sets were filled without counting
	if err := s.checkRevoking(); err != nil {
		return nil, err
	}
	// Only the canonical encoding of a state is accepted (sorted, no duplicates, minimal
	// varints), which is what makes "same state, same bytes" hold after a restore too.
	if !bytes.Equal(s.encode(), data) {
		return nil, badSnapshot("not in canonical form")
	}
	return s, nil
}
