// Command raftlock is the raftlock server and command-line client.
//
//	raftlock serve --id n1 --http-addr 127.0.0.1:7001 --raft-addr 127.0.0.1:8001 --data-dir DIR \
//	    --bootstrap n1=127.0.0.1:8001,n2=127.0.0.1:8002,n3=127.0.0.1:8003
//	raftlock acquire accounts/A --wait 30s
//	raftlock lock accounts/A -- ./charge-card.sh
//
// main only wires flags into configurations; the work happens in the packages.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newApp().RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "raftlock:", err)
		os.Exit(exitCode(err))
	}
}

// version is set at build time (-ldflags "-X main.version=v1.2.3").
var version = "dev"

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "raftlock",
		Version:              version,
		Usage:                "a distributed lock manager with fencing tokens, on Raft",
		EnableBashCompletion: true,
		Commands:             append([]*cli.Command{serveCommand(), backupCommand(), logStoreCommand()}, clientCommands()...),
	}
	return app
}

// exitCode lets a command choose the process's exit status through cli.Exit.
func exitCode(err error) int {
	if ec, ok := err.(cli.ExitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}
