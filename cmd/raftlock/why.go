package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func whyCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "why",
		Usage:     "explain who held a lock and why they lost it",
		ArgsUsage: "NAME",
		Description: `Prints the lock's recent history (GET /v1/history/NAME) as sentences: each grant with
its token and owner, how long it was held, and how it ended (released, lease expired,
lease revoked, held for its maximum), whether it was handed to a waiter in the same
commit or kept from everyone by a lock delay, waits that ended without a grant, and
waiting requests refused because they would have closed a deadlock.

Times are cluster time, the cluster's own clock: milliseconds since the cluster began,
moving only while it has a leader. They are printed as t+H:MM:SS.mmm since that start,
with how long ago that was on the same clock. They do not map to wall-clock times.

The cluster keeps the last 32 events of each lock (once every node runs protocol
version 2), for the 100,000 most recently active locks.`,
		Flags: clientFlags(
			&cli.BoolFlag{Name: "stale", Usage: "let any node answer from its own state"},
		),
	}, runWhy)
}

func runWhy(c *cli.Context, a parsedArgs) error {
	name, err := a.oneName(c, "why takes one lock NAME")
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.History, error) {
		return cl.History(ctx, name, c.Bool("stale"))
	}, func(w io.Writer, h api.History) error {
		writeWhy(w, h)
		return nil
	})
}

// clusterTime formats a cluster time (ms since the cluster's clock began) as t+H:MM:SS.mmm.
func clusterTime(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	s := d / time.Second
	d -= s * time.Second
	return fmt.Sprintf("t+%d:%02d:%02d.%03d", h, m, s, d/time.Millisecond)
}

// seconds formats a span of milliseconds as people read it: "4.2 s", "350 ms", "3m12s".
func seconds(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60_000:
		return strings.Replace(fmt.Sprintf("%.1f s", float64(ms)/1000), ".0 s", " s", 1)
	}
	return (time.Duration(ms/1000) * time.Second).String()
}

// who names an owner, or the lease's fingerprint when the grant had no owner label.
func who(e api.HistoryEvent) string {
	if e.Owner != "" {
		return e.Owner
	}
	return "lease " + e.Lease
}

// writeWhy prints a lock's history as sentences, oldest first, one grant or wait per
// line, and the current holder last.
func writeWhy(w io.Writer, h api.History) {
	if len(h.Events) == 0 {
		fmt.Fprintf(w, "%s: no recorded history (never taken, not taken since the cluster began keeping histories, or forgotten among the least recently active locks)\n", h.Name)
		return
	}
	fmt.Fprintf(w, "%s: history at %s cluster time (times are since the cluster's clock began)\n", h.Name, clusterTime(h.ClusterTimeMs))
	granted := map[uint64]api.HistoryEvent{} // by token
	open := map[uint64]bool{}                // grants not ended yet
	evs := h.Events
	for i := 0; i < len(evs); i++ {
		e := evs[i]
		switch e.Kind {
		case "granted":
			granted[e.Token] = e
			open[e.Token] = true
			how := "the lock was free"
			if e.FromQueue {
				how = "from the queue"
				if e.WaitedMs > 0 {
					how += ", after waiting " + seconds(e.WaitedMs)
				}
			}
			fmt.Fprintf(w, "%s  token %d granted to %s (%s)\n", clusterTime(e.TimeMs), e.Token, who(e), how)
		case "released", "expired", "revoked", "max_hold_ended":
			delete(open, e.Token)
			var b strings.Builder
			fmt.Fprintf(&b, "%s  token %d held by %s", clusterTime(e.TimeMs), e.Token, who(e))
			if g, ok := granted[e.Token]; ok {
				fmt.Fprintf(&b, " for %s", seconds(e.TimeMs-g.TimeMs))
			}
			switch e.Kind {
			case "released":
				b.WriteString("; released by its holder")
			case "expired":
				fmt.Fprintf(&b, "; lease expired at %s cluster time, %s after its last keepalive", clusterTime(e.DeadlineMs), seconds(e.DeadlineMs-e.RenewedMs))
			case "revoked":
				b.WriteString("; lease revoked")
			case "max_hold_ended":
				b.WriteString("; held for its maximum (max_hold_ms): the grant ended though its lease was kept alive, and its holder's release now answers not_holder")
			}
			// A lock delay starts in the same commit as the end of a grant whose lease ended.
			if i+1 < len(evs) && evs[i+1].Kind == "lock_delay" && evs[i+1].Index == e.Index {
				d := evs[i+1]
				fmt.Fprintf(&b, "; lock delay: nobody is granted the lock until %s cluster time (%s later), waiters stay queued", clusterTime(d.DeadlineMs), seconds(d.DeadlineMs-d.TimeMs))
				fmt.Fprintln(w, b.String())
				i++
				continue
			}
			// A handover is the next holder's grant at the same index.
			if i+1 < len(evs) && evs[i+1].Kind == "granted" && evs[i+1].Index == e.Index {
				n := evs[i+1]
				granted[n.Token] = n
				open[n.Token] = true
				fmt.Fprintf(&b, "; handed to %s with token %d in the same commit", who(n), n.Token)
				if n.WaitedMs > 0 {
					fmt.Fprintf(&b, " (it had waited %s)", seconds(n.WaitedMs))
				}
				i++
			} else {
				b.WriteString("; the lock became free")
			}
			fmt.Fprintln(w, b.String())
		case "lock_delay":
			fmt.Fprintf(w, "%s  lock delay: nobody is granted the lock until %s cluster time\n", clusterTime(e.TimeMs), clusterTime(e.DeadlineMs))
		case "lock_delay_ended":
			fmt.Fprintf(w, "%s  the lock delay ended; the lock goes to the head of its queue, if anyone waits\n", clusterTime(e.TimeMs))
		case "deadlock_refused":
			fmt.Fprintf(w, "%s  %s asked to wait, refused at once: waiting would have closed a deadlock (%s); nothing was queued\n", clusterTime(e.TimeMs), who(e), e.Detail)
		case "wait_timed_out":
			fmt.Fprintf(w, "%s  %s stopped waiting: its wait ran out%s\n", clusterTime(e.TimeMs), who(e), waited(e))
		case "wait_abandoned":
			fmt.Fprintf(w, "%s  %s stopped waiting: its client gave up%s\n", clusterTime(e.TimeMs), who(e), waited(e))
		case "wait_lease_ended":
			fmt.Fprintf(w, "%s  %s stopped waiting: its lease expired or was revoked%s\n", clusterTime(e.TimeMs), who(e), waited(e))
		default:
			fmt.Fprintf(w, "%s  %s (index %d)\n", clusterTime(e.TimeMs), e.Kind, e.Index)
		}
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if e := evs[i]; e.Kind == "granted" && open[e.Token] {
			fmt.Fprintf(w, "now: token %d held by %s for %s so far (since %s)\n", e.Token, who(e), seconds(h.ClusterTimeMs-e.TimeMs), clusterTime(e.TimeMs))
			return
		}
	}
	fmt.Fprintln(w, "now: free (or held by a grant older than the recorded history)")
}

func waited(e api.HistoryEvent) string {
	if e.WaitedMs > 0 {
		return " after " + seconds(e.WaitedMs)
	}
	return ""
}
