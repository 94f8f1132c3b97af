package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
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
	name, err := a.oneName(c, "release takes exactly one lock NAME")
	if err != nil {
		return err
	}
	if leaseFlag(c) == "" || c.Uint64("token") == 0 {
		return usageErrorf(c, "--lease and --token are required")
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.ReleaseResult, error) {
		return api.ReleaseResult{Name: name, Released: true}, cl.Release(ctx, name, leaseFlag(c), c.Uint64("token"))
	}, func(w io.Writer, r api.ReleaseResult) error {
		return say(w, "released %s\n", r.Name)
	})
}
