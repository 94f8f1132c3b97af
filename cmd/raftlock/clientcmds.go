package main

import "github.com/urfave/cli/v2"

// clientCommands returns the commands that talk to a cluster over the HTTP API.
func clientCommands() []*cli.Command { return nil }
