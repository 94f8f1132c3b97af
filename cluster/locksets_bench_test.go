package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
)

// BenchmarkCluster_ThreeLocks takes three locks on one lease and gives them back, through
// the leader of a real three-node cluster on loopback (raft, the log store's fsync, no
// HTTP): as one lockset (one commit to take, one to release) and as three single acquires
// and releases (six commits). One op is the whole cycle; the ratio of the two is what a
// lockset saves a caller that needs several locks at once.
func BenchmarkCluster_ThreeLocks(b *testing.B) {
	c := clustertest.Start(b, 3, nil)
	l := v3Leader(b, c)
	ctx := clustertest.Ctx(b, 10*time.Minute)
	lease, err := l.Leases().Create(ctx, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	locks := l.Locks()
	round := 0
	names := func() []string {
		round++
		return []string{fmt.Sprintf("bench/%d/a", round), fmt.Sprintf("bench/%d/b", round), fmt.Sprintf("bench/%d/c", round)}
	}
	b.Run("lockset", func(b *testing.B) {
		for b.Loop() {
			g, err := locks.AcquireSet(ctx, cluster.LockSetRequest{Names: names(), Holder: cluster.Holder{Lease: lease}})
			if err != nil {
				b.Fatal(err)
			}
			if err := locks.ReleaseSet(ctx, lease, g.Locks); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("singles", func(b *testing.B) {
		for b.Loop() {
			var held []cluster.Grant
			for _, n := range names() {
				g, err := locks.Acquire(ctx, cluster.AcquireRequest{Name: n, Holder: cluster.Holder{Lease: lease}})
				if err != nil {
					b.Fatal(err)
				}
				held = append(held, g)
			}
			for _, g := range held {
				if err := locks.Release(ctx, g.Name, lease, g.Token); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
