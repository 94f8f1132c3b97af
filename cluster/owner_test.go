package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/fsm"
)

// Every node operation that uses a lease carries its caller into the log (protocol
// version 4), so the state machine itself refuses another identity: B, with A's lease ID
// and no edge check in front, gets ErrLeaseNotFound from every operation (acquires of
// each primitive, releases, keepalive, revoke) and changes nothing; A's own operations
// work. Deleting A's token then revokes A's leases in that entry.
func TestNode_LeaseCallerCheckedAtApply(t *testing.T) {
	c := clustertest.Start(t, 3, nil)
	ctx := clustertest.Ctx(t, 30*time.Second)
	l := v2Leader(t, c) // every member registers the newest version, which the leader then raises to
	c.WaitFor(30*time.Second, "the newest protocol version", func() bool { return l.FSM().Version() == fsm.Version })
	if _, err := l.ACL().Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.ACL().SetPolicy(ctx, "lock", "", []cluster.ACLRule{{Prefix: "", Access: fsm.AccessLock}}, cluster.Quotas{}); err != nil {
		t.Fatal(err)
	}
	ta, err := l.ACL().CreateToken(ctx, "a", []string{"lock"}, cluster.Quotas{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := l.ACL().CreateToken(ctx, "b", []string{"lock"}, cluster.Quotas{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := cluster.WithLeaseCreator(ctx, ta.Accessor), cluster.WithLeaseCreator(ctx, tb.Accessor)
	const ttl = time.Minute
	lease, err := l.Leases().Create(a, ttl)
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.Locks().Acquire(a, cluster.AcquireRequest{Name: "x", Holder: cluster.Holder{Lease: lease}})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := l.Semaphores().Acquire(a, cluster.SemaphoreRequest{Name: "s", Limit: 2, Holder: cluster.Holder{Lease: lease}})
	if err != nil {
		t.Fatal(err)
	}
	eg, err := l.Elections().Campaign(a, cluster.CampaignRequest{Name: "e", Value: "v", Holder: cluster.Holder{Lease: lease}})
	if err != nil {
		t.Fatal(err)
	}
	for what, op := range map[string]func() error{
		"acquire": func() error {
			_, err := l.Locks().Acquire(b, cluster.AcquireRequest{Name: "y", Holder: cluster.Holder{Lease: lease}})
			return err
		},
		"semaphore": func() error {
			_, err := l.Semaphores().Acquire(b, cluster.SemaphoreRequest{Name: "s2", Limit: 2, Holder: cluster.Holder{Lease: lease}})
			return err
		},
		"campaign": func() error {
			_, err := l.Elections().Campaign(b, cluster.CampaignRequest{Name: "e2", Value: "v", Holder: cluster.Holder{Lease: lease}})
			return err
		},
		"lockset": func() error {
			_, err := l.Locks().AcquireSet(b, cluster.LockSetRequest{Names: []string{"z1", "z2"}, Holder: cluster.Holder{Lease: lease}})
			return err
		},
		"release":     func() error { return l.Locks().Release(b, "x", lease, g.Token) },
		"sem release": func() error { return l.Semaphores().Release(b, "s", lease, sg.Token) },
		"resign":      func() error { return l.Elections().Resign(b, "e", lease, eg.Token) },
		"lockset release": func() error {
			return l.Locks().ReleaseSet(b, lease, []cluster.LockToken{{Name: "x", Token: g.Token}})
		},
		"keepalive": func() error { _, err := l.Leases().KeepAlive(b, lease); return err },
		"revoke":    func() error { _, err := l.Leases().Revoke(b, lease); return err },
	} {
		if err := op(); !errors.Is(err, cluster.ErrLeaseNotFound) {
			t.Errorf("B's %s with A's lease: %v, want ErrLeaseNotFound", what, err)
		}
	}
	if v := l.FSM().Lock("x"); v.Holder != lease || v.Token != g.Token {
		t.Fatalf("x after B's attempts: %+v", v)
	}
	if _, err := l.Leases().KeepAlive(a, lease); err != nil {
		t.Fatalf("A's keepalive: %v", err)
	}
	if err := l.ACL().DeleteToken(context.Background(), ta.Accessor); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.FSM().Lease(lease); ok || l.FSM().Lock("x").Held {
		t.Fatal("A's lease outlived A's token")
	}
}
