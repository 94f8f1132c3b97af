package leases

import (
	"container/heap"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Table is a set of keys, each with a deadline in cluster-time milliseconds, ordered by
// (deadline, key). The zero value is an empty table ready to use. It is not safe for
// concurrent use; the state machine serializes access.
//
// Keys are strings so that any identifier (a lease ID, a waiter's "lock\x00lease") can be
// ordered without a comparison function, and the order is the same on every node.
type Table struct {
	items []*item
	index map[string]*item
}

type item struct {
	key      string
	deadline int64
	pos      int
}

// Len returns the number of keys in the table.
func (t *Table) Len() int { return len(t.items) }

// Set adds key with deadline, or moves it to deadline when it is already present.
func (t *Table) Set(key string, deadline int64) {
	if t.index == nil {
		t.index = make(map[string]*item)
	}
	if it, ok := t.index[key]; ok {
		it.deadline = deadline
		heap.Fix((*itemHeap)(&t.items), it.pos)
		return
	}
	it := &item{key: key, deadline: deadline}
	t.index[key] = it
	heap.Push((*itemHeap)(&t.items), it)
}

// Deadline returns key's deadline and whether key is present.
func (t *Table) Deadline(key string) (int64, bool) {
	it, ok := t.index[key]
	if !ok {
		return 0, false
	}
	return it.deadline, true
}

// Delete removes key; removing an absent key does nothing.
func (t *Table) Delete(key string) {
	it, ok := t.index[key]
	if !ok {
		return
	}
	heap.Remove((*itemHeap)(&t.items), it.pos)
	delete(t.index, key)
}

// Next returns the key with the earliest deadline (ties broken by the smaller key).
func (t *Table) Next() (key string, deadline int64, ok bool) {
	if len(t.items) == 0 {
		return "", 0, false
	}
	return t.items[0].key, t.items[0].deadline, true
}

// PopExpired removes and returns, in (deadline, key) order, every key whose deadline is at
// or before now. A deadline equal to now has expired: a lease stamped at t with TTL d is
// live during [t, t+d) of cluster time.
func (t *Table) PopExpired(now int64) []string {
	var out []string
	if mutant.Is("expire-one-tick-early") {
		now++
	}
	for len(t.items) > 0 && t.items[0].deadline <= now {
		it := heap.Pop((*itemHeap)(&t.items)).(*item)
		delete(t.index, it.key)
		out = append(out, it.key)
	}
	return out
}

// PopNextExpired removes and returns the key with the earliest deadline when that
// deadline is at or before now (the first key PopExpired would return), and false when
// none has expired. A caller that pops one key at a time can stop after any of them: the
// state machine's sweep does at most a bounded amount of work per log entry.
func (t *Table) PopNextExpired(now int64) (string, bool) {
	if mutant.Is("expire-one-tick-early") {
		now++
	}
	if len(t.items) == 0 || t.items[0].deadline > now {
		return "", false
	}
	it := heap.Pop((*itemHeap)(&t.items)).(*item)
	delete(t.index, it.key)
	return it.key, true
}

// Ascend calls fn for every key in (deadline, key) order until fn returns false. It sorts a
// copy, so it costs O(n log n); it is meant for snapshots and tests, not the hot path.
func (t *Table) Ascend(fn func(key string, deadline int64) bool) {
	c := make(itemHeap, len(t.items))
	for i, it := range t.items {
		c[i] = &item{key: it.key, deadline: it.deadline, pos: i}
	}
	for len(c) > 0 {
		it := heap.Pop(&c).(*item)
		if !fn(it.key, it.deadline) {
			return
		}
	}
}

// CountUntil returns how many keys have a deadline at or before t. It walks only the part
// of the heap at or before t (a parent's deadline is never later than its children's), so
// it costs O(answer), not O(n): a dashboard can ask how many leases expire soon without
// holding up the state machine on a large table.
func (t *Table) CountUntil(deadline int64) int {
	n := 0
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(t.items) || t.items[i].deadline > deadline {
			continue
		}
		n++
		stack = append(stack, 2*i+1, 2*i+2)
	}
	return n
}

// itemHeap implements heap.Interface over the table's items.
type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }

func (h itemHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].key < h[j].key
}

func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].pos = i
	h[j].pos = j
}

func (h *itemHeap) Push(x any) {
	it := x.(*item)
	it.pos = len(*h)
	*h = append(*h, it)
}

func (h *itemHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}
