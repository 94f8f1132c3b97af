package fsm

import "github.com/raftlock/raftlock/leases"

// waiter is a lease queued for a lock, a semaphore or an election, with its wait deadline
// in cluster time, and its links in the queue.
type waiter struct {
	lease    LeaseID
	owner    string
	deadline int64
	since    int64  // cluster time it joined the queue plus one; 0: unknown (version 1)
	shared   bool   // a shared lock request (locks only)
	value    string // the candidate's value (elections only)
	// set is the lockset this wait is one lock of (nil: a single lock's wait); maxHold
	// and lockDelay are a single lock wait's options for its grant (version 3).
	set                *lockSet
	maxHold, lockDelay int64
	prev, next         *waiter
}

// waitQueue is the FIFO queue of waiters of a lock, a semaphore or an election: an
// intrusive doubly-linked list. A waiter
// leaves from anywhere in the queue (its wait ended, it was dequeued, its lease is gone)
// in O(1), found through its lease's waiting map, so expiring n waiters of one lock costs
// O(n) on every node instead of O(n^2). The zero value is an empty queue.
type waitQueue struct {
	head, tail *waiter
	len        int
}

// push appends w at the back of the queue.
func (q *waitQueue) push(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.len++
}

// remove takes w, which must be in q, out of the queue.
func (q *waitQueue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil // a removed waiter keeps nothing of the queue alive
	q.len--
}

// enqueue queues lease l in q for the lock, semaphore or election name, with the wait
// deadline of request c, and records the wait in m (the lease's waits of that kind) and
// exp. A lease already waiting keeps its place: a re-issued wait extends the old one.
// added reports a new waiter.
func (s *state) enqueue(q *waitQueue, m *map[string]*waiter, exp *leases.Table, name string, l *lease, c *Command) (w *waiter, added bool) {
	deadline := satAdd(s.stamp, c.Wait)
	if w = (*m)[name]; w == nil {
		w = &waiter{lease: l.id, owner: c.Owner, deadline: deadline}
		if s.version >= 2 {
			w.since = s.time + 1
		}
		q.push(w)
		s.queued(l, m, name, w)
		added = true
	} else {
		w.deadline = deadline
	}
	exp.Set(waitKey(name, l.id), deadline)
	return w, added
}

// unqueue takes lease l's wait for name out of m (the lease's waits of one kind), out of
// the wait deadlines exp, and out of the queue q.
func (s *state) unqueue(m map[string]*waiter, exp *leases.Table, q *waitQueue, name string, l *lease) {
	w := m[name]
	s.unqueued(l, m, name)
	exp.Delete(waitKey(name, l.id))
	q.remove(w)
}

// giveUp takes lease id out of the queue of the semaphore or election name when it waits
// there (its client gave up): sp is that primitive's space, and leave takes it out.
func (s *state) giveUp(index uint64, name string, id LeaseID, sp Space, leave func(*state, uint64, string, *lease)) {
	l := s.live(id)
	if l == nil || l.prims == nil {
		return
	}
	if _, queued := l.prims[sp].waits[name]; queued {
		leave(s, index, name, l)
	}
}
