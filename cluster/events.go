package cluster

import (
	"sync"

	"github.com/raftlock/raftlock/fsm"
)

// registry routes the state machine's events to the requests waiting for them: waiting
// acquires (keyed by lock and lease) and blocking queries (keyed by lock). It is fed on
// raft's FSM goroutine, so delivering never blocks.
type registry struct {
	mu      sync.Mutex
	waiters map[waitKey][]chan fsm.Event
	watches map[string][]*watcher
	free    []*watcher // watches of free locks: also woken whenever any lock is freed
}

type waitKey struct {
	name  string
	lease fsm.LeaseID
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
	return &registry{waiters: map[waitKey][]chan fsm.Event{}, watches: map[string][]*watcher{}}
}

// waitFor registers interest in the outcome of lease's wait for lock name. The returned
// channel receives the first EventGranted or EventWaitEnded; cancel unregisters.
func (r *registry) waitFor(name string, lease fsm.LeaseID) (<-chan fsm.Event, func()) {
	ch := make(chan fsm.Event, 1)
	k := waitKey{name, lease}
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

// waiting returns how many requests are waiting for lease's wait on lock name.
func (r *registry) waiting(name string, lease fsm.LeaseID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiters[waitKey{name, lease}])
}

// watch returns a channel closed at the next change of lock name; when the lock is free
// (free is true) also at the next freeing of any lock, which moves a free lock's modify
// index. The returned func unregisters a watch that is no longer wanted.
func (r *registry) watch(name string, free bool) (<-chan struct{}, func()) {
	w := &watcher{ch: make(chan struct{})}
	r.mu.Lock()
	r.watches[name] = append(r.watches[name], w)
	if free {
		r.free = append(r.free, w)
	}
	r.mu.Unlock()
	return w.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if free {
			r.free = without(r.free, w)
		}
		if list := without(r.watches[name], w); len(list) > 0 {
			r.watches[name] = list
		} else {
			delete(r.watches, name)
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
		k := waitKey{e.Name, e.Lease}
		for _, ch := range r.waiters[k] {
			select {
			case ch <- e:
			default:
			}
		}
	case fsm.EventLockChanged:
		for _, w := range r.watches[e.Name] {
			w.fire()
		}
		delete(r.watches, e.Name)
		if e.Freed {
			for _, w := range r.free {
				w.fire()
			}
			r.free = nil
		}
	}
}

// restored re-derives every pending outcome from the new state after a snapshot restore,
// and wakes every blocking query.
func (r *registry) restored(f *fsm.FSM) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, list := range r.waiters {
		v := f.Lock(k.name)
		var e fsm.Event
		switch {
		case v.Held && v.Holder == k.lease:
			e = fsm.Event{Kind: fsm.EventGranted, Name: k.name, Lease: k.lease, Token: v.Token, Owner: v.Owner, Index: v.ModifyIndex}
		case !queued(v, k.lease):
			e = fsm.Event{Kind: fsm.EventWaitEnded, Name: k.name, Lease: k.lease, Index: v.ModifyIndex}
		default:
			continue
		}
		for _, ch := range list {
			select {
			case ch <- e:
			default:
			}
		}
	}
	for name, list := range r.watches {
		for _, w := range list {
			w.fire()
		}
		delete(r.watches, name)
	}
	for _, w := range r.free {
		w.fire()
	}
	r.free = nil
}

func queued(v fsm.LockView, id fsm.LeaseID) bool {
	for _, w := range v.Waiters {
		if w == id {
			return true
		}
	}
	return false
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
	n := len(r.free)
	for _, l := range r.watches {
		n += len(l)
	}
	return n
}
