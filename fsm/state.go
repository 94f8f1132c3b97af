package fsm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/btree"

	"github.com/raftlock/raftlock/leases"
)

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
	waitExp    leases.Table // lock waits, keyed by waitKey(name, lease)
	// admit is scratch for one entry: locks held shared whose queue lost a waiter, whose
	// head may now be shared waiters to admit (settle).
	admit []string
	// cmd is scratch for one entry: the command being applied (step).
	cmd       Command
	notify    func(Event)
	protocol          // what protocol versions added (version.go)
	hist      history // per-lock histories (history.go): replicated from version 2 on
	primState         // semaphores and elections
	v3State           // maximum holds and lock delays (maxhold.go), from version 3 on
}

// primState is the replicated state of semaphores and elections. It is empty at version
// 1 (the commands are refused there), so a version 1 snapshot needs no place for it.
type primState struct {
	sems        map[string]*semaphore
	elections   map[string]*election
	semWaitExp  leases.Table // keyed by waitKey(name, lease)
	elecWaitExp leases.Table // keyed by waitKey(name, lease)
	// semFreed and elecFreed are the indexes of the last entries that deleted a semaphore
	// or an election: what a status read reports as the modify index of one not in use.
	semFreed, elecFreed uint64
}

// newPrimState returns the empty state of semaphores and elections.
func newPrimState() primState {
	return primState{sems: make(map[string]*semaphore), elections: make(map[string]*election)}
}

// nameIndexDegree is the B-tree degree of the lock name index: nodes of up to 63 names
// keep the tree shallow (4 levels at 1,000,000 locks) and a page's names mostly in one
// node.
const nameIndexDegree = 32

// newState returns an empty state whose events go to notify. Its active version is 0:
// a state that applies entries starts from emptyState or from a snapshot.
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

// splitWaitKey returns the lock name and lease of a waitKey.
func splitWaitKey(k string) (string, LeaseID) {
	i := strings.LastIndexByte(k[:len(k)-16], 0)
	var id LeaseID
	copy(id[:], k[i+1:])
	return k[:i], id
}

// addName adds name to the set m, allocating it on first use.
func addName(m *map[string]struct{}, name string) {
	if *m == nil {
		*m = make(map[string]struct{}, 1)
	}
	(*m)[name] = struct{}{}
}

// addWaiter records in m, a lease's waits of one kind, that it waits for name as w.
func addWaiter(m *map[string]*waiter, name string, w *waiter) {
	if *m == nil {
		*m = make(map[string]*waiter, 1)
	}
	(*m)[name] = w
}

// sortedNames returns the keys of m in order, or nil when m is empty: the order in which
// every node visits a map.
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

// validName is the state machine's own rule for names of every primitive; the API's is
// stricter.
func validName(name string) bool {
	return name != "" && len(name) <= maxStringLen && strings.IndexByte(name, 0) < 0
}

// invalid refuses r as a command no encoder writes (StatusInvalid), for the reason what.
func invalid(r *Result, what string) {
	r.Status, r.Err = StatusInvalid, fmt.Errorf("%w: %s", ErrCorruptCommand, what)
}
