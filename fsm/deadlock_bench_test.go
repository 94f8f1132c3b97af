package fsm

import (
	"encoding/binary"
	"testing"
)

// benchQueue returns a version 3 state with lock "hot" held by one lease and n leases
// queued for it (exclusive), and a requester lease that holds lock "mine", so that its
// request for "hot" is searched in full: the worst case for one lock, every waiter
// visited.
func benchQueue(b *testing.B, n int) (*FSM, *lease) {
	f := atVersion3(b)
	index := uint64(1)
	id := func(i int) (l LeaseID) {
		binary.BigEndian.PutUint64(l[:], uint64(i)+1)
		return l
	}
	apply := func(c *Command, want Status) {
		index++
		if r := f.ApplyCommand(index, c); r.Status != want {
			b.Fatalf("%s: %s, want %s", c.Type, r.Status, want)
		}
	}
	apply(&Command{Type: TypeAcquire, Now: 1, Lease: id(0), NewLease: true, TTL: 3_600_000, Name: "hot"}, StatusOK)
	for i := 1; i <= n; i++ {
		apply(&Command{Type: TypeAcquire, Now: 1, Lease: id(i), NewLease: true, TTL: 3_600_000, Name: "hot", Wait: 3_000_000}, StatusQueued)
	}
	req := id(n + 1)
	apply(&Command{Type: TypeAcquire, Now: 1, Lease: req, NewLease: true, TTL: 3_600_000, Name: "mine"}, StatusOK)
	return f, f.s.leases[req]
}

// BenchmarkDeadlockCheck10kWaiters is the cost of the cycle check of one waiting acquire
// behind 10,000 waiters when the requester holds a lock (every waiter is visited).
func BenchmarkDeadlockCheck10kWaiters(b *testing.B) { benchFindCycle(b, false) }

// BenchmarkDeadlockCheck10kWaitersHoldsNothing is the same request from a lease that
// neither holds nor waits for anything: the check costs nothing.
func BenchmarkDeadlockCheck10kWaitersHoldsNothing(b *testing.B) { benchFindCycle(b, true) }

// benchFindCycle times the cycle check of a request for "hot" behind 10,000 waiters
// (benchQueue), from its requester or, with holdsNothing, from a lease it does not know.
func benchFindCycle(b *testing.B, holdsNothing bool) {
	f, req := benchQueue(b, 10_000)
	if holdsNothing {
		req = &lease{id: LeaseID{0xff}}
	}
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if c := f.s.findCycle(req, []string{"hot"}, false); c != nil {
			b.Fatal("cycle")
		}
	}
}

// BenchmarkAcquireWait10kWaiters is a whole waiting acquire (queued, then dequeued)
// behind 10,000 waiters from a lease that holds a lock: apply, check and queue.
func BenchmarkAcquireWait10kWaiters(b *testing.B) {
	f, req := benchQueue(b, 10_000)
	index := f.AppliedIndex()
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		index++
		if r := f.ApplyCommand(index, &Command{Type: TypeAcquire, Now: 1, Lease: req.id, Name: "hot", Wait: 3_000_000}); r.Status != StatusQueued {
			b.Fatal(r.Status)
		}
		index++
		f.ApplyCommand(index, &Command{Type: TypeDequeue, Now: 1, Lease: req.id, Name: "hot"})
	}
}

// benchSets applies, per iteration, a grant and a release of the locks names by one
// lease: as one lockset (set) or as one acquire and release per lock.
func benchSets(b *testing.B, n int, set bool) {
	f := atVersion3(b)
	index := uint64(1)
	id := LeaseID{1}
	index++
	f.ApplyCommand(index, &Command{Type: TypeCreateLease, Now: 1, Lease: id, TTL: 3_600_000})
	names := make([]string, n)
	for i := range names {
		names[i] = "jobs/" + string(rune('a'+i))
	}
	apply := func(c *Command) *Result {
		index++
		r := f.ApplyCommand(index, c)
		if r.Status != StatusOK {
			b.Fatal(r.Status)
		}
		return r
	}
	b.ResetTimer()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if set {
			r := apply(&Command{Type: TypeLockSet, Now: 1, Lease: id, Names: names})
			apply(&Command{Type: TypeLockSetRelease, Now: 1, Lease: id, Names: names, Tokens: r.Tokens})
			continue
		}
		for _, name := range names {
			r := apply(&Command{Type: TypeAcquire, Now: 1, Lease: id, Name: name})
			apply(&Command{Type: TypeRelease, Now: 1, Lease: id, Name: name, Token: r.Token})
		}
	}
}

// BenchmarkLockSet3 is a lockset of three locks granted and released (two entries).
func BenchmarkLockSet3(b *testing.B) { benchSets(b, 3, true) }

// BenchmarkSingles3 is the same three locks acquired and released one by one (six entries).
func BenchmarkSingles3(b *testing.B) { benchSets(b, 3, false) }

// BenchmarkLockSet1 is a lockset of one lock, beside BenchmarkSingles1.
func BenchmarkLockSet1(b *testing.B) { benchSets(b, 1, true) }

// BenchmarkSingles1 is one lock acquired and released.
func BenchmarkSingles1(b *testing.B) { benchSets(b, 1, false) }
