package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/bench/benchkit"
	"github.com/raftlock/raftlock/bench/cpuprof"
)

// cpuCommand takes servers' CPU profiles apart by component, one column a system:
//
//	raftlock-bench cpu [--workload parallel] LABEL=PROFILE[,PROFILE...][@RATE|@RESULT.json]...
//
// Several profiles in one column are the members of one cluster profiled over the same
// window (etcd's three processes); a rate (operations per second, or a --json-out file
// whose --workload result gives it) turns the shares into CPU microseconds per operation.
func cpuCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "cpu",
		Usage:     "break servers' CPU profiles down by component (raft, log store, HTTP, JSON, GC, scheduler, syscalls), systems side by side",
		ArgsUsage: "LABEL=PROFILE[,PROFILE...][@RATE|@RESULT.json]...",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "workload", Value: benchkit.Parallel, Usage: "which result of a RESULT.json gives the rate"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("cpu needs at least one LABEL=PROFILE[,PROFILE...][@RATE|@RESULT.json]", 2)
			}
			var cols []cpuprof.Column
			for _, spec := range c.Args().Slice() {
				col, err := cpuColumn(spec, c.String("workload"))
				if err != nil {
					return cli.Exit(err.Error(), 2)
				}
				cols = append(cols, col)
			}
			cpuprof.Print(stdout, cols)
			return nil
		},
	}
}

// cpuColumn reads one LABEL=PROFILE[,PROFILE...][@RATE|@RESULT.json] argument.
func cpuColumn(spec, workload string) (cpuprof.Column, error) {
	label, rest, ok := strings.Cut(spec, "=")
	if !ok || label == "" || rest == "" {
		return cpuprof.Column{}, fmt.Errorf("cpu: %q: want LABEL=PROFILE[,PROFILE...][@RATE|@RESULT.json]", spec)
	}
	files, rateSpec, _ := strings.Cut(rest, "@")
	var profiles []*cpuprof.Profile
	for _, f := range strings.Split(files, ",") {
		data, err := os.ReadFile(f)
		if err != nil {
			return cpuprof.Column{}, fmt.Errorf("cpu: %w", err)
		}
		p, err := cpuprof.Parse(data)
		if err != nil {
			return cpuprof.Column{}, fmt.Errorf("cpu: %s: %w", f, err)
		}
		profiles = append(profiles, p)
	}
	col := cpuprof.Column{Label: label, B: cpuprof.Classify(cpuprof.Merge(profiles...))}
	if rateSpec == "" {
		return col, nil
	}
	if r, err := strconv.ParseFloat(rateSpec, 64); err == nil {
		col.Rate = r
		return col, nil
	}
	results, err := benchkit.ReadJSON(rateSpec)
	if err != nil {
		return col, fmt.Errorf("cpu: %s: %w", rateSpec, err)
	}
	for _, r := range results {
		if r.Workload == workload {
			col.Rate = r.OpsPerSec
			return col, nil
		}
	}
	return col, fmt.Errorf("cpu: %s holds no %s result", rateSpec, workload)
}
