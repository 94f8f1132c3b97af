// Command ledger runs the fenced demo payment ledger (package ledger): an HTTP service that
// debits accounts only for writers whose fencing token is current, and never applies a
// charge_id twice.
//
//	ledger --listen 127.0.0.1:7100 --data-dir DIR [--db postgres://...] [--no-fencing] [--opening-balance N]
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/ledger"
)

// options are the command line, mapped into ledger.Config by run.
type options struct {
	listen         string
	dataDir        string
	dsn            string
	noFencing      bool
	openingBalance int64
	logLevel       string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newApp().RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "ledger:", err)
		stop()
		os.Exit(1)
	}
}

func newApp() *cli.App {
	var o options
	return &cli.App{
		Name:  "ledger",
		Usage: "a demo payment ledger that refuses stale lock holders (fencing tokens) and replays (charge ids)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7100", Usage: "HTTP listen address", EnvVars: []string{"LEDGER_LISTEN"}, Destination: &o.listen},
			&cli.StringFlag{Name: "data-dir", Value: ".raftlock/ledger", Usage: "directory of the SQLite database (unused with --db)", EnvVars: []string{"LEDGER_DATA_DIR"}, Destination: &o.dataDir},
			&cli.StringFlag{Name: "db", Usage: "PostgreSQL URL (postgres://...) instead of SQLite", EnvVars: []string{"LEDGER_DB"}, Destination: &o.dsn},
			&cli.BoolFlag{Name: "no-fencing", Usage: "accept stale fencing tokens (demo of the double charge a plain lock allows)", Destination: &o.noFencing},
			&cli.Int64Flag{Name: "opening-balance", Value: ledger.DefaultOpeningBalanceCents, Usage: "balance in cents of an account created by its first charge", Destination: &o.openingBalance},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "trace, debug, info, warn or error", Destination: &o.logLevel},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected arguments: %v", c.Args().Slice())
			}
			return run(c.Context, o)
		},
	}
}

// run serves the ledger until ctx ends.
func run(ctx context.Context, o options) error {
	level := hclog.LevelFromString(o.logLevel)
	if level == hclog.NoLevel {
		return fmt.Errorf("unknown --log-level %q", o.logLevel)
	}
	if o.openingBalance <= 0 {
		return errors.New("--opening-balance must be positive (create empty accounts with PUT /v1/accounts/{id})")
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "ledger", Level: level, Output: os.Stderr})

	db, dialect, err := ledger.OpenDB(ctx, o.dataDir, o.dsn)
	if err != nil {
		return err
	}
	defer db.Close()

	cfg := ledger.DefaultConfig()
	cfg.DB = db
	cfg.Dialect = dialect
	cfg.Fenced = !o.noFencing
	cfg.OpeningBalanceCents = o.openingBalance
	cfg.Logger = logger
	l, err := ledger.New(ctx, cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	return l.Serve(ctx, ln)
}
