package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/bench/benchkit"
	"github.com/raftlock/raftlock/test/testcluster"
)

// TestWorkloads_Tiny runs every workload for about a second with small sizes against a
// real three-process cluster, so the benchmarks cannot rot. It checks only that work
// was done without errors or safety violations; it never judges speed.
func TestWorkloads_Tiny(t *testing.T) {
	p := testcluster.StartProcesses(t, 3)
	endpoints := strings.Join(p.Endpoints(), ",")
	// The scale workload restarts a follower itself; stop whatever serves the cluster's
	// addresses at the end, including that restarted process.
	t.Cleanup(func() {
		for _, pid := range benchkit.FindProcs(func(args []string) bool {
			addr := benchkit.FlagValue(args, "--http-addr")
			return slices.Contains(args, "serve") && addr != "" && strings.Contains(endpoints, "http://"+addr)
		}) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	common := []string{"raftlock-bench", "--endpoints", endpoints, "--state", "", "--duration", "1s", "--warmup", "200ms", "--json"}
	cases := []struct {
		args  []string
		check func(t *testing.T, r *benchkit.Result)
	}{
		{args: []string{"uncontended"}},
		{args: []string{"--clients", "8", "parallel"}},
		{args: []string{"--clients", "4", "contended"}, check: func(t *testing.T, r *benchkit.Result) {
			if r.Gap == nil || len(r.PerClient) != 4 {
				t.Errorf("contended: no gap or per-client counts: %+v", r)
			}
		}},
		{args: []string{"--clients", "4", "shared"}, check: func(t *testing.T, r *benchkit.Result) {
			if r.Op != "grant" || len(r.PerClient) != 4 {
				t.Errorf("shared: not a grant workload with per-client counts: %+v", r)
			}
		}},
		{args: []string{"--clients", "6", "semaphore"}, check: func(t *testing.T, r *benchkit.Result) {
			if r.Op != "grant" || len(r.PerClient) != 6 {
				t.Errorf("semaphore: not a grant workload with per-client counts: %+v", r)
			}
		}},
		{args: []string{"--leases", "40", "--lease-ttl", "1500ms", "keepalive"}, check: func(t *testing.T, r *benchkit.Result) {
			if !hasMetric(r, "log entries per second") {
				t.Errorf("keepalive: no log entry rate: %+v", r.Metrics)
			}
		}},
		{args: []string{"--leases", "40", "--lease-ttl", "1500ms", "--batch", "16", "keepalive"}, check: func(t *testing.T, r *benchkit.Result) {
			if !hasMetric(r, "lease IDs per keepalive request") || !hasMetric(r, "log entries per second") {
				t.Errorf("batch keepalive: no batch or log entry figures: %+v", r.Metrics)
			}
		}},
		{args: []string{"--locks", "300", "--clients", "8", "--snapshot=false", "scale"}, check: func(t *testing.T, r *benchkit.Result) {
			if !hasMetric(r, "restart to ready") || !hasMetric(r, "RSS n1") {
				t.Errorf("scale: no restart or memory figures: %+v %v", r.Metrics, r.Notes)
			}
		}},
	}
	for _, c := range cases {
		name := c.args[len(c.args)-1]
		var out, errb bytes.Buffer
		if err := newApp(&out, &errb).Run(append(slices.Clone(common), c.args...)); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, errb.String())
		}
		var results []*benchkit.Result
		if err := json.Unmarshal(out.Bytes(), &results); err != nil || len(results) != 1 {
			t.Fatalf("%s: output is not one JSON result (%v):\n%s", name, err, out.String())
		}
		r := results[0]
		t.Logf("%s: %d %s in %.1f s, %d errors, %d violations, server CPU measured: %v", name, r.Ops, r.Op, r.Seconds, r.Errors, r.Violations, r.CPUMeasured)
		if r.Ops == 0 || r.Errors != 0 || r.Violations != 0 {
			t.Errorf("%s: ops %d, errors %d %v, violations %d\nprogress:\n%s", name, r.Ops, r.Errors, r.ErrSamples, r.Violations, errb.String())
		}
		if !r.CPUMeasured {
			t.Errorf("%s: the server processes were not found for CPU readings", name)
		}
		if c.check != nil {
			c.check(t, r)
		}
	}
}

func hasMetric(r *benchkit.Result, prefix string) bool {
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Name, prefix) {
			return true
		}
	}
	return false
}

// TestSystemsCommand prints saved results of two systems as one table, with the ratio to
// the base system, and refuses files that hold no figures.
func TestSystemsCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, results ...*benchkit.Result) string {
		path := filepath.Join(dir, name)
		var buf bytes.Buffer
		if err := benchkit.WriteJSON(&buf, results); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.json", &benchkit.Result{System: "raftlock", Workload: benchkit.Parallel, Clients: 64, Op: "cycle", OpsPerSec: 2000})
	b := write("b.json", &benchkit.Result{System: "etcd", Workload: benchkit.Parallel, Clients: 64, Op: "cycle", OpsPerSec: 1000})
	var out, errOut bytes.Buffer
	if err := newApp(&out, &errOut).Run([]string{"raftlock-bench", "systems", a, b}); err != nil {
		t.Fatalf("systems: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "rate/etcd") || !strings.Contains(out.String(), "2.00x") {
		t.Errorf("no ratio to etcd in:\n%s", out.String())
	}
	empty := write("empty.json", &benchkit.Result{System: "redis", Workload: benchkit.Shared, Unsupported: "none"})
	out.Reset()
	app := newApp(&out, &errOut)
	app.ExitErrHandler = func(*cli.Context, error) {} // return the exit error instead of exiting
	if err := app.Run([]string{"raftlock-bench", "systems", empty}); err == nil {
		t.Errorf("systems over results without figures succeeded:\n%s", out.String())
	}
}
