package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func statusCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "status",
		Usage:     "show one lock, or the held and awaited locks",
		ArgsUsage: "[NAME]",
		Description: `With NAME, shows that lock: whether it is held, its fencing token, owner, number of
waiters and modify index; for a lock held shared, every holder's token and owner. Without NAME, lists the held or awaited locks whose names
start with --prefix (all of them by default).

Reads are linearizable (answered by the leader) unless --stale lets any node answer from
its own, possibly lagging, state.`,
		Flags: clientFlags(
			&cli.StringFlag{Name: "prefix", Usage: "list the locks whose names start with this"},
			&cli.BoolFlag{Name: "stale", Usage: "let any node answer from its own state"},
		),
	}, runStatus)
}

func runStatus(c *cli.Context, a parsedArgs) error {
	if len(a.args) > 1 || a.dash {
		return usageErrorf(c, "status takes at most one lock NAME")
	}
	if len(a.args) == 1 {
		return runStatusOne(c, a.args[0])
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.LockList, error) {
		var list []api.LockStatus
		var err error
		if c.Bool("stale") {
			list, err = cl.ListStale(ctx, c.String("prefix"))
		} else {
			list, err = cl.List(ctx, c.String("prefix"))
		}
		if list == nil {
			list = []api.LockStatus{}
		}
		return api.LockList{Locks: list}, err
	}, func(w io.Writer, l api.LockList) error {
		return writeRows(w, "no held or awaited locks", "NAME\tHELD\tTOKEN\tOWNER\tWAITERS\tMODIFY INDEX", l.Locks, func(w io.Writer, st api.LockStatus) {
			fmt.Fprintf(w, "%s\t%t\t%d\t%s\t%d\t%d\n", st.Name, st.Held, st.Token, st.Owner, st.Waiters, st.ModifyIndex)
		})
	})
}

// runStatusOne is `status NAME`.
func runStatusOne(c *cli.Context, name string) error {
	if c.IsSet("prefix") {
		return usageErrorf(c, "give either NAME or --prefix, not both")
	}
	if err := checkName(c, name); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.LockStatus, error) {
		return cl.Status(ctx, name, client.StatusOptions{Stale: c.Bool("stale")})
	}, func(w io.Writer, st api.LockStatus) error {
		return table(w, func(w io.Writer) {
			fmt.Fprintf(w, "lock\t%s\n", st.Name)
			fmt.Fprintf(w, "held\t%t\n", st.Held)
			if st.Held {
				fmt.Fprintf(w, "token\t%d\n", st.Token)
				fmt.Fprintf(w, "owner\t%s\n", st.Owner)
				if st.Mode == api.ModeShared {
					fmt.Fprintf(w, "mode\tshared, %d holders\n", st.HolderCount)
					for _, h := range st.Holders {
						fmt.Fprintf(w, "  token %d\t%s\n", h.Token, h.Owner)
					}
				}
			}
			fmt.Fprintf(w, "waiters\t%d\n", st.Waiters)
			fmt.Fprintf(w, "modify index\t%d\n", st.ModifyIndex)
		})
	})
}
