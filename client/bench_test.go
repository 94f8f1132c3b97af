package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/testcluster"
)

// cannedCluster answers every acquire with one grant and every release with success,
// without a network or a server: what the client itself costs per request.
type cannedCluster struct{}

var (
	cannedGrant   = []byte(`{"name":"accounts/A","token":123456789,"lease_id":"0123456789abcdef0123456789abcdef","ttl_ms":10000,"mode":"exclusive"}` + "\n")
	cannedRelease = []byte(`{"released":true}` + "\n")
)

func (cannedCluster) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := cannedGrant
	if r.Method == http.MethodDelete {
		body = cannedRelease
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// BenchmarkClientCycle is one Acquire (with a lease) and one Release through the client
// against canned answers: the client's own encoding, request building and decoding, with
// no network and no server, so its allocations per cycle are the client's alone.
func BenchmarkClientCycle(b *testing.B) {
	c, err := client.New([]string{"http://127.0.0.1:1"}, client.WithHTTPClient(&http.Client{Transport: cannedCluster{}}))
	if err != nil {
		b.Fatal(err)
	}
	cycles(b, c, "accounts/A", "0123456789abcdef0123456789abcdef")
}

// locker is what a cycle uses of a Client or a Router.
type locker interface {
	Acquire(ctx context.Context, name string, opts client.AcquireOptions) (api.Grant, error)
	Release(ctx context.Context, name, leaseID string, token uint64) error
}

// cycles is b's loop: one acquire of name with lease and one release, through l.
func cycles(b *testing.B, l locker, name, lease string) {
	ctx := b.Context()
	opts := client.AcquireOptions{LeaseID: lease}
	b.ReportAllocs()
	for b.Loop() {
		g, err := l.Acquire(ctx, name, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx, name, lease, g.Token); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCycleInProcess is one acquire and one release with a lease, by the client,
// through a real three-node cluster in this process (HTTP on loopback, raft, BoltDB):
// "direct" to the leader, "forwarded" through a follower. Allocations per op count the
// whole process (client, both servers, raft), so they are comparable between two builds
// of this code only; ns/op depends on the machine's load and disk.
func BenchmarkCycleInProcess(b *testing.B) {
	tc := testcluster.StartInProcess(b, 3, func(i int, c *cluster.Config) { c.Logger = hclog.NewNullLogger() })
	leader := tc.LeaderIndex()
	follower := (leader + 1) % 3
	for _, bc := range []struct {
		name string
		ep   int
	}{{"direct", leader}, {"forwarded", follower}} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := client.New([]string{tc.URL(bc.ep)})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			l, err := c.NewLease(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(ctx)
			cycles(b, c, "bench/"+strings.ReplaceAll(bc.name, " ", "-"), l.ID())
		})
	}
}

// BenchmarkRouterCycle is BenchmarkClientCycle through a Router of two clusters (four
// prefixes): what routing adds to a cycle.
func BenchmarkRouterCycle(b *testing.B) {
	hc := client.WithHTTPClient(&http.Client{Transport: cannedCluster{}})
	r, err := client.NewRouter([]client.Route{
		{Name: "A", Prefixes: []string{"accounts/", "billing/"}, Endpoints: []string{"http://127.0.0.1:1"}},
		{Name: "B", Prefixes: []string{"jobs/", ""}, Endpoints: []string{"http://127.0.0.1:2"}},
	}, hc)
	if err != nil {
		b.Fatal(err)
	}
	cycles(b, r, "accounts/A", "0123456789abcdef0123456789abcdef")
}
