package transport_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
)

// BenchmarkLeaseRefusal times, per route that takes a lease ID and per node (the leader,
// a follower), token b's request with token a's live lease (foreign) and with an ID that
// names no lease (unknown), one of each per iteration in alternating order, so that the
// machine's load weighs on both alike. It reports each kind's median in µs and their
// ratio (unknown/foreign); both answer 404 lease_not_found (the batch: 200, not_found).
//
//	go test ./transport -run '^$' -bench BenchmarkLeaseRefusal -benchtime 40x
func BenchmarkLeaseRefusal(b *testing.B) {
	c, _, ta, tb := leaseGateCluster(b, 0)
	li := c.Leader(10 * time.Second)
	foreign := createLease(b, c, ta, li)
	for _, node := range []struct {
		name string
		i    int
	}{{"leader", li}, {"follower", c.Follower()}} {
		for ri, rt := range leaseIDRoutes(foreign) {
			b.Run(strings.ReplaceAll(rt.what, " ", "_")+"/"+node.name, func(b *testing.B) {
				var took [2][]time.Duration // foreign, unknown
				for n := 0; b.Loop(); n++ {
					for k := range 2 {
						kind := (n + k) % 2
						r := rt
						if kind == 1 {
							r = leaseIDRoutes(madeUpLeaseID(b))[ri]
						}
						a := rawhttp.Client{Token: tb}.Do(r.method, c.URL(node.i)+r.path, r.body)
						if a.Err != nil || a.Status != 404 && !(r.what == "keepalive (batch)" && a.Status == 200) {
							b.Fatalf("%s (%s): %d %s %v", r.what, []string{"foreign", "unknown"}[kind], a.Status, a.Raw, a.Err)
						}
						took[kind] = append(took[kind], a.Took)
					}
				}
				f, u := median(took[0]), median(took[1])
				b.ReportMetric(float64(f.Microseconds()), "foreign-p50-µs")
				b.ReportMetric(float64(u.Microseconds()), "unknown-p50-µs")
				b.ReportMetric(float64(u)/float64(max(f, 1)), "unknown/foreign")
			})
		}
	}
}

// median returns the median of ds (0 for none).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
