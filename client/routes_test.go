package client_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testcluster"
)

// TestRouter_TwoClusters routes names between two real clusters: A (three nodes) owns
// "a/" and every name no other prefix matches, B (one node) owns "b/" and the longer
// "a/special/". Each name lands on the cluster of its longest prefix and on no other, each
// cluster's tokens are its own and rise per lock, and a lease of one cluster given for a
// name of the other is refused before anything is sent.
func TestRouter_TwoClusters(t *testing.T) {
	a := testcluster.StartInProcess(t, 3, nil)
	b := testcluster.StartInProcess(t, 1, nil)
	ca, cb := newClient(t, a.Endpoints()), newClient(t, b.Endpoints())
	r, err := client.NewRouter([]client.Route{
		{Name: "A", Prefixes: []string{"a/", ""}, Endpoints: a.Endpoints()},
		{Name: "B", Prefixes: []string{"b/", "a/special/"}, Endpoints: b.Endpoints()},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 60*time.Second)
	home := map[string]*client.Client{"a/x": ca, "b/y": cb, "a/special/z": cb, "other": ca}
	away := map[*client.Client]*client.Client{ca: cb, cb: ca}

	// Names land on their own cluster only; tokens rise per lock on that cluster.
	last := map[string]uint64{}
	for round := 0; round < 3; round++ {
		for name, c := range home {
			owner := fmt.Sprintf("round-%d", round)
			g, err := r.Acquire(ctx, name, client.AcquireOptions{Owner: owner})
			if err != nil {
				t.Fatalf("acquire %s: %v", name, err)
			}
			if g.Token <= last[name] {
				t.Fatalf("%s: token %d after %d: not monotonic", name, g.Token, last[name])
			}
			last[name] = g.Token
			st, err := c.Status(ctx, name, client.StatusOptions{})
			if err != nil || !st.Held || st.Token != g.Token || st.Owner != owner {
				t.Fatalf("%s on its own cluster: %+v, %v; want held with token %d", name, st, err, g.Token)
			}
			if st, err := away[c].Status(ctx, name, client.StatusOptions{}); err != nil || st.Held || st.Token != 0 {
				t.Fatalf("%s on the other cluster: %+v, %v; want never granted there", name, st, err)
			}
			if err := r.Release(ctx, name, g.LeaseID, g.Token); err != nil {
				t.Fatalf("release %s: %v", name, err)
			}
		}
	}
	for name, want := range map[string]string{"a/x": "A", "a/specialist": "A", "a/special/z": "B", "b/y": "B", "zzz": "A"} {
		if got, err := r.ClusterFor(name); err != nil || got != want {
			t.Errorf("ClusterFor(%q) = %q, %v; want %q", name, got, err, want)
		}
	}

	// A lease of A, by *Lease or by ID, is refused for B's names, and nothing reaches B.
	la, err := r.NewLease(ctx, "a/", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close(ctx)
	crossed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, client.ErrCrossCluster) || !errors.Is(err, client.ErrInvalid) {
			t.Fatalf("%s: %v; want ErrCrossCluster", what, err)
		}
		if strings.Contains(err.Error(), la.ID()) {
			t.Fatalf("%s: the error shows the lease ID: %v", what, err)
		}
	}
	_, err = r.NewMutexWith(la, "b/y")
	crossed("a Mutex for b/y with A's lease", err)
	_, err = r.Acquire(ctx, "a/special/z", client.AcquireOptions{LeaseID: la.ID()})
	crossed("acquire a/special/z with A's lease ID", err)
	crossed("release b/y with A's lease ID", r.Release(ctx, "b/y", la.ID(), 1))
	g, err := r.Acquire(ctx, "a/q", client.AcquireOptions{}) // a lease created with the grant, on A
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Acquire(ctx, "b/q", client.AcquireOptions{LeaseID: g.LeaseID})
	crossed("acquire b/q with the lease of A's grant", err)
	for _, name := range []string{"b/y", "a/special/z", "b/q"} {
		if st, err := cb.Status(ctx, name, client.StatusOptions{}); err != nil || st.Held {
			t.Fatalf("%s on B after the refusals: %+v, %v", name, st, err)
		}
	}

	// The same lease on its own cluster works, through the Router and through a Mutex.
	m, err := r.NewMutexWith(la, "a/m", client.WithOwner("la"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := ca.Status(ctx, "a/m", client.StatusOptions{}); err != nil || st.Owner != "la" || st.Token != m.Token() {
		t.Fatalf("a/m on A: %+v, %v", st, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	g2, err := r.Acquire(ctx, "a/n", client.AcquireOptions{LeaseID: g.LeaseID})
	if err != nil || g2.LeaseID != g.LeaseID {
		t.Fatalf("acquire a/n with the lease of A's grant: %+v, %v", g2, err)
	}
}

// TestRouter_Config: a router needs routes, each with prefixes, no prefix routed twice; a
// name no prefix owns is refused when there is no default route.
func TestRouter_Config(t *testing.T) {
	ep := []string{"http://127.0.0.1:1"}
	for _, tc := range []struct {
		what   string
		routes []client.Route
		want   string
	}{
		{"no routes", nil, "no routes"},
		{"no prefixes", []client.Route{{Name: "A", Endpoints: ep}}, "no prefixes"},
		{"a prefix twice", []client.Route{{Name: "A", Prefixes: []string{"x/"}, Endpoints: ep}, {Name: "B", Prefixes: []string{"x/"}, Endpoints: ep}}, `"x/" is routed to both A and B`},
		{"no endpoints", []client.Route{{Name: "A", Prefixes: []string{"x/"}}}, "no endpoints"},
	} {
		if _, err := client.NewRouter(tc.routes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.what, err, tc.want)
		}
	}
	r, err := client.NewRouter([]client.Route{{Prefixes: []string{"x/"}, Endpoints: ep}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Acquire(ctxFor(t, time.Second), "y/1", client.AcquireOptions{})
	if !errors.Is(err, client.ErrNoRoute) || !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("an unrouted name: %v; want ErrNoRoute", err)
	}
	if _, err := r.Status(ctxFor(t, time.Second), "y/1", client.StatusOptions{}); !errors.Is(err, client.ErrNoRoute) {
		t.Fatalf("status of an unrouted name: %v", err)
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		t.Fatalf("a refusal made by the client carries a server error: %v", ae)
	}
}
