package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what one workload run measured.
type Result struct {
	// System is the backend's name ("raftlock", "etcd").
	System string `json:"system"`
	// Workload names the workload.
	Workload string `json:"workload"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Target says where the traffic went.
	Target string `json:"target,omitempty"`
	// Seconds is the measured wall time.
	Seconds float64 `json:"seconds"`
	// Op names one operation: "cycle" (acquire + release), "handover", "keepalive", ...
	Op string `json:"op"`
	// Ops counts the operations completed in the measured time; OpsPerSec is their rate.
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// Latency is the latency of one operation (for contended: from asking for the lock to
	// being granted it, queue included).
	Latency *Latency `json:"latency_ms,omitempty"`
	// Gap (contended) is the time from the holder calling release to the next holder's
	// acquire returning.
	Gap *Latency `json:"gap_ms,omitempty"`
	// PerClient (contended) counts each client's acquisitions, for FIFO fairness.
	PerClient []int64 `json:"per_client,omitempty"`
	// CPUMeasured reports whether server CPU was read; ServerCPUPerOp is the server CPU
	// (all server processes together) per operation in milliseconds, ServerCores the
	// average number of server cores busy, ClientCores that of the load generator.
	CPUMeasured    bool    `json:"cpu_measured"`
	ServerCPUPerOp float64 `json:"server_cpu_ms_per_op"`
	ServerCores    float64 `json:"server_cores"`
	ClientCores    float64 `json:"client_cores"`
	// OtherCores is the average number of cores busy with anything else on the machine
	// (other work on a shared machine, the kernel's own threads); it should be near zero.
	OtherCores float64 `json:"other_cores"`
	// Errors counts failed operations; Violations counts safety violations (two holders,
	// a token that did not increase). Samples holds the first few of each.
	Errors     int64 `json:"errors"`
	Violations int64 `json:"violations"`
	// Retries counts operations retried after a no_leader answer.
	Retries    int64    `json:"retries,omitempty"`
	ErrSamples []string `json:"error_samples,omitempty"`
	// Metrics are the workload's own figures (keepalive, scale).
	Metrics []Metric `json:"metrics,omitempty"`
	// Notes are remarks for people.
	Notes []string `json:"notes,omitempty"`
	// Unsafe, when set, says why the system is not a safe lock service (Redis); every
	// table marks its rows UNSAFE.
	Unsafe string `json:"unsafe,omitempty"`
	// Unsupported, when set, says why the system could not run the workload (it has no
	// such primitive); the result holds no figures, and PrintSystems shows "n/a".
	Unsupported string `json:"unsupported,omitempty"`
}

// Label is the system's name as tables show it: marked UNSAFE when it is.
func (r *Result) Label() string {
	if r.Unsafe != "" {
		return r.System + " UNSAFE"
	}
	return r.System
}

// Metric is a named figure, optionally checked against a target.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Target states the goal ("<= 10"), Met whether the value reaches it.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

// Check sets Target and Met for a goal of "at most" (atMost true) or "at least" limit.
func (m Metric) Check(atMost bool, limit float64) Metric {
	met := m.Value >= limit
	m.Target = fmt.Sprintf(">= %g", limit)
	if atMost {
		met = m.Value <= limit
		m.Target = fmt.Sprintf("<= %g", limit)
	}
	m.Met = &met
	return m
}

// SetCPU fills the rates and CPU figures from the operation count and a CPU reading.
func (r *Result) SetCPU(use CPUUse) {
	r.Seconds = use.Wall.Seconds()
	r.setRates(use)
}

func (r *Result) setRates(use CPUUse) {
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	r.ClientCores = use.Cores(use.Self)
	if use.Measured {
		r.OtherCores = use.Cores(use.Others())
	}
	r.CPUMeasured = use.Measured
	if use.Measured {
		r.ServerCores = use.Cores(use.Servers)
		if r.Ops > 0 {
			r.ServerCPUPerOp = ms(use.Servers) / float64(r.Ops)
		}
	}
}

// Spread returns the difference between the most and the fewest acquisitions of any
// client, and false when there is no per-client count.
func (r *Result) Spread() (int64, bool) {
	if len(r.PerClient) == 0 {
		return 0, false
	}
	return slices.Max(r.PerClient) - slices.Min(r.PerClient), true
}

// WriteJSON writes results as an indented JSON array.
func WriteJSON(w io.Writer, results []*Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// Emit prints a tool's results: as JSON on stdout when asJSON is set, else as a table under
// a line naming the tool, the machine and the time; and, when jsonOut is not empty, also
// as JSON to that file (what scripts/bench.sh reads back).
func Emit(stdout io.Writer, tool string, results []*Result, asJSON bool, jsonOut string) error {
	if asJSON {
		if err := WriteJSON(stdout, results); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s, %s, %s\n\n", tool, Machine(), Stamp())
		PrintTable(stdout, results)
	}
	if jsonOut == "" {
		return nil
	}
	f, err := os.Create(jsonOut)
	if err != nil {
		return err
	}
	if err := WriteJSON(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ExitViolations is the exit status of a benchmark tool whose run saw a safety violation.
const ExitViolations = 3

// Violated returns an error naming the first workload that saw a safety violation, or
// nil; a tool exits with ExitViolations on it.
func Violated(results []*Result) error {
	for _, r := range results {
		if r.Violations > 0 {
			return fmt.Errorf("%s: %d safety violation(s)", r.Workload, r.Violations)
		}
	}
	return nil
}

// ReadJSON reads a file written by WriteJSON.
func ReadJSON(path string) ([]*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*Result
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("benchkit: %s: %w", path, err)
	}
	return out, nil
}

func f1(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func cpuCell(r *Result, v float64) string {
	if !r.CPUMeasured {
		return "-"
	}
	return f1(v)
}

// PrintTable writes results as a table, then each result's details.
func PrintTable(w io.Writer, results []*Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tworkload\tclients\top\tops/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tsrv CPU ms/op\tsrv cores\tclient cores\tother cores\terrors\tviolations\t")
	for _, r := range results {
		if r.Unsupported != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\tn/a\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", r.Label(), r.Workload, r.Clients, r.Op)
			continue
		}
		l := r.Latency
		if l == nil {
			l = &Latency{}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n",
			r.Label(), r.Workload, r.Clients, r.Op, f1(r.OpsPerSec), f1(l.P50), f1(l.P90), f1(l.P99), f1(l.Max),
			cpuCell(r, r.ServerCPUPerOp), cpuCell(r, r.ServerCores), f1(r.ClientCores), cpuCell(r, r.OtherCores), r.Errors, r.Violations)
	}
	tw.Flush()
	for _, r := range results {
		var lines []string
		if r.Gap != nil {
			lines = append(lines, fmt.Sprintf("gap (release called -> next acquire returned): p50 %s ms, p90 %s, p99 %s, max %s (%d handovers)",
				f1(r.Gap.P50), f1(r.Gap.P90), f1(r.Gap.P99), f1(r.Gap.Max), r.Gap.Count))
		}
		if s, ok := r.Spread(); ok {
			lines = append(lines, fmt.Sprintf("FIFO fairness: acquisitions per client %v (spread %d)", r.PerClient, s))
		}
		for _, m := range r.Metrics {
			line := fmt.Sprintf("%s: %s %s", m.Name, f1(m.Value), m.Unit)
			if m.Met != nil {
				verdict := "met"
				if !*m.Met {
					verdict = "NOT met"
				}
				line += fmt.Sprintf("   (target %s: %s)", m.Target, verdict)
			}
			lines = append(lines, line)
		}
		if r.Retries > 0 {
			lines = append(lines, fmt.Sprintf("retries: %d operations were retried after a no_leader answer (an election, or the leader could not queue the proposal within its apply timeout)", r.Retries))
		}
		if r.Target != "" {
			lines = append(lines, "traffic: "+r.Target)
		}
		lines = append(lines, r.Notes...)
		if r.Unsafe != "" {
			lines = append(lines, "UNSAFE: "+r.Unsafe)
		}
		if r.Unsupported != "" {
			lines = append(lines, "n/a: "+r.Unsupported)
		}
		for _, e := range r.ErrSamples {
			lines = append(lines, "error: "+e)
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s %s:\n", r.Label(), r.Workload)
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
}

// find returns the result of workload in results, or nil.
func find(results []*Result, workload string) *Result {
	for _, r := range results {
		if r.Workload == workload {
			return r
		}
	}
	return nil
}

// Targets are the ratios to the other system (etcd) that one raftlock configuration is
// held to in Compare. A zero field is not checked.
type Targets struct {
	// Name says where the targets come from, for the table's heading.
	Name string
	// UncontendedP50 is the highest uncontended cycle p50 ratio (a/b) that meets the target.
	UncontendedP50 float64
	// Parallel is the lowest parallel throughput ratio.
	Parallel float64
	// Contended is the lowest contended handover rate ratio.
	Contended float64
	// GapP99 is the highest contended handover gap p99, in milliseconds.
	GapP99 float64
}

// TargetsFor returns the targets for a raftlock log store (docs/PERFORMANCE.md, "Rounds"):
// round two's (2026-12-01), which hold the default (boltdb) and the segment log (wal) to
// different ratios, since wal exists to be faster. "round1", and any other name, gets
// round one's (2026-11-29), for either store; "issue5", the name round one had before, is
// still accepted.
func TargetsFor(store string) Targets {
	switch store {
	case "boltdb":
		return Targets{Name: "round two, boltdb", UncontendedP50: 1.0, Parallel: 2, Contended: 5, GapP99: 5}
	case "wal":
		return Targets{Name: "round two, wal", UncontendedP50: 0.6, Parallel: 4, Contended: 10, GapP99: 2}
	}
	return Targets{Name: "round one", UncontendedP50: 0.5, Parallel: 4, Contended: 10, GapP99: 2}
}

// Compare writes the side-by-side table of two systems' lock workloads: each figure,
// the ratio a/b, and the target t holds it to. It returns how many targets were checked
// and how many were met.
func Compare(w io.Writer, a, b []*Result, t Targets) (checked, met int) {
	an, bn := "a", "b"
	if len(a) > 0 {
		an = a[0].System
	}
	if len(b) > 0 {
		bn = b[0].System
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\t%s\t%s\t%s/%s\ttarget (%s)\tverdict\n", an, bn, an, bn, t.Name)
	verdict := func(ok bool) string {
		checked++
		if ok {
			met++
			return "met"
		}
		return "NOT met"
	}
	row := func(name string, av, bv float64, target string, ok *bool) {
		ratio := "-"
		if bv != 0 {
			ratio = fmt.Sprintf("%.2fx", av/bv)
		}
		v := ""
		if ok != nil {
			v = verdict(*ok)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, f1(av), f1(bv), ratio, target, v)
	}
	// check returns nil (no verdict) for a target that is not set.
	check := func(limit float64, ok bool) *bool {
		if limit == 0 {
			return nil
		}
		return &ok
	}
	ptr := func(v bool) *bool { return &v }
	lat := func(r *Result) *Latency {
		if r == nil || r.Latency == nil {
			return &Latency{}
		}
		return r.Latency
	}
	for _, wl := range []string{Uncontended, Parallel, Contended} {
		ra, rb := find(a, wl), find(b, wl)
		if ra == nil || rb == nil {
			continue
		}
		label := fmt.Sprintf("%s (%d)", wl, ra.Clients)
		if ra.Clients != rb.Clients {
			label = fmt.Sprintf("%s (%d vs %d clients)", wl, ra.Clients, rb.Clients)
		}
		switch wl {
		case Uncontended:
			row(label+" cycles/s", ra.OpsPerSec, rb.OpsPerSec, "", nil)
			la, lb := lat(ra), lat(rb)
			row("  cycle p50 ms", la.P50, lb.P50, fmt.Sprintf("ratio <= %g", t.UncontendedP50),
				check(t.UncontendedP50, lb.P50 > 0 && la.P50/lb.P50 <= t.UncontendedP50))
			row("  cycle p99 ms", la.P99, lb.P99, "", nil)
		case Parallel:
			row(label+" cycles/s", ra.OpsPerSec, rb.OpsPerSec, fmt.Sprintf("ratio >= %g", t.Parallel),
				check(t.Parallel, rb.OpsPerSec > 0 && ra.OpsPerSec/rb.OpsPerSec >= t.Parallel))
			la, lb := lat(ra), lat(rb)
			row("  cycle p50 ms", la.P50, lb.P50, "", nil)
			row("  cycle p99 ms", la.P99, lb.P99, "", nil)
		case Contended:
			row(label+" handovers/s", ra.OpsPerSec, rb.OpsPerSec, fmt.Sprintf("ratio >= %g", t.Contended),
				check(t.Contended, rb.OpsPerSec > 0 && ra.OpsPerSec/rb.OpsPerSec >= t.Contended))
			ga, gb := ra.Gap, rb.Gap
			if ga == nil {
				ga = &Latency{}
			}
			if gb == nil {
				gb = &Latency{}
			}
			row("  gap p50 ms", ga.P50, gb.P50, "", nil)
			row("  gap p99 ms", ga.P99, gb.P99, fmt.Sprintf("<= %g ms", t.GapP99), check(t.GapP99, ra.Gap != nil && ga.P99 <= t.GapP99))
			sa, _ := ra.Spread()
			sb, _ := rb.Spread()
			row("  fairness spread (acquisitions)", float64(sa), float64(sb), "<= 1", ptr(len(ra.PerClient) > 0 && sa <= 1))
		}
		if ra.CPUMeasured && rb.CPUMeasured {
			row("  server CPU ms per "+ra.Op, ra.ServerCPUPerOp, rb.ServerCPUPerOp, "", nil)
		}
		if ra.CPUMeasured && rb.CPUMeasured {
			row("  other load on the machine, cores", ra.OtherCores, rb.OtherCores, "", nil)
		}
		row("  errors + violations", float64(ra.Errors+ra.Violations), float64(rb.Errors+rb.Violations), "0", ptr(ra.Errors+ra.Violations == 0))
	}
	tw.Flush()
	return checked, met
}

// Machine describes the machine the benchmark runs on: cores and CPU model.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s)", runtime.NumCPU(), model)
}

// Stamp is a timestamp for reports.
func Stamp() string { return time.Now().UTC().Format("2006-01-02 15:04 UTC") }
