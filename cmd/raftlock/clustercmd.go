package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func clusterCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:  "cluster",
		Usage: "show the cluster's nodes, leader, term and indexes; add or remove members",
		Description: `Shows the cluster as the answering node sees it: the leader, the node's Raft term,
commit and applied indexes, and every member with its Raft and HTTP addresses.`,
		Flags: clientFlags(),
		Subcommands: []*cli.Command{
			clientCommand(&cli.Command{
				Name:      "add",
				Usage:     "add a voter, or re-register a member's HTTP address",
				ArgsUsage: "ID",
				Description: `Adds node ID, listening for Raft at --raft-addr and for HTTP at --http-addr, as a
voter. Re-pointing an existing member at another Raft address (a node rebuilt on another
host) is refused unless --replace is given. Start the new node with --join instead when
it can reach the cluster itself.`,
				Flags: clientFlags(
					&cli.StringFlag{Name: "raft-addr", Usage: "the node's Raft address (host:port)"},
					&cli.StringFlag{Name: "http-addr", Usage: "the node's HTTP API address (host:port)"},
					&cli.BoolFlag{Name: "replace", Usage: "allow re-pointing an existing member ID at a new Raft address"},
				),
			}, runClusterAdd),
			clientCommand(&cli.Command{
				Name:      "remove",
				Usage:     "remove a member from the cluster",
				ArgsUsage: "ID",
				Flags:     clientFlags(),
			}, runClusterRemove),
			clientCommand(&cli.Command{
				Name:  "transfer-leader",
				Usage: "hand leadership to another voter (before restarting the leader)",
				Flags: clientFlags(&cli.StringFlag{Name: "to", Usage: "the voter to hand leadership to (default: the most up-to-date one)"}),
			}, runClusterTransferLeader),
		},
	}, runCluster)
}

func runClusterAdd(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || a.dash {
		return usageErrorf(c, "give exactly one node ID")
	}
	if c.String("raft-addr") == "" {
		return usageErrorf(c, "--raft-addr is required")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c, 0)
	defer cancel()
	n, err := cl.AddNode(ctx, api.AddNodeRequest{ID: a.args[0], RaftAddr: c.String("raft-addr"), HTTPAddr: c.String("http-addr"), Replace: c.Bool("replace")})
	if err != nil {
		if errors.Is(err, client.ErrConflict) {
			err = fmt.Errorf("%w\nhint: to re-point member %s at a new address, add --replace", err, a.args[0])
		}
		return commandError(err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, n)
	}
	fmt.Fprintf(c.App.Writer, "added %s (raft %s, http %s)\n", n.ID, n.RaftAddr, n.HTTPAddr)
	return nil
}

func runClusterRemove(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || a.dash {
		return usageErrorf(c, "give exactly one node ID")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c, 0)
	defer cancel()
	if err := cl.RemoveNode(ctx, a.args[0]); err != nil {
		return commandError(err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]string{"removed": a.args[0]})
	}
	fmt.Fprintf(c.App.Writer, "removed %s\n", a.args[0])
	return nil
}

func runCluster(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 0 || a.dash {
		return usageErrorf(c, "cluster takes no arguments")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c, 0)
	defer cancel()
	info, err := cl.Cluster(ctx)
	if err != nil {
		return commandError(err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, info)
	}
	leader := info.LeaderID
	if leader == "" {
		leader = "(none: election in progress)"
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "leader\t%s\n", leader)
	fmt.Fprintf(w, "term\t%d\n", info.Term)
	fmt.Fprintf(w, "commit index\t%d\n", info.CommitIndex)
	fmt.Fprintf(w, "applied index\t%d\n", info.AppliedIndex)
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer)
	w = tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tRAFT ADDRESS\tHTTP ADDRESS\tVOTER\tLEADER")
	for _, n := range info.Nodes {
		mark := ""
		if n.Leader {
			mark = "*"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", n.ID, n.RaftAddr, n.HTTPAddr, n.Voter, mark)
	}
	return w.Flush()
}

func runClusterTransferLeader(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 0 || a.dash {
		return usageErrorf(c, "transfer-leader takes no arguments (use --to ID)")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	ctx, cancel := callContext(c, 0)
	defer cancel()
	id, err := cl.TransferLeader(ctx, c.String("to"))
	if err != nil {
		return commandError(err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]string{"leader_id": id})
	}
	fmt.Fprintf(c.App.Writer, "leader is now %s\n", id)
	return nil
}
