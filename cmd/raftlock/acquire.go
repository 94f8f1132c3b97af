package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func acquireCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "acquire",
		Usage:     "take a lock once and print its fencing token",
		ArgsUsage: "NAME",
		Description: `Takes lock NAME and prints the grant: name, fencing token and lease ID.

Without --lease, a new lease of --ttl is created with the grant. Nothing keeps it alive:
it expires after --ttl unless renewed with 'raftlock lease keepalive ID', and the lock is
then released. Release it early with 'raftlock release NAME --lease ID --token N'. To run
a command under a lock that is kept alive for as long as it runs, use 'raftlock lock'.

With --wait, a held lock is waited for in its FIFO queue on the server. With --shared the
lock is taken as a reader, beside other shared holders.
` + exitCodesHelp,
		Flags: clientFlags(
			&cli.DurationFlag{Name: "ttl", Usage: "TTL of the lease created when --lease is not given (500ms to 24h)", Value: 10 * time.Second},
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait when the lock is held; 0 fails at once (at most 5m)"},
			&cli.StringFlag{Name: "owner", Usage: "label shown in the lock's status (a host, a job ID)"},
			&cli.StringFlag{Name: "lease", Usage: "hold the lock with this existing lease ID"},
			&cli.BoolFlag{Name: "shared", Usage: "take the lock shared (a reader): any number of shared holders at once, no exclusive holder beside them"},
		),
	}, runAcquire)
}

func runAcquire(c *cli.Context, a parsedArgs) error {
	name, err := a.oneName(c, "acquire takes exactly one lock NAME")
	if err != nil {
		return err
	}
	opts := client.AcquireOptions{LeaseID: leaseFlag(c), Wait: c.Duration("wait"), Owner: c.String("owner")}
	if c.Bool("shared") {
		opts.Mode = api.ModeShared
	}
	if opts.LeaseID == "" {
		opts.TTL = c.Duration("ttl")
	} else if c.IsSet("ttl") {
		return usageErrorf(c, "--ttl applies only to a new lease; it cannot be combined with --lease")
	}
	g, err := call(c, opts.Wait, func(ctx context.Context, cl *client.Client) (api.Grant, error) {
		g, err := cl.Acquire(ctx, name, opts)
		if errors.Is(err, client.ErrLockHeld) || errors.Is(err, client.ErrWaitTimeout) || errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrNoLeader) {
			return g, cli.Exit("raftlock: "+err.Error(), exitNotAcquired)
		}
		return g, err
	})
	if err != nil {
		return err
	}
	return answer(c, g, func(w io.Writer) error {
		err := table(w, func(w io.Writer) {
			fmt.Fprintf(w, "lock\t%s\n", g.Name)
			fmt.Fprintf(w, "token\t%d\n", g.Token)
			fmt.Fprintf(w, "lease\t%s\n", g.LeaseID)
			fmt.Fprintf(w, "ttl\t%s\n", fmtMs(g.TTLMs))
			if g.Owner != "" {
				fmt.Fprintf(w, "owner\t%s\n", g.Owner)
			}
		})
		if err == nil && opts.LeaseID == "" {
			fmt.Fprintf(c.App.ErrWriter, "note: the lease expires in %s unless kept alive (raftlock lease keepalive %s);\n"+
				"      release with: raftlock release %q --lease %s --token %d\n", fmtMs(g.TTLMs), g.LeaseID, g.Name, g.LeaseID, g.Token)
		}
		return err
	})
}
