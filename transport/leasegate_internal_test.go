package transport

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// gateLeases is a leader's lease role for the gate's tests: which leases its applied
// state holds, a read barrier that may apply a create or fail, and keepalives counted.
type gateLeases struct {
	LeaseService
	mu       sync.Mutex
	applied  map[cluster.LeaseID]bool
	barriers int
	// barrier runs in ReadBarrier (nil: none) and returns its error.
	barrier    func(g *gateLeases) error
	keepalives int
}

func (g *gateLeases) Creator(id cluster.LeaseID) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return "", g.applied[id]
}

func (g *gateLeases) ReadBarrier(context.Context) error {
	g.mu.Lock()
	g.barriers++
	g.mu.Unlock()
	if g.barrier == nil {
		return nil
	}
	return g.barrier(g)
}

func (g *gateLeases) apply(id cluster.LeaseID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.applied[id] = true
}

func (g *gateLeases) KeepAlive(context.Context, cluster.LeaseID) (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keepalives++
	return time.Second, nil
}

func (g *gateLeases) ImplicitLease(context.Context, string) cluster.LeaseID { return gateImplicit }

func (g *gateLeases) counts() (barriers, keepalives int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.barriers, g.keepalives
}

// gateLocks counts the acquires that reach the lock role.
type gateLocks struct {
	LockService
	acquires chan cluster.AcquireRequest
}

func (l gateLocks) Acquire(_ context.Context, req cluster.AcquireRequest) (cluster.Grant, error) {
	l.acquires <- req
	return cluster.Grant{Granted: cluster.Granted{Name: req.Name, Token: 9, Lease: gateImplicit}}, nil
}

var (
	gateLease    = cluster.LeaseID{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff} // keepalivePath's
	gateImplicit = cluster.LeaseID{1}
)

// The gate answers a missing lease "not found" only after the read barrier, judging
// again from the state the barrier reached; a lease it finds on the spot goes on with no
// barrier; a node that cannot pass the barrier answers as one without a leader, never
// "not found"; and a request_id's implicit lease may be missing (the acquire creates it).
// Each case fails with its rule removed from leaseGate.check (no barrier, no second look,
// a barrier for every lease, a request_id's lease required).
func TestLeaseGate_RefusesOnlyAfterTheReadBarrier(t *testing.T) {
	for _, tc := range []struct {
		name           string
		applied        bool                      // the lease is in the applied state at once
		barrier        func(g *gateLeases) error // what the barrier does
		status         int
		code           string
		wantBarriers   int
		wantKeepalives int
	}{
		// A follower applied the create before the leader's state machine and forwarded
		// the keepalive at once: the barrier waits for the create, and it goes on.
		{"applied during the barrier", false, func(g *gateLeases) error { g.apply(gateLease); return nil }, 200, "", 1, 1},
		{"missing after the barrier", false, nil, 404, api.CodeLeaseNotFound, 1, 0},
		// A leader cut off from the majority (which may have created the lease) fails
		// the barrier: it answers that it has no leader, which a client retries.
		{"barrier failed", false, func(*gateLeases) error { return cluster.ErrNoLeader }, 503, api.CodeNoLeader, 1, 0},
		{"found at once", true, nil, 200, "", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gateLeases{applied: map[cluster.LeaseID]bool{gateLease: tc.applied}, barrier: tc.barrier}
			ts := newTestServer(t, Services{Routing: readyLeader{}, Leases: g}, nil)
			a := send(t, "POST", ts.URL+keepalivePath, "")
			if tc.code != "" {
				wantError(t, a, tc.status, tc.code)
			} else if a.Status != tc.status {
				t.Fatalf("answer %d %s, want %d", a.Status, a.Raw, tc.status)
			}
			if b, k := g.counts(); b != tc.wantBarriers || k != tc.wantKeepalives {
				t.Fatalf("%d barriers and %d keepalives proposed, want %d and %d", b, k, tc.wantBarriers, tc.wantKeepalives)
			}
		})
	}
	t.Run("request_id's lease missing", func(t *testing.T) {
		g := &gateLeases{applied: map[cluster.LeaseID]bool{}}
		locks := gateLocks{acquires: make(chan cluster.AcquireRequest, 1)}
		ts := newTestServer(t, Services{Routing: readyLeader{}, Leases: g, Locks: locks}, nil)
		a := send(t, "PUT", ts.URL+"/v1/locks/jobs/a", `{"ttl_ms":1000,"request_id":"req-0123456789abcdef"}`)
		if a.Status != 200 || len(locks.acquires) != 1 {
			t.Fatalf("acquire with a new request_id: %d %s, %d acquires, want 200 and 1", a.Status, a.Raw, len(locks.acquires))
		}
		if b, _ := g.counts(); b != 0 {
			t.Fatalf("%d barriers for a lease the acquire creates, want none", b)
		}
	})
}
