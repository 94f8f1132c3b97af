package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// holdHelp is the part of the help of `semaphore` and `elect` that `lock --help` says at
// length: the same process handling, signals, grace and exit codes.
const holdHelp = `
Everything else is as for 'raftlock lock' (see its --help): the command runs in its own
process group with RAFTLOCK_TOKEN in its environment (the lease ID only with
--export-lease), the lease is kept alive while it runs, a lost lease stops the command's
group (SIGTERM, SIGKILL after --grace) and exits 76, what the command leaves running in
its group is stopped before the grant is given back, signals are passed on, and --json
writes one event a line to stderr.
`

func semaphoreCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "semaphore",
		Usage:     "run a command while holding one permit of a counting semaphore",
		ArgsUsage: "NAME --limit N [flags] -- COMMAND [ARGS...]",
		Description: `Takes one of the --limit permits of semaphore NAME (waiting up to --wait in its FIFO
queue), runs COMMAND with RAFTLOCK_SEMAPHORE (the name), RAFTLOCK_LIMIT and RAFTLOCK_TOKEN
(the permit's fencing token) in its environment, and releases the permit when it ends.
At most N commands hold a permit of NAME at once, across every host.

The first acquirer of a semaphore that is not in use sets its limit; while any permit is
held or awaited, a request with another --limit is refused (exit 75, limit_conflict).
` + holdHelp + `
Example:
   raftlock semaphore exports/slots --limit 4 --wait 10m -- ./export.sh
` + exitCodesHelp,
		Flags: holdFlags("semaphore", 30*time.Second, "",
			&cli.IntFlag{Name: "limit", Usage: "the semaphore's number of permits (1 to 10000); required"},
		),
	}, runSemaphore)
}

func runSemaphore(c *cli.Context, a parsedArgs) error {
	limit := c.Int("limit")
	if e := api.ValidateSemaphoreLimit(int64(limit)); e != nil {
		return usageErrorf(c, "--limit: %s", e.Message)
	}
	return runHold(c, a, "semaphore", func(c *cli.Context, lease *client.Lease, name, owner string) holding {
		s := client.NewSemaphore(lease, name, limit, client.WithOwner(owner))
		return holding{
			what: "semaphore",
			take: func(ctx context.Context, wait bool) error {
				if wait {
					return s.Acquire(ctx)
				}
				return s.TryAcquire(ctx)
			},
			give: s.Release, token: s.Token, lost: s.Lost,
			env: []string{"RAFTLOCK_SEMAPHORE=" + name, "RAFTLOCK_LIMIT=" + strconv.Itoa(limit)},
		}
	})
}

// forever is elect's default --wait: a candidate waits until it leads or is interrupted.
const forever = 100 * 365 * 24 * time.Hour

func electCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "elect",
		Usage:     "run a command only while leading an election",
		ArgsUsage: "NAME --value V [flags] -- COMMAND [ARGS...]",
		Description: `Campaigns in election NAME with --value (waiting as a candidate, in FIFO order, for up
to --wait: by default until elected or interrupted), runs COMMAND once elected with
RAFTLOCK_ELECTION (the name), RAFTLOCK_VALUE and RAFTLOCK_TOKEN (the leadership's fencing
token) in its environment, and resigns when it ends, which elects the next candidate in
the same commit. Others see who leads and its value with 'raftlock leader NAME'.

COMMAND runs only while leader: when the leadership is lost (the lease expired or was
revoked, or no keepalive was answered in time), its process group is stopped and
raftlock exits 76. To keep a service led at all times, run 'raftlock elect' under a
supervisor that restarts it: it then campaigns again.
` + holdHelp + `
Example:
   raftlock elect services/scheduler --value "$(hostname):9000" -- ./scheduler
` + exitCodesHelp,
		Flags: holdFlags("election", forever, "until elected",
			&cli.StringFlag{Name: "value", Usage: "the value to publish while leading (an address; at most 4096 bytes)"},
		),
	}, runElect)
}

func runElect(c *cli.Context, a parsedArgs) error {
	value := c.String("value")
	if e := api.ValidateElectionValue(value); e != nil {
		return usageErrorf(c, "--value: %s", e.Message)
	}
	return runHold(c, a, "election", func(c *cli.Context, lease *client.Lease, name, owner string) holding {
		e := client.NewElection(lease, name, client.WithOwner(owner))
		return holding{
			what: "election",
			take: func(ctx context.Context, wait bool) error {
				if wait {
					return e.Campaign(ctx, value)
				}
				return e.TryCampaign(ctx, value)
			},
			give: e.Resign, token: e.Token, lost: e.Lost,
			env: []string{"RAFTLOCK_ELECTION=" + name, "RAFTLOCK_VALUE=" + value},
		}
	})
}

func semaphoreStatusCommand() *cli.Command {
	return statusCommandOf("semaphore-status", "show a semaphore: its limit, the permits held and the waiters", "semaphore",
		(*client.Client).SemaphoreStatus, func(w io.Writer, st api.SemaphoreStatus) {
			fmt.Fprintf(w, "semaphore\t%s\n", st.Name)
			fmt.Fprintf(w, "limit\t%d\n", st.Limit)
			fmt.Fprintf(w, "permits held\t%d\n", len(st.Permits))
			for _, p := range st.Permits {
				fmt.Fprintf(w, "  token %d\t%s\n", p.Token, p.Owner)
			}
			fmt.Fprintf(w, "waiters\t%d\n", st.Waiters)
			fmt.Fprintf(w, "modify index\t%d\n", st.ModifyIndex)
		})
}

func leaderCommand() *cli.Command {
	return statusCommandOf("leader", "show who leads an election and the value it published", "election",
		(*client.Client).ElectionStatus, func(w io.Writer, st api.ElectionStatus) {
			fmt.Fprintf(w, "election\t%s\n", st.Name)
			fmt.Fprintf(w, "elected\t%t\n", st.Elected)
			if st.Elected {
				fmt.Fprintf(w, "owner\t%s\n", st.Owner)
				fmt.Fprintf(w, "value\t%s\n", st.Value)
				fmt.Fprintf(w, "token\t%d\n", st.Token)
			}
			fmt.Fprintf(w, "candidates\t%d\n", st.Candidates)
			fmt.Fprintf(w, "modify index\t%d\n", st.ModifyIndex)
		})
}

// statusCommandOf is a one-name status command: read, a client method, reads the status
// of the primitive of kind; it is printed as JSON or, for people, as a table by show.
func statusCommandOf[T any](name, usage, kind string, read func(*client.Client, context.Context, string, client.StatusOptions) (T, error), show func(w io.Writer, st T)) *cli.Command {
	return clientCommand(&cli.Command{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "NAME",
		Description: "Reads are linearizable (answered by the leader) unless --stale lets any node answer from\n" +
			"its own, possibly lagging, state.",
		Flags: clientFlags(&cli.BoolFlag{Name: "stale", Usage: "let any node answer from its own state"}),
	}, func(c *cli.Context, a parsedArgs) error {
		name, err := a.one(c, fmt.Sprintf("%s takes exactly one %s NAME", c.Command.Name, kind))
		if err != nil {
			return err
		}
		if e := api.ValidateNameOf(kind, name); e != nil {
			return usageErrorf(c, "%s", e.Message)
		}
		return request(c, func(ctx context.Context, cl *client.Client) (T, error) {
			return read(cl, ctx, name, client.StatusOptions{Stale: c.Bool("stale")})
		}, func(w io.Writer, st T) error {
			return table(w, func(w io.Writer) { show(w, st) })
		})
	})
}
