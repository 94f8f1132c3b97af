package cluster

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// changes is what a blocking read of many names (the dashboard's overview) waits on: the
// recent changes of any lock, semaphore or election, by entry index and name, in a bounded
// ring, and the prefixes being waited on. It is node-local bookkeeping fed on raft's FSM
// goroutine (Node.observe), never blocking it, and changes nothing the state machine does.
//
// A wait for "a change under prefix after index i" is answered from the ring when the ring
// still covers i (every change after floor is in it), at once when it no longer does
// (something may have changed: the reader reads again, which is never wrong), and
// otherwise when the next matching change is applied.
type changes struct {
	mu      sync.Mutex
	ring    []change // circular: next is where the next change goes
	next    int
	full    bool
	floor   uint64 // every change with an index above floor is in the ring
	watches map[*prefixWatch]struct{}
}

// changeRing is how many changes the ring keeps: at one change per name and entry, the
// changes of the last few thousand entries, far more than a reader that asks again every
// few seconds misses.
const changeRing = 4096

type change struct {
	index uint64
	name  string
}

// prefixWatch is one blocking read's wait: fired (once) by the first change under prefix
// with an index above after.
type prefixWatch struct {
	prefix string
	after  uint64
	ch     chan struct{}
	fired  bool
}

func (w *prefixWatch) fire() {
	if !w.fired {
		w.fired = true
		close(w.ch)
	}
}

func newChanges() *changes {
	return &changes{ring: make([]change, changeRing), watches: map[*prefixWatch]struct{}{}}
}

// observe takes the state machine's events: a change of a name (or a refusal of the
// deadlock detector on it) goes into the ring and wakes the watches it matches; a restore
// may have changed anything, so it wakes them all and starts the ring anew.
func (c *changes) observe(e fsm.Event) {
	// A refused deadlock changes no lock, but what the overview shows of it (its recent
	// refusals): it counts as a change of the lock asked for.
	if e.Kind == fsm.EventHistory && e.History.Kind == fsm.HistoryDeadlock {
		e.Kind = fsm.EventLockChanged
	}
	switch e.Kind {
	case fsm.EventLockChanged:
		c.mu.Lock()
		defer c.mu.Unlock()
		last := c.ring[(c.next+changeRing-1)%changeRing]
		if (c.next > 0 || c.full) && last.index == e.Index && last.name == e.Name {
			return // the same name again in one entry: its watches have fired
		}
		if old := c.ring[c.next]; c.full {
			c.floor = max(c.floor, old.index)
		}
		c.ring[c.next] = change{e.Index, e.Name}
		c.next = (c.next + 1) % changeRing
		c.full = c.full || c.next == 0
		for w := range c.watches {
			if e.Index > w.after && strings.HasPrefix(e.Name, w.prefix) {
				w.fire()
				delete(c.watches, w)
			}
		}
	case fsm.EventRestored:
		c.mu.Lock()
		defer c.mu.Unlock()
		c.next, c.full, c.floor = 0, false, max(c.floor, e.Index)
		for w := range c.watches {
			w.fire()
			delete(c.watches, w)
		}
	}
}

// watch returns a channel closed once a name under prefix changes in an entry after
// index after (at once when one has, or when the ring no longer covers after), and the
// func that unregisters it.
func (c *changes) watch(prefix string, after uint64) (<-chan struct{}, func()) {
	w := &prefixWatch{prefix: prefix, after: after, ch: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if after < c.floor {
		w.fire()
		return w.ch, func() {}
	}
	n := c.next
	if c.full {
		n = changeRing
	}
	for i := 0; i < n; i++ {
		if ch := c.ring[i]; ch.index > after && strings.HasPrefix(ch.name, prefix) {
			w.fire()
			return w.ch, func() {}
		}
	}
	c.watches[w] = struct{}{}
	return w.ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watches, w)
	}
}

// count returns the number of registered watches.
func (c *changes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}

// LeaderUnknown, as WaitChange's leader, asks it not to compare leaders.
const LeaderUnknown = "\x00"

// WaitChange waits until a lock, semaphore or election whose name starts with prefix
// changes in an entry after index after (as this node applies it), the leader this node
// knows changes, or wait passes, whichever is first: the blocking form of a read of many
// names, such as the dashboard's overview. It returns at once when such a change was
// applied already (or may have been: the node keeps the last few thousand), or when the
// leader is not leader, the one the caller last saw ("" for none; LeaderUnknown not to
// compare). With ACLs on, it ends early with ErrTokenRevoked when the caller's token is
// deleted, as a blocking query of one name does.
func (e *Events) WaitChange(ctx context.Context, prefix string, after uint64, leader string, wait time.Duration) error {
	id, moved := e.n.LeaderWatch()
	if leader != LeaderUnknown && id != leader {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	acc := tokenCaller(ctx)
	gone, stopGone := e.n.tokenGone(acc)
	defer stopGone()
	ch, cancel := e.n.changes.watch(prefix, after)
	defer cancel()
	select {
	case <-ch:
	case <-moved:
	case <-t.C:
	case <-gone:
		return ErrTokenRevoked
	case <-ctx.Done():
		return ctx.Err()
	case <-e.n.stopping:
		return ErrShutdown
	}
	if _, ok := e.n.fsm.ACLToken(acc); acc != "" && !ok {
		return ErrTokenRevoked
	}
	return nil
}
