package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/transport"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run a raftlock node",
		Description: `Runs one node of a raftlock cluster: the Raft member and the HTTP API.

Start a new three-node cluster by giving every node the same --bootstrap list, or add a
node to a running cluster with --join pointing at any member's HTTP address.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "id", Usage: "this node's Raft server ID", Required: true, EnvVars: []string{"RAFTLOCK_ID"}},
			&cli.StringFlag{Name: "http-addr", Usage: "HTTP API listen address", Value: "127.0.0.1:7001", EnvVars: []string{"RAFTLOCK_HTTP_ADDR"}},
			&cli.StringFlag{Name: "raft-addr", Usage: "Raft listen address", Value: "127.0.0.1:8001", EnvVars: []string{"RAFTLOCK_RAFT_ADDR"}},
			&cli.StringFlag{Name: "raft-advertise", Usage: "Raft address other nodes dial (default: --raft-addr)"},
			&cli.StringFlag{Name: "data-dir", Usage: "directory for the Raft log, stable store and snapshots", Required: true, EnvVars: []string{"RAFTLOCK_DATA_DIR"}},
			&cli.StringFlag{Name: "bootstrap", Usage: "bootstrap a new cluster: id=raftaddr,id=raftaddr,... (ignored when the data dir has state)"},
			&cli.StringFlag{Name: "join", Usage: "join a running cluster through this member's HTTP URL, e.g. http://127.0.0.1:7001"},
			&cli.StringFlag{Name: "log-level", Usage: "trace, debug, info, warn or error", Value: "info"},
			&cli.BoolFlag{Name: "log-json", Usage: "log JSON lines"},
			&cli.DurationFlag{Name: "election-timeout", Usage: "raft election and heartbeat timeout", Value: 500 * time.Millisecond},
			&cli.Uint64Flag{Name: "snapshot-threshold", Usage: "log entries between snapshots", Value: 8192},
			&cli.Uint64Flag{Name: "trailing-logs", Usage: "log entries kept after a snapshot", Value: 10240},
			&cli.DurationFlag{Name: "snapshot-interval", Usage: "how often raft checks whether a snapshot is due", Value: 10 * time.Second},
			&cli.Uint64Flag{Name: "max-leases", Usage: "quota: live leases in the cluster (0: unlimited)", Value: 1_000_000, EnvVars: []string{"RAFTLOCK_MAX_LEASES"}},
			&cli.Uint64Flag{Name: "max-locks-per-lease", Usage: "quota: locks one lease may hold or wait for (0: unlimited)", Value: 10_000, EnvVars: []string{"RAFTLOCK_MAX_LOCKS_PER_LEASE"}},
			&cli.Uint64Flag{Name: "max-waiters-per-lock", Usage: "quota: leases queued for one lock (0: unlimited)", Value: 10_000, EnvVars: []string{"RAFTLOCK_MAX_WAITERS_PER_LOCK"}},
			&cli.IntFlag{Name: "max-held-requests", Usage: "waiting acquires and blocking queries this node holds open at once", Value: 10_000, EnvVars: []string{"RAFTLOCK_MAX_HELD_REQUESTS"}},
			&cli.BoolFlag{Name: "unsafe-grant-without-commit", Hidden: true, Usage: "BREAKS SAFETY: for the verification harness's negative control only"},
		},
		Action: func(c *cli.Context) error {
			logger := hclog.New(&hclog.LoggerOptions{
				Name:       c.String("id"),
				Level:      hclog.LevelFromString(c.String("log-level")),
				JSONFormat: c.Bool("log-json"),
				Output:     os.Stderr,
			})
			peers, err := parseBootstrap(c.String("bootstrap"))
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			et := c.Duration("election-timeout")
			cfg := cluster.Config{
				ID:                 c.String("id"),
				RaftBind:           c.String("raft-addr"),
				RaftAdvertise:      c.String("raft-advertise"),
				HTTPAddr:           c.String("http-addr"),
				DataDir:            c.String("data-dir"),
				Bootstrap:          peers,
				Logger:             logger,
				HeartbeatTimeout:   et,
				ElectionTimeout:    et,
				LeaderLeaseTimeout: et / 2,
				SnapshotThreshold:  c.Uint64("snapshot-threshold"),
				TrailingLogs:       c.Uint64("trailing-logs"),
				SnapshotInterval:   c.Duration("snapshot-interval"),
				Limits: fsm.Limits{
					MaxLeases:         c.Uint64("max-leases"),
					MaxLocksPerLease:  c.Uint64("max-locks-per-lease"),
					MaxWaitersPerLock: c.Uint64("max-waiters-per-lock"),
				},

				UnsafeGrantWithoutCommit: c.Bool("unsafe-grant-without-commit"),
			}
			if cfg.UnsafeGrantWithoutCommit {
				logger.Warn("UNSAFE: --unsafe-grant-without-commit is set; this node grants locks without consensus")
			}
			return runServe(c.Context, cfg, serveOptions{join: c.String("join"), maxHeld: c.Int("max-held-requests")}, logger)
		},
	}
}

// runServe runs a node until ctx ends (SIGINT or SIGTERM), then shuts down gracefully:
// the HTTP server drains, then the node hands off leadership and stops.
func runServe(ctx context.Context, cfg cluster.Config, opts serveOptions, logger hclog.Logger) error {
	join := opts.join
	l, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening for HTTP on %s: %w (is another node using the port?)", cfg.HTTPAddr, err)
	}
	node, err := cluster.New(cfg)
	if err != nil {
		l.Close()
		return err
	}
	srv, err := transport.NewServer(transport.Config{Node: node, Logger: logger, MaxHeldRequests: opts.maxHeld})
	if err != nil {
		l.Close()
		node.Shutdown()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	logger.Info("node started", "http", cfg.HTTPAddr, "raft", node.RaftAddr(), "data_dir", cfg.DataDir)

	if join != "" && !node.HasMember(cfg.ID) {
		info := node.SelfInfo()
		if err := transport.Join(ctx, join, api.AddNodeRequest{ID: info.ID, RaftAddr: info.RaftAddr, HTTPAddr: info.HTTPAddr}, logger); err != nil {
			logger.Error("could not join the cluster", "error", err)
		}
	}

	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err = <-errc:
		logger.Error("HTTP server stopped", "error", err)
	case <-node.Halted():
		// The node logged why; exiting (rather than serving errors) makes the failure
		// visible to the supervisor and the operator.
		err = cli.Exit(fmt.Sprintf("raftlock: this node stopped: %v; upgrade it to the release the rest of the cluster runs", node.HaltErr()), 3)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		logger.Warn("HTTP shutdown", "error", serr)
	}
	if nerr := node.Shutdown(); nerr != nil {
		logger.Warn("node shutdown", "error", nerr)
	}
	logger.Info("stopped")
	return err
}

// serveOptions are serve's settings that are not the node's Config.
type serveOptions struct {
	join    string
	maxHeld int
}

// parseBootstrap parses "n1=127.0.0.1:8001,n2=127.0.0.1:8002".
func parseBootstrap(s string) ([]cluster.Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []cluster.Peer
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--bootstrap: %q is not id=host:port (example: n1=127.0.0.1:8001,n2=127.0.0.1:8002)", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--bootstrap: %q: %v", part, err)
		}
		peers = append(peers, cluster.Peer{ID: id, RaftAddr: addr})
	}
	return peers, nil
}
