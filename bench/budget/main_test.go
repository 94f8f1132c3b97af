package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestBudget_OneCycle runs the command with one measured cycle per target on both log
// stores, so that the budget cannot rot: each store's table must come out with commits
// through the leader and through a follower, every one of them joined to its store,
// replication and apply records. It judges no figure.
func TestBudget_OneCycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"--cycles", "1", "--warmup", "1", "--floor-samples", "5", "--data-dir", t.TempDir()}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"log store boltdb: 2 commits through the leader, 2 through a follower",
		"log store wal: 2 commits through the leader, 2 through a follower", "fdatasync", "leader log write", "quorum wait", "follower: its log write"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestBudget_FloorsOnly: --floors-only prints the floors, the fdatasync one among them,
// and starts no cluster (no store's table).
func TestBudget_FloorsOnly(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--floors-only", "--floor-samples", "5", "--data-dir", t.TempDir()}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "pwrite 4 KiB in place + fdatasync") {
		t.Errorf("output lacks the fdatasync floor:\n%s", out.String())
	}
	if strings.Contains(out.String(), "log store") {
		t.Errorf("--floors-only measured a cluster:\n%s", out.String())
	}
}
