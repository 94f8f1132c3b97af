package benchkit

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// SystemWorkloads are the workloads PrintSystems shows, in order: those every lock
// service can be asked for.
var SystemWorkloads = []string{Uncontended, Parallel, Contended, Shared, Semaphore}

// PrintSystems writes one table of every system on every workload of SystemWorkloads:
// for each workload a row per system, in the order the systems first appear in results,
// with its rate and server CPU per operation beside base's (the system named base,
// "etcd"), latency, the contended gap, and errors and violations. A system without a
// result for a workload gets an "n/a" row (the reason, when a result says it, follows the
// table), and a system with Unsafe set is marked UNSAFE in every row. It returns the
// number of rows that hold figures.
func PrintSystems(w io.Writer, results []*Result, base string) int {
	var systems []string
	for _, r := range results {
		if !slices.Contains(systems, r.System) {
			systems = append(systems, r.System)
		}
	}
	pick := func(system, workload string) *Result {
		for _, r := range results {
			if r.System == system && r.Workload == workload {
				return r
			}
		}
		return nil
	}
	unsafe := map[string]string{}
	for _, r := range results {
		if r.Unsafe != "" {
			unsafe[r.System] = r.Unsafe
		}
	}
	label := func(system string) string {
		if unsafe[system] != "" {
			return system + " UNSAFE"
		}
		return system
	}
	ratio := func(a, b float64, ok bool) string {
		if !ok || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "workload\tclients\tsystem\top\tops/s\trate/%s\tp50 ms\tp99 ms\tgap p99 ms\tsrv CPU ms/op\tCPU/%s\tsrv cores\tother cores\terrors\tviolations\t\n", base, base)
	var notes []string
	rows := 0
	for _, wl := range SystemWorkloads {
		b := pick(base, wl)
		if b != nil && b.Unsupported != "" {
			b = nil
		}
		for _, sys := range systems {
			r := pick(sys, wl)
			clients := DefaultClients(wl)
			if r != nil && r.Clients > 0 {
				clients = r.Clients
			}
			if r == nil || r.Unsupported != "" {
				fmt.Fprintf(tw, "%s\t%d\t%s\t\tn/a\t\t\t\t\t\t\t\t\t\t\t\n", wl, clients, label(sys))
				if r != nil {
					notes = append(notes, fmt.Sprintf("n/a %s %s: %s", sys, wl, r.Unsupported))
				} else {
					notes = append(notes, fmt.Sprintf("n/a %s %s: no result (its bench has no such workload)", sys, wl))
				}
				continue
			}
			rows++
			l := r.Latency
			if l == nil {
				l = &Latency{}
			}
			gap := "-"
			if r.Gap != nil {
				gap = f1(r.Gap.P99)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n",
				wl, clients, label(sys), r.Op, f1(r.OpsPerSec), ratio(r.OpsPerSec, b.rate(), b != nil),
				f1(l.P50), f1(l.P99), gap, cpuCell(r, r.ServerCPUPerOp),
				ratio(r.ServerCPUPerOp, b.cpuPerOp(), b != nil && r.CPUMeasured && b.CPUMeasured),
				cpuCell(r, r.ServerCores), cpuCell(r, r.OtherCores), r.Errors, r.Violations)
		}
	}
	tw.Flush()
	for _, sys := range systems {
		if unsafe[sys] != "" {
			notes = append(notes, fmt.Sprintf("UNSAFE %s: %s", sys, unsafe[sys]))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
	return rows
}

// rate and cpuPerOp read a result that may be nil.
func (r *Result) rate() float64 {
	if r == nil {
		return 0
	}
	return r.OpsPerSec
}

func (r *Result) cpuPerOp() float64 {
	if r == nil {
		return 0
	}
	return r.ServerCPUPerOp
}
