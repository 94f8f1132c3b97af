package cluster

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/raftlock/raftlock/fsm"
)

// registry routes the state machine's events to the requests waiting for them: waiting
// acquires (keyed by name and lease) and blocking queries (keyed by name). Locks,
// semaphores and elections are separate namespaces (fsm.Space). It is fed on raft's FSM
// goroutine, so delivering never blocks.
type registry struct {
	mu      sync.Mutex
	waiters map[waitKey][]chan fsm.Event
	watches map[spaceName][]*watcher
	// free holds, per namespace, the watches of names not in use: also woken whenever any
	// name of that namespace is freed, which moves the modify index they report.
	free map[fsm.Space][]*watcher
	// tokens holds the watches of ACL tokens, by accessor: woken when the token is
	// deleted (and at a restore, when anything may have changed).
	tokens map[string][]*watcher
	// registered counts the waits ever registered (waitFor), for Metrics.
	registered atomic.Uint64
}

type waitKey struct {
	space fsm.Space
	name  string
	lease fsm.LeaseID
}

type spaceName struct {
	space fsm.Space
	name  string
}

// watcher is one blocking query's wake-up channel. A watch on a free lock sits in two lists,
// so closing goes through fire, which closes once.
type watcher struct {
	ch    chan struct{}
	fired bool
}

func (w *watcher) fire() {
	if !w.fired {
		w.fired = true
		close(w.ch)
	}
}

func newRegistry() *registry {
	return &registry{waiters: map[waitKey][]chan fsm.Event{}, watches: map[spaceName][]*watcher{}, free: map[fsm.Space][]*watcher{}, tokens: map[string][]*watcher{}}
}

// waitBuffer is how many outcome events one registered wait keeps: the newest ones, in
// index order. Several arrive when the log applied after the registration holds earlier
// grants and wait endings of the same lease and name (a node replaying its log after a
// restart): the wait skips those by index, so the one it awaits must not be dropped for
// them.
const waitBuffer = 8

// waitFor registers interest in the outcome of lease's wait for name in namespace space.
// The returned channel receives the EventGranted and EventWaitEnded events applied from
// now on, in index order; when the reader falls behind, the oldest are dropped. Events of
// entries before the wait's own proposal are stale (see queuedWait.awaitOutcome). cancel
// unregisters.
func (r *registry) waitFor(space fsm.Space, name string, lease fsm.LeaseID) (<-chan fsm.Event, func()) {
	r.registered.Add(1)
	ch := make(chan fsm.Event, waitBuffer)
	k := waitKey{space, name, lease}
	r.mu.Lock()
	r.waiters[k] = append(r.waiters[k], ch)
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		list := r.waiters[k]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(r.waiters, k)
		} else {
			r.waiters[k] = list
		}
	}
}

// waiting returns how many requests are waiting for lease's wait on name in space.
func (r *registry) waiting(space fsm.Space, name string, lease fsm.LeaseID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiters[waitKey{space, name, lease}])
}

// watch returns a channel closed at the next change of name in namespace space; when the
// name is free (free is true) also at the next freeing of any name of the namespace, which
// moves a free name's modify index. The returned func unregisters a watch that is no
// longer wanted.
func (r *registry) watch(space fsm.Space, name string, free bool) (<-chan struct{}, func()) {
	w := &watcher{ch: make(chan struct{})}
	k := spaceName{space, name}
	r.mu.Lock()
	r.watches[k] = append(r.watches[k], w)
	if free {
		r.free[space] = append(r.free[space], w)
	}
	r.mu.Unlock()
	return w.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if free {
			r.free[space] = without(r.free[space], w)
		}
		if list := without(r.watches[k], w); len(list) > 0 {
			r.watches[k] = list
		} else {
			delete(r.watches, k)
		}
	}
}

func without(list []*watcher, w *watcher) []*watcher {
	for i, c := range list {
		if c == w {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

func (r *registry) deliver(e fsm.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case fsm.EventGranted, fsm.EventWaitEnded:
		k := waitKey{e.Space, e.Name, e.Lease}
		for _, ch := range r.waiters[k] {
			select {
			case ch <- e:
			default: // full: drop the oldest (deliver is the only sender, under r.mu)
				select {
				case <-ch:
				default:
				}
				ch <- e
			}
		}
	case fsm.EventLockChanged:
		k := spaceName{e.Space, e.Name}
		for _, w := range r.watches[k] {
			w.fire()
		}
		delete(r.watches, k)
		if e.Freed {
			for _, w := range r.free[e.Space] {
				w.fire()
			}
			delete(r.free, e.Space)
		}
	case fsm.EventTokenDeleted:
		for _, w := range r.tokens[e.Name] {
			w.fire()
		}
		delete(r.tokens, e.Name)
	}
}

// restored re-derives every pending outcome from the new state after a snapshot restore,
// and wakes every blocking query.
func (r *registry) restored(f *fsm.FSM) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, list := range r.waiters {
		e, decided := restoredOutcome(f, k)
		if !decided {
			continue
		}
		for _, ch := range list {
			select {
			case ch <- e:
			default:
			}
		}
	}
	for k, list := range r.watches {
		for _, w := range list {
			w.fire()
		}
		delete(r.watches, k)
	}
	for space, list := range r.free {
		for _, w := range list {
			w.fire()
		}
		delete(r.free, space)
	}
	for acc, list := range r.tokens {
		for _, w := range list {
			w.fire()
		}
		delete(r.tokens, acc)
	}
}

// watchToken returns a channel closed when the token with accessor is deleted, or at a
// restore (the owner then looks whether it still exists), and the func that unregisters
// it.
func (r *registry) watchToken(accessor string) (<-chan struct{}, func()) {
	w := &watcher{ch: make(chan struct{})}
	r.mu.Lock()
	r.tokens[accessor] = append(r.tokens[accessor], w)
	r.mu.Unlock()
	return w.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if list := without(r.tokens[accessor], w); len(list) > 0 {
			r.tokens[accessor] = list
		} else {
			delete(r.tokens, accessor)
		}
	}
}

// restoredOutcome re-derives, from the state after a restore, the event that answers the wait k:
// a grant when the lease now holds the grant, a wait end when it no longer waits, and
// nothing (decided false) while it still waits.
func restoredOutcome(f *fsm.FSM, k waitKey) (e fsm.Event, decided bool) {
	var held, waiting bool
	e = fsm.Event{Kind: fsm.EventGranted, Space: k.space, Name: k.name, Lease: k.lease}
	switch k.space {
	case fsm.SpaceLock:
		v := f.Lock(k.name)
		held = holding(v.Holders, k.lease, &e)
		waiting, e.Index = slices.Contains(v.Waiters, k.lease), v.ModifyIndex
	case fsm.SpaceSemaphore:
		v := f.Semaphore(k.name)
		held = holding(v.Permits, k.lease, &e)
		waiting, e.Index = slices.Contains(v.Waiters, k.lease), v.ModifyIndex
	case fsm.SpaceElection:
		v := f.Election(k.name)
		if v.Elected && v.Leader == k.lease {
			held, e.Token, e.Owner, e.Value = true, v.Token, v.Owner, v.Value
		}
		waiting, e.Index = slices.Contains(v.Candidates, k.lease), v.ModifyIndex
	}
	switch {
	case held:
		return e, true
	case !waiting:
		e.Kind, e.Token, e.Owner, e.Value = fsm.EventWaitEnded, 0, "", ""
		return e, true
	}
	return e, false
}

// holding reports whether lease holds one of the grants hs (a lock's holders, a
// semaphore's permits), and then gives e that grant's token and owner.
func holding(hs []fsm.Holding, lease LeaseID, e *fsm.Event) bool {
	held := false
	for _, h := range hs {
		if h.Lease == lease {
			held, e.Token, e.Owner = true, h.Token, h.Owner
		}
	}
	return held
}

// appliedWaiter lets readers wait until the state machine has applied a given index.
type appliedWaiter struct {
	mu      sync.Mutex
	applied uint64
	waiting []appliedWait
}

type appliedWait struct {
	index uint64
	ch    chan struct{}
}

func newAppliedWaiter() *appliedWaiter { return &appliedWaiter{} }

func (a *appliedWaiter) advance(index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.applied {
		return
	}
	a.applied = index
	kept := a.waiting[:0]
	for _, w := range a.waiting {
		if w.index <= index {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	a.waiting = kept
}

// wait returns a channel closed once index has been applied.
func (a *appliedWaiter) wait(index uint64) <-chan struct{} {
	ch := make(chan struct{})
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.applied {
		close(ch)
		return ch
	}
	a.waiting = append(a.waiting, appliedWait{index, ch})
	return ch
}

func (r *registry) watchCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.free {
		n += len(l)
	}
	for _, l := range r.watches {
		n += len(l)
	}
	return n
}
