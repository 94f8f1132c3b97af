package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/raftlock/raftlock/internal/budget"
)

// us formats d in microseconds: one decimal below 10 µs, none above.
func us(d time.Duration) string {
	v := float64(d) / float64(time.Microsecond)
	if v < 10 && v > -10 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func printFloors(w io.Writer, f *floors) {
	fmt.Fprintln(w, "floors on this machine (µs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "floor\tp50\tp99\tsamples\t")
	row := func(name string, s budget.Summary) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t\n", name, us(s.P50), us(s.P99), s.N)
	}
	row("pwrite 4 KiB in place + fdatasync, data dir's file system", f.Fsync)
	row("append 128 B (file grows) + fdatasync", f.Append)
	row("loopback TCP round trip, 64 bytes", f.RTT)
	row("goroutine hand-off (channel)", f.Handoff)
	row("JSON decode, acquire request", f.Decode)
	row("JSON encode, grant answer", f.Encode)
	row("state machine apply, one entry", f.Apply)
	tw.Flush()
}

// column is one target's samples: every stage, the total and the client's round trip.
type column struct {
	n      int
	stages [budget.NumStages][]time.Duration
	total  []time.Duration
	client []time.Duration
	out    []time.Duration // client round trip minus the entry node's total
	parts  [9][]time.Duration
}

// parts name the parts of the forward and answer stages and the follower's path (which runs
// beside the leader's write), in the order of column.parts, each with what it belongs to;
// forwardOnly parts are empty for requests sent to the leader.
var parts = [9]struct {
	name, what  string
	forwardOnly bool
}{
	{"  forward: out to the leader's handler", ofStage, true},
	{"  forward: leader reads + decodes", ofStage, true},
	{"  forward: back + relay", ofStage, true},
	{"  follower: leader write start to send", besideWrite, false},
	{"  follower: send to its write", besideWrite, false},
	{"  follower: its log write", besideWrite, false},
	{"  follower: its write end to ack", besideWrite, false},
	{"  answer: apply end to proposer woken", ofStage, false},
	{"  answer: result to JSON written", ofStage, false},
}

const (
	ofStage     = "part of the stage above"
	besideWrite = "beside the leader's write; what outlasts it is the quorum wait"
)

func printTable(w io.Writer, r *result, f *floors) {
	var cols [2]column // via the leader, via a follower
	for _, b := range r.budgets {
		c := &cols[0]
		if b.Forwarded {
			c = &cols[1]
		}
		c.n++
		for s := budget.Stage(0); s < budget.NumStages; s++ {
			c.stages[s] = append(c.stages[s], b.Stages[s])
		}
		c.total = append(c.total, b.Total)
		for i, d := range [9]time.Duration{b.ForwardOut, b.LeaderIn, b.ForwardBack, b.FollowerSend, b.FollowerOut, b.FollowerWrite, b.FollowerBack, b.AnswerWake, b.AnswerWrite} {
			c.parts[i] = append(c.parts[i], d)
		}
		if rtt, ok := r.client[b.Tag]; ok {
			c.client = append(c.client, rtt)
			c.out = append(c.out, rtt-b.Total)
		}
	}
	fmt.Fprintf(w, "log store %s: %d commits through the leader, %d through a follower, in %.2f s; load average %s before, %s after\n",
		r.store, cols[0].n, cols[1].n, r.duration.Seconds(), r.loadavg[0], r.loadavg[1])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage (µs)\tfloor\tleader p50\tp99\tgap\tfollower p50\tp99\tgap\tfloor is\t")
	var sum [2]time.Duration
	for s := budget.Stage(0); s < budget.NumStages; s++ {
		floor, what := f.floorOf(s)
		fmt.Fprintf(tw, "%s\t%s\t", s, us(floor))
		for i := range cols {
			if s == budget.Forward && i == 0 {
				fmt.Fprint(tw, "-\t-\t-\t")
				continue
			}
			st := budget.Summarize(cols[i].stages[s])
			sum[i] += st.P50
			fmt.Fprintf(tw, "%s\t%s\t%s\t", us(st.P50), us(st.P99), us(st.P50-floor))
		}
		fmt.Fprintf(tw, "%s\t\n", what)
	}
	fmt.Fprintf(tw, "sum of the p50s\t\t%s\t\t\t%s\t\t\t\t\n", us(sum[0]), us(sum[1]))
	line := func(name string, get func(c *column) []time.Duration, what string) {
		fmt.Fprintf(tw, "%s\t\t", name)
		for i := range cols {
			st := budget.Summarize(get(&cols[i]))
			if st.N == 0 {
				fmt.Fprint(tw, "-\t-\t\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t\t", us(st.P50), us(st.P99))
		}
		fmt.Fprintf(tw, "%s\t\n", what)
	}
	for i, p := range parts {
		line(p.name, func(c *column) []time.Duration {
			if p.forwardOnly && c == &cols[0] {
				return nil
			}
			return c.parts[i]
		}, p.what)
	}
	line("entry node total", func(c *column) []time.Duration { return c.total }, "handler start to answer written")
	line("client round trip", func(c *column) []time.Duration { return c.client }, "as the client saw it")
	line("outside the handler", func(c *column) []time.Duration { return c.out }, "client, kernel, net/http: round trip minus total")
	tw.Flush()
	fmt.Fprintln(w, strings.Repeat("-", 20))
}
