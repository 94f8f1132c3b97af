package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
)

func releaseCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "release",
		Usage:     "release a lock held by a lease with a token",
		ArgsUsage: "NAME --lease ID --token N",
		Description: `Releases lock NAME. The lease and the token of the grant must both match: a
release with an older token is refused, so a late or repeated release can never free a
later holder's grant. The lock goes to its next waiter, if any.

Exit status 1 when the lease and token do not hold the lock (not_holder) or the lease
is gone (lease_not_found); 2 on usage errors.`,
		Flags: clientFlags(
			&cli.StringFlag{Name: "lease", Usage: "the holder's lease ID"},
			&cli.Uint64Flag{Name: "token", Usage: "the fencing token of the grant"},
		),
	}, runRelease)
}

func runRelease(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || a.dash {
		return usageErrorf(c, "release takes exactly one lock NAME")
	}
	name := a.args[0]
	if err := checkName(c, name); err != nil {
		return err
	}
	if leaseFlag(c) == "" || c.Uint64("token") == 0 {
		return usageErrorf(c, "--lease and --token are required")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c, 0)
	defer cancel()
	if err := cl.Release(ctx, name, leaseFlag(c), c.Uint64("token")); err != nil {
		return commandError(err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, api.ReleaseResult{Name: name, Released: true})
	}
	fmt.Fprintf(c.App.Writer, "released %s\n", name)
	return nil
}
