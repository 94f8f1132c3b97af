package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

func clusterCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:  "cluster",
		Usage: "show the cluster's nodes, leader, term and indexes",
		Description: `Shows the cluster as the answering node sees it: the leader, the node's Raft term,
commit and applied indexes, and every member with its Raft and HTTP addresses.`,
		Flags: clientFlags(),
	}, runCluster)
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
