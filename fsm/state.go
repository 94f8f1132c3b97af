package fsm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/raftlock/raftlock/leases"
)

// state is the whole replicated state. It has no locking of its own: FSM serializes it.
// Each primitive's part lives in its own file (lockState, semState, electionState), made
// by its row's start hook (primitives.go).
type state struct {
	time     int64
	applied  uint64 // index of the last entry applied (command or configuration)
	leases   map[LeaseID]*lease
	nodes    map[string]NodeInfo
	leaseExp leases.Table // keyed by string(lease ID bytes)
	// cmd is scratch for one entry: the command being applied (step).
	cmd        Command
	notify     func(Event)
	protocol           // what protocol versions added (version.go)
	hist       history // per-lock histories (history.go): replicated from version 2 on
	lockState          // locks.go
	primStates         // every other primitive's (primitives.go)
	// use is each identity's use (quotas.go), total the cluster's: derived state,
	// counted as grants and waits come and go, never written to a snapshot.
	use        map[string]*identityUse
	total      identityUse
	sweepState // sweep.go
}

// newState returns an empty state whose events go to notify. Its active version is 0:
// a state that applies entries starts from emptyState or from a snapshot.
func newState(notify func(Event)) *state {
	if notify == nil {
		notify = func(Event) {}
	}
	s := &state{
		leases:   make(map[LeaseID]*lease),
		nodes:    make(map[string]NodeInfo),
		notify:   notify,
		protocol: protocol{acl: newACL()},
		use:      make(map[string]*identityUse),
	}
	s.budgetMax = SweepBudget
	for _, p := range primitives {
		p.start(s)
	}
	return s
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
	out := namesOf(m)
	sort.Strings(out)
	return out
}

// namesOf returns the keys of m in no order, nil when there are none.
func namesOf[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
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
