package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// Quotas per identity (protocol version 5): the flags that set them on a policy or a token,
// and the usage command that shows them beside what is in use.

// quotaFlags are the --max-leases, --max-locks and --max-waiters flags of whose quotas
// they set.
func quotaFlags(whose string) []cli.Flag {
	return []cli.Flag{
		&cli.Uint64Flag{Name: "max-leases", Usage: whose + " quota of live leases (0 or left out: not set here)"},
		&cli.Uint64Flag{Name: "max-locks", Usage: whose + " quota of grants held: locks, permits, leaderships (0 or left out: not set here)"},
		&cli.Uint64Flag{Name: "max-waiters", Usage: whose + " quota of waits (0 or left out: not set here)"},
	}
}

// quotasFrom reads the quota flags; nil when none is set.
func quotasFrom(c *cli.Context) *api.Quotas {
	q := api.Quotas{MaxLeases: c.Uint64("max-leases"), MaxLocks: c.Uint64("max-locks"), MaxWaiters: c.Uint64("max-waiters")}
	if q == (api.Quotas{}) {
		return nil
	}
	return &q
}

// formatQuotas writes quotas as their flags would set them; "-" for none.
func formatQuotas(q *api.Quotas) string {
	if q == nil {
		return "-"
	}
	var parts []string
	for _, f := range []struct {
		name string
		v    uint64
	}{{"max-leases", q.MaxLeases}, {"max-locks", q.MaxLocks}, {"max-waiters", q.MaxWaiters}} {
		if f.v != 0 {
			parts = append(parts, f.name+"="+strconv.FormatUint(f.v, 10))
		}
	}
	return strings.Join(parts, " ")
}

func usageCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:  "usage",
		Usage: "show what this token's identity holds in the cluster against its quotas (--all: every identity, for an admin)",
		Description: `An identity is an ACL token, or every caller without a token together ("anonymous");
with ACLs off every caller is that one identity and its quotas are the cluster's limits.
Its quotas come from its token, else the largest of its policies', else the cluster's
defaults (raftlock serve --max-leases-per-identity and the others). A limit of 0 is none.`,
		Flags: clientFlags(&cli.BoolFlag{Name: "all", Usage: "every identity with a lease, and the whole cluster (needs admin on the empty prefix)"}),
	}, runUsage)
}

func runUsage(c *cli.Context, a parsedArgs) error {
	if err := noArgs(c, a); err != nil {
		return err
	}
	if c.Bool("all") {
		return request(c, func(ctx context.Context, cl *client.Client) (api.UsageList, error) {
			return cl.Usages(ctx)
		}, func(w io.Writer, l api.UsageList) error {
			return writeRows(w, "no identity holds a lease", "IDENTITY\tLEASES\tLOCKS\tWAITERS", append(l.Identities, l.Cluster), writeUsageRow)
		})
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.Usage, error) {
		return cl.Usage(ctx)
	}, func(w io.Writer, u api.Usage) error {
		return writeRows(w, "", "IDENTITY\tLEASES\tLOCKS\tWAITERS", []api.Usage{u}, writeUsageRow)
	})
}

// writeUsageRow writes one identity's use as used/limit per quota ("-" for no limit).
func writeUsageRow(w io.Writer, u api.Usage) {
	use := func(x api.Use) string {
		if x.Limit == 0 {
			return fmt.Sprintf("%d/-", x.Used)
		}
		return fmt.Sprintf("%d/%d", x.Used, x.Limit)
	}
	name := u.Identity
	if name == "" {
		name = "(leases made without ACLs)"
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", name, use(u.Leases), use(u.Locks), use(u.Waiters))
}
