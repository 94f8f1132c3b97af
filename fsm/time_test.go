package fsm

import (
	"bytes"
	"io"
	"math"
	"testing"
)

const hour = int64(60 * 60 * 1000)

// atVersion2 returns an FSM whose cluster runs protocol version 2.
func atVersion2(t *testing.T) *FSM {
	t.Helper()
	f := New(nil)
	f.s.version = 2
	return f
}

// checkDeadlines fails when any lease or wait deadline has wrapped or lies before the
// current cluster time while still pending.
func checkDeadlines(t *testing.T, f *FSM) {
	t.Helper()
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.s.time < 0 {
		t.Fatalf("cluster time %d wrapped", f.s.time)
	}
	for id, l := range f.s.leases {
		if l.deadline <= f.s.time || l.deadline < l.ttl {
			t.Fatalf("lease %s deadline %d (ttl %d) at time %d", id, l.deadline, l.ttl, f.s.time)
		}
	}
	// Every waiter's deadline is in waitExp, whatever the queue's representation.
	f.s.waitExp.Ascend(func(key string, deadline int64) bool {
		if deadline <= f.s.time {
			name, id := splitWaitKey(key)
			t.Fatalf("lock %q waiter %s deadline %d at time %d", name, id, deadline, f.s.time)
		}
		return true
	})
}

func mustRestoreBytes(t *testing.T, f *FSM) *FSM {
	t.Helper()
	snap := f.SnapshotBytes()
	g := NewWithOptions(Options{MaxVersion: f.maxVersion})
	if err := g.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !bytes.Equal(g.SnapshotBytes(), snap) {
		t.Fatal("restored state re-encodes differently")
	}
	return g
}

func TestTime_PoisonNowMovesTimeOneStep(t *testing.T) {
	f := atVersion2(t)
	a, b := LeaseID{1}, LeaseID{2}
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 1000, Lease: a, NewLease: true, TTL: 10_000, Name: "x"})
	f.ApplyCommand(2, &Command{Type: TypeAcquire, Now: 1000, Lease: b, NewLease: true, TTL: 25 * hour, Name: "x", Wait: math.MaxInt64})
	if r := f.ApplyCommand(3, &Command{Type: TypeRenew, Now: math.MaxInt64, Leases: []LeaseID{b}}); !r.Renewed[0] {
		t.Fatalf("renew = %+v", r)
	}
	if got := f.Time(); got != 1000+MaxTimeStep {
		t.Fatalf("time after Now=MaxInt64 is %d, want %d", got, 1000+MaxTimeStep)
	}
	// a expired (a day passed in cluster time); b was stamped by the poison entry itself and
	// holds x with a saturated deadline, never a wrapped one.
	if v := f.Lock("x"); v.Holder != b || v.Token != 3 {
		t.Fatalf("lock x = %+v", v)
	}
	if v, _ := f.Lease(b); v.Deadline != math.MaxInt64 {
		t.Fatalf("lease b deadline %d, want saturated", v.Deadline)
	}
	checkDeadlines(t, f)
	f.ApplyCommand(4, &Command{Type: TypeAcquire, Now: math.MaxInt64, Lease: LeaseID{3}, NewLease: true, TTL: math.MaxInt64, Name: "x", Wait: math.MaxInt64})
	if got := f.Time(); got != 1000+2*MaxTimeStep {
		t.Fatalf("time %d, want two steps", got)
	}
	checkDeadlines(t, f)
	g := mustRestoreBytes(t, f)
	checkDeadlines(t, g)
}

func TestTime_PoisonNowAtVersion1SaturatesAndRestores(t *testing.T) {
	f := New(nil)
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 1000, Lease: LeaseID{1}, NewLease: true, TTL: 10_000, Name: "x"})
	f.ApplyCommand(2, &Command{Type: TypeAcquire, Now: math.MaxInt64 - 5, Lease: LeaseID{2}, NewLease: true, TTL: 10_000, Name: "y", Wait: 10})
	if f.Time() != math.MaxInt64-5 {
		t.Fatalf("version 1 time %d: it must not be clamped (version 1 nodes do not clamp)", f.Time())
	}
	if v, _ := f.Lease(LeaseID{2}); v.Deadline != math.MaxInt64 {
		t.Fatalf("deadline %d, want saturated", v.Deadline)
	}
	checkDeadlines(t, f)
	mustRestoreBytes(t, f)
}

func TestTime_LaggingClusterTimeNeverShortensALease(t *testing.T) {
	f := atVersion2(t)
	a := LeaseID{1}
	// The leader was idle for two days: its clock is 48h ahead of cluster time.
	f.ApplyCommand(1, &Command{Type: TypeCreateLease, Now: 48 * hour, Lease: a, TTL: 10_000})
	if f.Time() != 24*hour {
		t.Fatalf("time %d, want one step", f.Time())
	}
	// One second later (on the leader's clock) time catches up a day in one entry; the lease,
	// stamped from the entry's Now, must survive its TTL of real time.
	f.ApplyCommand(2, &Command{Type: TypeTick, Now: 48*hour + 1000})
	if _, ok := f.Lease(a); !ok || f.Time() != 48*hour {
		t.Fatalf("lease expired 1s after it was created (time %d)", f.Time())
	}
	f.ApplyCommand(3, &Command{Type: TypeTick, Now: 48*hour + 9_999})
	if _, ok := f.Lease(a); !ok {
		t.Fatal("lease expired before its TTL")
	}
	f.ApplyCommand(4, &Command{Type: TypeTick, Now: 48*hour + 10_000})
	if _, ok := f.Lease(a); ok {
		t.Fatal("lease outlived its TTL once time caught up")
	}
}

func TestTime_SatAdd(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{0, 0, 0}, {1, 2, 3}, {math.MaxInt64, 0, math.MaxInt64}, {math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64}, {1, math.MaxInt64, math.MaxInt64}, {-5, 3, -2},
	} {
		if got := satAdd(c.a, c.b); got != c.want {
			t.Errorf("satAdd(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
