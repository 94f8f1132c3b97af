package fsm_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// These benchmarks measure what the lock name index bounds and costs: the work of
// one listing page, which must not grow with the number of locks, and the index update
// on each grant and free.

// tenantStates hold (once per size) a state machine with n held locks named
// tenant-%03d/job-%07d, 1,000 locks per tenant, by 64 leases: a multi-tenant table where
// one tenant's locks are a small part of the whole.
var tenantStates = sized{build: func(b *testing.B, n int) *fsm.FSM {
	const leases = 64
	f, index := withLeases(b, leases, 3_600_000)
	tenants := max(n/1000, 1)
	acq := fsm.Command{Type: fsm.TypeAcquire, Now: 2}
	for i := 0; i < n; i++ {
		index++
		// Tenants interleave, so names do not arrive in name order.
		acq.Lease, acq.Name = lease(i%leases), tenantLockName(i%tenants, i)
		mustApply(b, f, index, &acq, fsm.StatusOK)
	}
	return f
}}

func tenantLocks(b *testing.B, n int) *fsm.FSM { return tenantStates.get(b, n) }

func tenantLockName(tenant, job int) string { return fmt.Sprintf("tenant-%03d/job-%07d", tenant, job) }

// listSizes are the state sizes of the listing benchmark. 1,000,000 locks (the scale
// raftlock is sized for) takes seconds and about 1 GiB to build, so it runs only when
// RAFTLOCK_BENCH_LARGE=1, as for the snapshot benchmarks.
func listSizes() []int {
	if os.Getenv("RAFTLOCK_BENCH_LARGE") == "1" {
		return []int{10_000, 1_000_000}
	}
	return []int{10_000}
}

// BenchmarkLocksPage lists one page of 100 held locks: under a prefix that matches about
// 1,000 locks (one tenant), under the empty prefix, and under the prefix again from a
// cursor in the middle of the tenant. The cost should not depend on the number of locks.
func BenchmarkLocksPage(b *testing.B) {
	const page = 100
	for _, n := range listSizes() {
		f := tenantLocks(b, n)
		tenant := n / 1000 / 2
		prefix := fmt.Sprintf("tenant-%03d/", tenant)
		cases := []struct{ name, prefix, after string }{
			{"prefix", prefix, ""},
			{"all", "", ""},
			{"prefix-after", prefix, tenantLockName(tenant, (n/1000)*500+tenant)},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("locks=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					views, truncated := f.Locks(c.prefix, c.after, page)
					if len(views) != page || !truncated {
						b.Fatalf("page of %d locks, truncated=%v", len(views), truncated)
					}
				}
			})
		}
	}
}

// BenchmarkApplyAcquireReleaseAmongHeld is BenchmarkApplyAcquireRelease while 100,000
// other locks are held, so the grant and the free each update a name index of that size.
// The lock taken cycles through 64 names spread over the index, so the figure is not that
// of one leaf of the tree, which may happen to split and merge on every cycle.
func BenchmarkApplyAcquireReleaseAmongHeld(b *testing.B) {
	f := tenantLocks(b, 100_000)
	id := lease(1)
	index := uint64(1 << 20) // past the entries that built the state
	var names [64]string
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%03d/job-x", i*100/len(names))
	}
	acq := fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: id, Owner: "bench"}
	rel := fsm.Command{Type: fsm.TypeRelease, Now: 2, Lease: id}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		acq.Name, rel.Name = names[i%len(names)], names[i%len(names)]
		index++
		rel.Token = mustApply(b, f, index, &acq, fsm.StatusOK).Token
		index++
		mustApply(b, f, index, &rel, fsm.StatusOK)
	}
}
