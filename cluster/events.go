package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// Defaults of the event stream.
const (
	// DefaultEventSubscribers is Config.EventSubscribers's default.
	DefaultEventSubscribers = 256
	// DefaultEventBacklog is Config.EventBacklog's default: the last 10,000 events.
	DefaultEventBacklog = 10_000
)

// StreamEvent is one history event of a lock, a semaphore or an election (Space), as
// the stream carries it.
type StreamEvent struct {
	Name  string
	Space Space
	fsm.HistoryEvent
}

// Space is the namespace of a name: a lock, a semaphore or an election.
type Space = fsm.Space

// The namespaces.
const (
	SpaceLock      = fsm.SpaceLock
	SpaceSemaphore = fsm.SpaceSemaphore
	SpaceElection  = fsm.SpaceElection
)

// StreamEntry is what one applied entry did to the locks: every event has Index.
type StreamEntry struct {
	Index  uint64
	Events []StreamEvent
}

// stream keeps the recent entries that changed a lock, in a bounded ring, and hands each
// newly applied one to the subscribers. It is fed on raft's FSM goroutine and never blocks
// it: a subscriber that falls more than the backlog behind is dropped instead.
type stream struct {
	mu       sync.Mutex
	backlog  int // bound on the events kept
	maxSubs  int
	ring     []StreamEntry // oldest first; ring[0] may be trimmed
	events   int           // events in ring
	floor    uint64        // every event with an index above floor is in the ring
	last     uint64        // highest index applied
	building []StreamEvent // events of the entries being applied, published at EventApplied
	subs     map[*Subscription]struct{}
}

func newStream(backlog, maxSubs int) *stream {
	if backlog <= 0 {
		backlog = DefaultEventBacklog
	}
	if maxSubs <= 0 {
		maxSubs = DefaultEventSubscribers
	}
	return &stream{backlog: backlog, maxSubs: maxSubs, subs: map[*Subscription]struct{}{}}
}

// Subscription is one subscriber's view of the stream: the entries from its start index
// on, filtered to its prefix.
type Subscription struct {
	s       *stream
	prefix  string
	spaces  uint8  // the namespaces it streams, one bit each (1 << Space)
	start   uint64 // the first index it streams
	queue   []StreamEntry
	queued  int // events in queue
	wake    chan struct{}
	err     error
	stopped bool
}

// add queues e's events under the prefix; called with s.mu held.
func (sub *Subscription) add(e StreamEntry) {
	var evs []StreamEvent
	for _, ev := range e.Events {
		if sub.spaces&(1<<ev.Space) != 0 && strings.HasPrefix(ev.Name, sub.prefix) {
			evs = append(evs, ev)
		}
	}
	if len(evs) == 0 {
		return
	}
	sub.queue = append(sub.queue, StreamEntry{Index: e.Index, Events: evs})
	sub.queued += len(evs)
	if sub.queued > sub.s.backlog {
		sub.stop(ErrSubscriberLagging)
		return
	}
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// stop ends the subscription with err; called with s.mu held.
func (sub *Subscription) stop(err error) {
	if sub.stopped {
		return
	}
	sub.stopped, sub.err = true, err
	delete(sub.s.subs, sub)
	close(sub.wake)
}

// Next returns the next entry, waiting for one. It fails with ctx's error, or with the
// reason the node ended the subscription (ErrSubscriberLagging, ErrStreamReset,
// ErrShutdown) once the entries queued before it have been read.
func (sub *Subscription) Next(ctx context.Context) (StreamEntry, error) {
	for {
		sub.s.mu.Lock()
		if len(sub.queue) > 0 {
			e := sub.queue[0]
			sub.queue[0] = StreamEntry{}
			sub.queue = sub.queue[1:]
			sub.queued -= len(e.Events)
			sub.s.mu.Unlock()
			return e, nil
		}
		if sub.stopped {
			err := sub.err
			sub.s.mu.Unlock()
			return StreamEntry{}, err
		}
		wake := sub.wake
		sub.s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return StreamEntry{}, ctx.Err()
		}
	}
}

// Start returns the first entry index the subscription streams: entries before it are
// not in it, whatever the from it was asked for (0: the next entry applied).
func (sub *Subscription) Start() uint64 { return sub.start }

// Close ends the subscription and frees its place.
func (sub *Subscription) Close() {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	sub.stop(ErrShutdown)
	sub.queue = nil
}

// subscribe starts a subscription at entry index from (0: only entries applied from now
// on), for the names in spaces (none given: locks only) that start with prefix.
func (s *stream) subscribe(prefix string, from uint64, spaces ...Space) (*Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.subs) >= s.maxSubs {
		return nil, fmt.Errorf("%w (%d)", ErrTooManySubscribers, s.maxSubs)
	}
	if from == 0 {
		from = s.last + 1
	}
	if from <= s.floor {
		return nil, &IndexCompactedError{Oldest: s.floor + 1}
	}
	sub := &Subscription{s: s, prefix: prefix, start: from, wake: make(chan struct{}, 1), spaces: 1 << SpaceLock}
	if len(spaces) > 0 {
		sub.spaces = 0
		for _, sp := range spaces {
			sub.spaces |= 1 << sp
		}
	}
	s.subs[sub] = struct{}{}
	for _, e := range s.ring {
		if e.Index >= from && !sub.stopped {
			sub.add(e)
		}
	}
	if sub.stopped {
		return nil, fmt.Errorf("%w (%d)", ErrTooManySubscribers, s.maxSubs) // unreachable: the ring fits a backlog
	}
	return sub, nil
}

// observe takes the state machine's events (on raft's FSM goroutine).
func (s *stream) observe(e fsm.Event) {
	switch e.Kind {
	case fsm.EventHistory:
		s.mu.Lock()
		s.building = append(s.building, StreamEvent{Name: e.Name, Space: e.Space, HistoryEvent: e.History})
		s.mu.Unlock()
	case fsm.EventApplied:
		s.mu.Lock()
		s.publish(e.Index)
		s.mu.Unlock()
	case fsm.EventRestored:
		s.mu.Lock()
		s.building, s.ring, s.events = nil, nil, 0
		s.floor, s.last = e.Index, e.Index
		for sub := range s.subs {
			sub.stop(ErrStreamReset)
		}
		s.mu.Unlock()
	}
}

// publish groups the events built since the last call by entry, keeps them in the ring and
// hands them to the subscribers; called with s.mu held.
func (s *stream) publish(applied uint64) {
	evs := s.building
	s.building = nil
	for len(evs) > 0 {
		n := 1
		for n < len(evs) && evs[n].Index == evs[0].Index {
			n++
		}
		e := StreamEntry{Index: evs[0].Index, Events: evs[:n:n]}
		evs = evs[n:]
		s.ring = append(s.ring, e)
		s.events += len(e.Events)
		for s.events > s.backlog && len(s.ring) > 1 {
			old := s.ring[0]
			s.ring[0] = StreamEntry{}
			s.ring = s.ring[1:]
			s.events -= len(old.Events)
			s.floor = max(s.floor, old.Index)
		}
		for sub := range s.subs {
			sub.add(e)
		}
	}
	s.last = max(s.last, applied)
}

// shutdown ends every subscription.
func (s *stream) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		sub.stop(ErrShutdown)
	}
}

// count returns the number of subscribers.
func (s *stream) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// Events is the node's event stream of lock events, the locks' recorded history, and the
// dashboard's reads. Reach it with Node.Events.
type Events struct{ n *Node }

// Subscribe starts an event stream of the names in spaces (none given: locks only) that
// start with prefix, at entry index from: every event of an entry at or after from, then
// each new one as it is applied. from 0 means entries applied from now on. It fails with
// an *IndexCompactedError when this node no longer retains the events after from-1, and
// with ErrTooManySubscribers past Config.EventSubscribers. The stream is this node's: a
// follower streams what it has applied. The backlog (Config.EventBacklog) holds the
// events of every namespace, whatever a subscriber asks for.
func (e *Events) Subscribe(prefix string, from uint64, spaces ...Space) (*Subscription, error) {
	select {
	case <-e.n.stopping:
		return nil, ErrShutdown
	default:
	}
	return e.n.stream.subscribe(prefix, from, spaces...)
}

// Subscribers returns the number of event stream subscribers.
func (e *Events) Subscribers() int { return e.n.stream.count() }

// History returns the recorded events of lock name, oldest first, and the cluster time
// of the state read. Unless stale, it is a linearizable read, like Locks.Status.
func (e *Events) History(ctx context.Context, name string, stale bool) ([]HistoryEvent, time.Duration, error) {
	return e.HistoryOf(ctx, SpaceLock, name, stale)
}

// HistoryOf is History for name in space: a lock's, or from protocol version 7 a
// semaphore's or an election's (none is kept before).
func (e *Events) HistoryOf(ctx context.Context, space Space, name string, stale bool) ([]HistoryEvent, time.Duration, error) {
	if err := e.n.readBarrier(ctx, stale); err != nil {
		return nil, 0, err
	}
	return e.n.fsm.HistoryOf(space, name), dur(e.n.fsm.Time()), nil
}

// Overview reads, from this node's applied state (no leader needed, like a stale read), a
// page of the held locks under prefix with their holders' lease TTLs, deadlines and grant
// times and the first queue waiters of each, and how many live leases expire within soon
// of cluster time. It is what the dashboard shows.
func (e *Events) Overview(prefix, after string, limit int, soon time.Duration, queue int) Overview {
	return e.n.fsm.Overview(prefix, after, limit, ms(soon), queue)
}

// Semaphores reads, from this node's applied state, a page of the semaphores in use under
// prefix after after, with the first queue waiters of each, and whether more follow.
func (e *Events) Semaphores(prefix, after string, limit, queue int) ([]SemaphoreView, bool) {
	return e.n.fsm.Semaphores(prefix, after, limit, queue)
}

// Elections reads, from this node's applied state, a page of the elections in use under
// prefix after after, with the first queue candidates of each, and whether more follow.
func (e *Events) Elections(prefix, after string, limit, queue int) ([]ElectionView, bool) {
	return e.n.fsm.Elections(prefix, after, limit, queue)
}

// WaitsFor reads, from this node's applied state, the wait-for edges of a page of the
// locks with waiters under prefix after after, at most perLock edges a lock, by the
// deadlock detector's rules, and whether more locks follow.
func (e *Events) WaitsFor(prefix, after string, limit, perLock int) ([]LockWaits, bool) {
	return e.n.fsm.WaitsFor(prefix, after, limit, perLock)
}

// Refusals reads, from this node's applied state, the newest waiting requests the
// deadlock detector refused on locks under prefix, newest first, at most limit, from the
// most recently active lock histories.
func (e *Events) Refusals(prefix string, limit int) []Refusal {
	return e.n.fsm.Refusals(prefix, limit, refusalScan)
}

// refusalScan bounds how many of the most recently active histories a Refusals read looks
// at: a refusal makes its lock's history the most recently active, so a recent one is
// found among the first, and the read holds the state's lock for at most this many
// histories of 32 events.
const refusalScan = 2048

// Watches returns the number of registered blocking-query watches (of one name, and of a
// prefix: WaitChange), for tests and diagnostics.
func (e *Events) Watches() int { return e.n.registry.watchCount() + e.n.changes.count() }
