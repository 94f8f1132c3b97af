package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func leaseCommand() *cli.Command {
	return &cli.Command{
		Name:  "lease",
		Usage: "create, renew, show or revoke a lease",
		Description: `A lease holds locks for as long as it is renewed: it expires TTL after its last
keepalive (on the cluster's clock), and its locks are then released. The lease ID is a
secret: whoever knows it can renew the lease, release its locks and revoke it.`,
		Subcommands: []*cli.Command{
			clientCommand(&cli.Command{
				Name:  "create",
				Usage: "create a lease and print its ID",
				Flags: clientFlags(&cli.DurationFlag{Name: "ttl", Usage: "time to live (500ms to 24h)", Value: 10 * time.Second}),
			}, runLeaseCreate),
			clientCommand(&cli.Command{
				Name:      "keepalive",
				Usage:     "renew a lease once: it expires TTL from now",
				ArgsUsage: "ID",
				Flags:     clientFlags(),
			}, runLeaseKeepAlive),
			clientCommand(&cli.Command{
				Name:      "get",
				Usage:     "show a lease's TTL and the locks it holds",
				ArgsUsage: "ID",
				Flags:     clientFlags(),
			}, runLeaseGet),
			clientCommand(&cli.Command{
				Name:      "revoke",
				Usage:     "delete a lease and release its locks",
				ArgsUsage: "ID",
				Flags:     clientFlags(),
			}, runLeaseRevoke),
		},
	}
}

func runLeaseCreate(c *cli.Context, a parsedArgs) error {
	if err := a.none(c, "lease create takes no arguments"); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.Lease, error) {
		return cl.CreateLease(ctx, c.Duration("ttl"))
	}, writeLease)
}

// envLeaseID passes a lease ID to the lease commands, --lease and release without putting
// it in argv, where every user of the machine can read it in the process list.
const envLeaseID = "RAFTLOCK_LEASE_ID"

// leaseArg returns the lease ID: the argument, or $RAFTLOCK_LEASE_ID when there is none.
func leaseArg(c *cli.Context, a parsedArgs) (string, error) {
	id := os.Getenv(envLeaseID)
	switch {
	case len(a.args) == 0 && !a.dash && id != "":
	case len(a.args) != 1 || a.dash:
		return "", usageErrorf(c, "give exactly one lease ID (or set $%s, which keeps it out of the process list)", envLeaseID)
	default:
		id = a.args[0]
		warnSecretInArgv(c, "a lease ID", envLeaseID)
	}
	if e := api.ValidateLeaseID(id); e != nil {
		return "", usageErrorf(c, "%s", e.Message)
	}
	return id, nil
}

// leaseFlag returns --lease, or $RAFTLOCK_LEASE_ID when the flag is not given.
func leaseFlag(c *cli.Context) string {
	if v := c.String("lease"); v != "" {
		warnSecretInArgv(c, "a lease ID", envLeaseID)
		return v
	}
	return os.Getenv(envLeaseID)
}

// warnSecretInArgv tells the user that a secret given on the command line can be read by
// anyone on the machine, and how to pass it instead.
func warnSecretInArgv(c *cli.Context, what, env string) {
	fmt.Fprintf(c.App.ErrWriter, "raftlock: warning: %s on the command line shows in the process list; pass it in $%s instead\n", what, env)
}

// withLease parses the lease ID argument, then calls do, a client method, with it and
// prints the answer with text.
func withLease[T any](c *cli.Context, a parsedArgs, do func(cl *client.Client, ctx context.Context, id string) (T, error), text func(w io.Writer, v T) error) error {
	id, err := leaseArg(c, a)
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (T, error) { return do(cl, ctx, id) }, text)
}

func runLeaseKeepAlive(c *cli.Context, a parsedArgs) error {
	return withLease(c, a, (*client.Client).KeepAlive, writeLease)
}

func runLeaseGet(c *cli.Context, a parsedArgs) error {
	// get always lists the locks, when there are none too: "locks": [] and an empty line.
	return withLease(c, a, func(cl *client.Client, ctx context.Context, id string) (api.Lease, error) {
		l, err := cl.GetLease(ctx, id)
		if l.Locks == nil {
			l.Locks = []string{}
		}
		return l, err
	}, writeLease)
}

func runLeaseRevoke(c *cli.Context, a parsedArgs) error {
	return withLease(c, a, (*client.Client).Revoke, func(w io.Writer, r api.RevokeResult) error {
		fmt.Fprintf(w, "revoked %s\n", r.LeaseID)
		if len(r.Released) > 0 {
			fmt.Fprintf(w, "released %s\n", strings.Join(r.Released, ", "))
		}
		return nil
	})
}

// writeLease prints a lease for people; its locks only when the answer lists them.
func writeLease(w io.Writer, l api.Lease) error {
	return table(w, func(w io.Writer) {
		fmt.Fprintf(w, "lease\t%s\n", l.LeaseID)
		fmt.Fprintf(w, "ttl\t%s\n", fmtMs(l.TTLMs))
		if l.Locks != nil {
			fmt.Fprintf(w, "locks\t%s\n", strings.Join(l.Locks, ", "))
		}
	})
}
