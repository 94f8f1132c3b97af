package fsm

// waitQueue is a lock's FIFO queue of waiters: an intrusive doubly-linked list. A waiter
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
