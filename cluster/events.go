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
	watches map[string][]chan struct{}
	free    []chan struct{} // watches of free locks: woken whenever any lock is freed
}

type waitKey struct {
	name  string
	lease fsm.LeaseID
}

func newRegistry() *registry {
	return &registry{waiters: map[waitKey][]chan fsm.Event{}, watches: map[string][]chan struct{}{}}
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

// watch returns a channel closed at the next change of lock name (or, when the lock is
// free, at the next freeing of any lock, which moves a free lock's modify index).
// The returned func unregisters a watch that is no longer wanted.
func (r *registry) watch(name string, free bool) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	r.mu.Lock()
	if free {
		r.free = append(r.free, ch)
	} else {
		r.watches[name] = append(r.watches[name], ch)
	}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if free {
			r.free = without(r.free, ch)
			return
		}
		if list := without(r.watches[name], ch); len(list) > 0 {
			r.watches[name] = list
		} else {
			delete(r.watches, name)
		}
	}
}

func without(list []chan struct{}, ch chan struct{}) []chan struct{} {
	for i, c := range list {
		if c == ch {
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
		for _, ch := range r.watches[e.Name] {
			close(ch)
		}
		delete(r.watches, e.Name)
		if e.Freed {
			for _, ch := range r.free {
				close(ch)
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
		for _, ch := range list {
			close(ch)
		}
		delete(r.watches, name)
	}
	for _, ch := range r.free {
		close(ch)
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
