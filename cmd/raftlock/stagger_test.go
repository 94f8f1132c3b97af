package main

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/cluster"
)

// TestServe_SnapshotsStaggered: the three nodes of a cluster started as the README says
// (the same --bootstrap list on each) get three different snapshot phases from serve's
// config, so their snapshots do not come at the same index (cluster.Config.SnapshotPhase;
// the cluster package checks that raft runs with them).
func TestServe_SnapshotsStaggered(t *testing.T) {
	const boot = "n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003"
	phases := map[uint64]string{}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
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
		err := app.Run([]string{"raftlock", "serve", "--id", id, "--data-dir", t.TempDir(), "--bootstrap", boot,
			"--raft-addr", fmt.Sprintf("127.0.0.1:700%d", i), "--http-addr", fmt.Sprintf("127.0.0.1:800%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		p := cfg.SnapshotPhase()
		if other, dup := phases[p]; dup {
			t.Fatalf("%s and %s have the same snapshot phase %d", id, other, p)
		}
		phases[p] = id
	}
}
