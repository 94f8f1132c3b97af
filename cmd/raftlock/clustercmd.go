package main

import (
	"context"
	"errors"
	"fmt"
	"io"

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
	id, err := a.one(c, "give exactly one node ID")
	if err != nil {
		return err
	}
	if c.String("raft-addr") == "" {
		return usageErrorf(c, "--raft-addr is required")
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.Node, error) {
		n, err := cl.AddNode(ctx, api.AddNodeRequest{ID: id, RaftAddr: c.String("raft-addr"), HTTPAddr: c.String("http-addr"), Replace: c.Bool("replace")})
		if errors.Is(err, client.ErrConflict) {
			err = fmt.Errorf("%w\nhint: to re-point member %s at a new address, add --replace", err, id)
		}
		return n, err
	}, func(w io.Writer, n api.Node) error {
		return say(w, "added %s (raft %s, http %s)\n", n.ID, n.RaftAddr, n.HTTPAddr)
	})
}

func runClusterRemove(c *cli.Context, a parsedArgs) error {
	return actOn(c, a, "give exactly one node ID", "removed", "removed", (*client.Client).RemoveNode)
}

func runCluster(c *cli.Context, a parsedArgs) error {
	if err := a.none(c, "cluster takes no arguments"); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.Cluster, error) {
		return cl.Cluster(ctx)
	}, func(w io.Writer, info api.Cluster) error {
		leader := info.LeaderID
		if leader == "" {
			leader = "(none: election in progress)"
		}
		err := table(w, func(w io.Writer) {
			fmt.Fprintf(w, "leader\t%s\n", leader)
			fmt.Fprintf(w, "term\t%d\n", info.Term)
			fmt.Fprintf(w, "commit index\t%d\n", info.CommitIndex)
			fmt.Fprintf(w, "applied index\t%d\n", info.AppliedIndex)
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(w)
		return table(w, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tRAFT ADDRESS\tHTTP ADDRESS\tVOTER\tLEADER")
			for _, n := range info.Nodes {
				mark := ""
				if n.Leader {
					mark = "*"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", n.ID, n.RaftAddr, n.HTTPAddr, n.Voter, mark)
			}
		})
	})
}

func runClusterTransferLeader(c *cli.Context, a parsedArgs) error {
	if err := a.none(c, "transfer-leader takes no arguments (use --to ID)"); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (map[string]string, error) {
		id, err := cl.TransferLeader(ctx, c.String("to"))
		return map[string]string{"leader_id": id}, err
	}, func(w io.Writer, m map[string]string) error {
		return say(w, "leader is now %s\n", m["leader_id"])
	})
}
