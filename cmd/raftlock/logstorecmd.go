package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/cluster"
)

// logStoreCommand is `raftlock log-store`: offline work on a stopped node's Raft log store.
func logStoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "log-store",
		Usage: "inspect or convert a stopped node's Raft log store (raft-wal or BoltDB)",
		Subcommands: []*cli.Command{
			{
				Name:  "show",
				Usage: "print which store a data directory holds",
				Flags: []cli.Flag{&cli.StringFlag{Name: "data-dir", Required: true, Usage: "the node's data directory"}},
				Action: func(c *cli.Context) error {
					kind, found, err := cluster.DetectLogStore(c.String("data-dir"))
					if err != nil {
						return cli.Exit("raftlock log-store show: "+err.Error(), 1)
					}
					if !found {
						fmt.Fprintln(c.App.Writer, "none (a new node gets wal)")
						return nil
					}
					fmt.Fprintln(c.App.Writer, kind)
					return nil
				},
			},
			{
				Name:  "convert",
				Usage: "convert a stopped node's data directory to the other store, in place",
				Description: `Copies every Raft log entry and the term and vote of the node's current store into a
new store of the kind --to names (hashicorp/raft-wal's migrate package), puts it in place,
and moves the old store aside (raft.db.before-wal-TIME or wal.before-boltdb-TIME: delete
it once the node runs). Snapshots are kept as they are. The node must be stopped: the data
directory's lock is taken. An interrupted conversion leaves the old store whole; run the
command again to finish it. Start the node afterwards with --raft-log-store=auto (the
default) or the new store's name. This is the way back from raft-wal to BoltDB; the
other way, remove, wipe and re-join, works too (docs/OPERATIONS.md).`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "data-dir", Required: true, Usage: "the stopped node's data directory"},
					&cli.StringFlag{Name: "to", Required: true, Usage: "the store to convert to: wal or boltdb"},
				},
				Action: func(c *cli.Context) error {
					to, err := cluster.ParseLogStoreKind(c.String("to"))
					if err != nil || to == cluster.LogStoreAuto {
						return cli.Exit("raftlock log-store convert: --to must be wal or boltdb", 2)
					}
					logger := hclog.New(&hclog.LoggerOptions{Name: "convert", Level: hclog.Warn, Output: os.Stderr})
					progress := func(s string) { fmt.Fprintln(c.App.ErrWriter, s) }
					if err := cluster.ConvertLogStore(c.Context, c.String("data-dir"), to, logger, progress); err != nil {
						return cli.Exit("raftlock log-store convert: "+err.Error(), 1)
					}
					fmt.Fprintf(c.App.Writer, "converted %s to %s; start the node with --raft-log-store=auto or %s\n", c.String("data-dir"), to, to)
					return nil
				},
			},
		},
	}
}
