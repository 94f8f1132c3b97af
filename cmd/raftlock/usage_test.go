package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
)

// serveLimits returns the limits serve's config makes of args.
func serveLimits(t *testing.T, args ...string) fsm.Limits {
	t.Helper()
	var cfg cluster.Config
	app := newApp()
	for _, cmd := range app.Commands {
		if cmd.Name == "serve" {
			cmd.Action = func(c *cli.Context) error {
				var err error
				cfg, _, err = serveConfig(c, hclog.NewNullLogger())
				return err
			}
		}
	}
	base := []string{"raftlock", "serve", "--id", "n1", "--data-dir", t.TempDir(), "--bootstrap", "n1=127.0.0.1:8001"}
	if err := app.Run(append(base, args...)); err != nil {
		t.Fatal(err)
	}
	return cfg.Limits
}

// The per-identity quotas: the documented defaults; each left at its default is at most
// half of the cluster-wide limit it counts toward, so that one identity cannot take a
// cluster-wide limit an operator lowered; one given on the command line is taken as given.
func TestServe_IdentityQuotaDefaults(t *testing.T) {
	if got, want := serveLimits(t).PerIdentity, fsm.DefaultPerIdentity; got != want || want != (fsm.Quotas{MaxLeases: 10_000, MaxLocks: 50_000, MaxWaiters: 10_000}) {
		t.Fatalf("defaults %+v, want %+v as documented", got, want)
	}
	if l := serveLimits(t); l.MaxLocks != 2_000_000 || l.MaxWaiters != 1_000_000 || l.MaxLeases != 1_000_000 {
		t.Fatalf("cluster-wide defaults %+v", l)
	}
	if got := serveLimits(t, "--max-leases", "4000", "--max-locks", "1000").PerIdentity; got != (fsm.Quotas{MaxLeases: 2000, MaxLocks: 500, MaxWaiters: 10_000}) {
		t.Fatalf("with lower cluster-wide limits: %+v", got)
	}
	if got := serveLimits(t, "--max-leases", "4000", "--max-leases-per-identity", "4000").PerIdentity.MaxLeases; got != 4000 {
		t.Fatalf("a quota given: %d", got)
	}
	if got := serveLimits(t, "--max-leases", "0").PerIdentity.MaxLeases; got != 10_000 {
		t.Fatalf("with no cluster-wide lease limit: %d", got)
	}
}
