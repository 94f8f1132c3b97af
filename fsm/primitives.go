package fsm

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/raftlock/raftlock/leases"
)

// A coordination primitive (the lock, the semaphore, the election) is a row of primitives
// below, as a command is a row of commands (apply.go). The code that every primitive goes
// through (advance in time.go, the end of a lease in lease.go, the lease quota in
// limits.go, the snapshot in snapshot.go, the history's kinds) loops over the rows and
// names none of them; each row's hooks, state and snapshot parts live in the primitive's
// own file, with its command types and their rows of the command registry. Adding a
// primitive is that file, its state embedded in state (state.go), and one row here.

// primitive is a primitive's row: what the shared code calls it for. Every hook is required
// but expire (a primitive with no deadlines of its own beside its waits); sections and
// history may be empty.
type primitive struct {
	// name names it, as Space.String does; space is the namespace of its events.
	name  string
	space Space
	// start makes its empty state in a new state (newState).
	start func(s *state)
	// expireWaits ends the waits whose deadline has passed at the current time, in
	// (deadline, name, lease) order (advance, before leases expire).
	expireWaits func(s *state, index uint64)
	// expire ends what its own deadlines end once the expired leases are gone: grants
	// past their maximum hold, lock delays that are over (advance).
	expire func(s *state, index uint64)
	// waits and grants are the names of the primitive that lease l waits for and holds,
	// in name order: what ending the lease ends, one name at a time.
	waits, grants func(l *lease) []string
	// leaveOne takes lease l, which ends, out of the queue of name, if it is still there;
	// dropOne ends its grant of name, if it still holds one, handing it to the next
	// waiter. Before version 6 every ending lease leaves every queue before any grant is
	// dropped (removeLeases), so that nothing is handed to a lease that ends in the same
	// entry; from version 6 a handover skips the waiters of ended leases (sweep.go).
	leaveOne, dropOne func(s *state, index uint64, name string, l *lease)
	// count is how many grants and waits of the primitive lease l has: the
	// MaxLocksPerLease quota bounds their sum over every primitive.
	count func(s *state, l *lease) int
	// deadlines are its tables of pending deadlines (NextDeadline).
	deadlines func(s *state) []*leases.Table
	// sections are its parts of the snapshot after the lock records.
	sections []section
	// history are the kinds of the history events it records.
	history []historyKind
	// commands are its rows of the command registry (apply.go).
	commands []command
}

// section is one part of the snapshot that a primitive writes after the lock records: from
// protocol version since on, in place order among the parts of that version. Parts are
// written and read ordered by (since, order), so a part of a new version comes after every
// older one and older states keep their bytes.
type section struct {
	since uint64
	order int
	// enc appends the part; dec reads it into a state whose leases, locks and older parts
	// are restored, and refuses what contradicts them (ErrBadSnapshot).
	enc func(s *state, e *snapEncoder)
	dec func(s *state, d *decoder) error
}

// historyKind is a history event kind: its name in the HTTP API and the protocol version
// from which a snapshot may hold it.
type historyKind struct {
	kind  HistoryKind
	name  string
	since uint64
	// as is the lock kind this kind is the counterpart of, in a primitive other than the
	// lock (0: itself, or none); space is the primitive's (set by historyTable).
	as    HistoryKind
	space Space
}

// primitives is the table of primitives, in the order the shared code visits them. It is
// set in init rather than by its declaration because the hooks read the tables derived
// from it (the snapshot's history decoder checks the kinds), and init also fills the
// command registry from it.
var primitives []primitive

// snapshotSections are every primitive's snapshot parts in (since, order) order,
// historyKinds the history kinds by kind, and kindIn each primitive's kinds by the lock
// kind they stand for (kindIn[space][as]): all derived from primitives.
var (
	snapshotSections []section
	historyKinds     [historyKindEnd]historyKind
	kindIn           map[Space]map[HistoryKind]HistoryKind
)

func init() {
	primitives = []primitive{
		{
			name:        "lock",
			space:       SpaceLock,
			start:       (*state).startLocks,
			expireWaits: expireEach(lockWaitTable, (*state).lockWaitTimedOut),
			expire:      (*state).expireLockDeadlines,
			waits:       func(l *lease) []string { return sortedNames(l.waiting) },
			grants:      func(l *lease) []string { return sortedNames(l.held) },
			leaveOne:    (*state).leaveLockQueue,
			dropOne:     (*state).dropLockOf,
			count:       lockCount,
			deadlines:   lockDeadlines,
			history:     lockHistoryKinds,
			commands:    lockCommands,
			sections: []section{
				{since: 2, order: 0, enc: (*state).encodeHistory, dec: (*state).decodeHistory},
				{since: 2, order: 1, enc: (*state).encodeShared, dec: (*state).decodeShared},
				{since: 3, order: 0, enc: (*state).encodeHolds, dec: (*state).decodeHolds},
				{since: 3, order: 1, enc: (*state).encodeLockSets, dec: (*state).decodeLockSets},
				{since: 7, order: 0, enc: (*state).encodeHeldSets, dec: (*state).decodeHeldSets},
			},
		},
		{
			name:        "semaphore",
			space:       SpaceSemaphore,
			start:       (*state).startSems,
			expireWaits: expireEach(semWaitTable, (*state).semWaitTimedOut),
			expire:      (*state).expireSemHolds,
			waits:       func(l *lease) []string { return primNames(l, semWaits) },
			grants:      func(l *lease) []string { return primNames(l, permits) },
			leaveOne:    (*state).leaveSemQueueOf,
			dropOne:     (*state).dropPermitOf,
			count:       semCount,
			deadlines:   semDeadlines,
			history:     semHistoryKinds,
			commands:    semCommands,
			sections: []section{
				// Format 2 writes both freed indexes before either table.
				numberPart(2, 2, semFreed),
				{since: 2, order: 4, enc: (*state).encodeSems, dec: (*state).decodeSems},
				{since: 3, order: 2, enc: (*state).encodeSemHolds, dec: (*state).decodeSemHolds},
			},
		},
		{
			name:        "election",
			space:       SpaceElection,
			start:       (*state).startElections,
			expireWaits: expireEach(campaignTable, (*state).campaignTimedOut),
			waits:       func(l *lease) []string { return primNames(l, campaigns) },
			grants:      func(l *lease) []string { return primNames(l, leads) },
			leaveOne:    (*state).leaveCampaignOf,
			dropOne:     (*state).dropLeadOf,
			count:       electionCount,
			deadlines:   electionDeadlines,
			history:     electionHistoryKinds,
			commands:    electionCommands,
			sections: []section{
				numberPart(2, 3, elecFreed),
				{since: 2, order: 5, enc: (*state).encodeElections, dec: (*state).decodeElections},
			},
		},
	}
	if err := checkHooks(primitives); err != nil {
		panic(err)
	}
	var err error
	if commands, err = registry(coreCommands, primitives); err != nil {
		panic(err)
	}
	if snapshotSections, err = sectionOrder(primitives); err != nil {
		panic(err)
	}
	if historyKinds, err = historyTable(primitives); err != nil {
		panic(err)
	}
	kindIn = make(map[Space]map[HistoryKind]HistoryKind)
	for _, k := range historyKinds {
		if k.as != 0 {
			if kindIn[k.space] == nil {
				kindIn[k.space] = make(map[HistoryKind]HistoryKind)
			}
			kindIn[k.space][k.as] = k.kind
		}
	}
}

// checkHooks refuses a primitive that lacks a required hook: the shared code calls every
// one of them without looking.
func checkHooks(prims []primitive) error {
	for _, p := range prims {
		if p.start == nil || p.expireWaits == nil || p.waits == nil || p.grants == nil || p.leaveOne == nil || p.dropOne == nil || p.count == nil || p.deadlines == nil {
			return fmt.Errorf("fsm: primitive %s lacks a hook", p.name)
		}
	}
	return nil
}

// sectionOrder returns every primitive's snapshot parts in (since, order) order. Two parts
// at one place would make the order, and so the snapshot's bytes, depend on the sort: the
// error names the place and both primitives.
func sectionOrder(prims []primitive) ([]section, error) {
	var parts []section
	owner := make(map[[2]uint64]string)
	for _, p := range prims {
		for _, sec := range p.sections {
			place := [2]uint64{sec.since, uint64(sec.order)}
			if other, taken := owner[place]; taken {
				return nil, fmt.Errorf("fsm: snapshot part of %s at version %d, place %d: taken twice, by %s too", p.name, sec.since, sec.order, other)
			}
			owner[place] = p.name
			parts = append(parts, sec)
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i], parts[j]
		return a.since < b.since || a.since == b.since && a.order < b.order
	})
	return parts, nil
}

// historyTable returns the history kinds of every primitive by kind, refusing a kind out
// of range or taken twice: the error names the kind and its primitive.
func historyTable(prims []primitive) (kinds [historyKindEnd]historyKind, err error) {
	for _, p := range prims {
		for _, k := range p.history {
			switch {
			case k.kind == 0 || k.kind >= historyKindEnd:
				return kinds, fmt.Errorf("fsm: history kind %d (%s) of %s: out of range", k.kind, k.name, p.name)
			case kinds[k.kind].kind != 0:
				return kinds, fmt.Errorf("fsm: history kind %d (%s) of %s: taken twice, by %s too", k.kind, k.name, p.name, kinds[k.kind].name)
			}
			k.space = p.space
			kinds[k.kind] = k
		}
	}
	return kinds, nil
}

// expireEach is an expireWaits hook: the waits of the table that table finds (keyed by
// waitKey) whose deadline has passed end, each lease that still exists leaving its queue
// through leave.
func expireEach(table func(*state) *leases.Table, leave func(s *state, index uint64, name string, l *lease)) func(*state, uint64) {
	return func(s *state, index uint64) { s.expireWaits(index, table(s), leave) }
}

// numberPart is a snapshot part that is one number of the state, which field finds.
func numberPart(since uint64, order int, field func(*state) *uint64) section {
	return section{
		since: since, order: order,
		enc: func(s *state, e *snapEncoder) { e.buf = binary.AppendUvarint(e.buf, *field(s)) },
		dec: func(s *state, d *decoder) error {
			*field(s) = d.uvarint()
			return nil
		},
	}
}

// encodeSections appends every snapshot part that s's active version has.
func (s *state) encodeSections(e *snapEncoder) {
	for i := range snapshotSections {
		if p := &snapshotSections[i]; s.version >= p.since {
			p.enc(s, e)
		}
	}
}

// decodeSections reads what encodeSections wrote, part by part, stopping at the first
// error.
func (s *state) decodeSections(d *decoder) error {
	for i := range snapshotSections {
		p := &snapshotSections[i]
		if d.err != nil || s.version < p.since {
			continue
		}
		if err := p.dec(s, d); err != nil {
			return err
		}
	}
	return nil
}

// leaseCount returns how many grants and waits of every primitive lease l has, together:
// the MaxLocksPerLease quota bounds this sum.
func (s *state) leaseCount(l *lease) int {
	n := 0
	for i := range primitives {
		n += primitives[i].count(s, l)
	}
	return n
}
