package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// Exit codes of the client commands, beyond 0 (success) and 1 (any other failure).
const (
	// exitUsage: the command line is wrong (unknown flag, missing argument, invalid name or
	// TTL).
	exitUsage = 2
	// exitNotAcquired: the lock was not acquired: it is held (and --wait was 0 or ran out),
	// or the cluster could not be reached in time. EX_TEMPFAIL: trying again later may work.
	exitNotAcquired = 75
	// exitLockLost: `raftlock lock` lost the lock while the command ran, and stopped it.
	exitLockLost = 76
	// exitCannotRun: `raftlock lock` could not start the command (as a shell's 127).
	exitCannotRun = 127
)

const defaultEndpoints = "http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003"

// exitCodesHelp is appended to the help of the commands that use these codes.
const exitCodesHelp = `
Exit codes:
   0    success (for lock: the command's own status; 128+N when it died of signal N)
   1    any other error
   2    usage error: bad flags or arguments, invalid lock name or TTL
   75   the lock was not acquired: held (with --wait 0 or after --wait), or the
        cluster could not be reached in time (semaphore: no permit; elect: not
        elected; also a semaphore in use with another --limit)
   76   (lock, semaphore, elect) the lock (permit, leadership) was lost while the
        command ran; the command was stopped
   127  (lock, semaphore, elect) the command could not be started`

// clientCommands returns the commands that talk to a cluster over the HTTP API.
func clientCommands() []*cli.Command {
	return []*cli.Command{
		acquireCommand(),
		releaseCommand(),
		statusCommand(),
		whyCommand(),
		leaseCommand(),
		clusterCommand(),
		lockCommand(),
		semaphoreCommand(),
		semaphoreStatusCommand(),
		electCommand(),
		leaderCommand(),
		aclCommand(),
		usageCommand(),
		tlsCommand(),
	}
}

// clientFlags are the flags every client command takes, followed by its own.
func clientFlags(own ...cli.Flag) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "endpoints", Usage: "comma-separated node URLs; any node will do, more survive failures", Value: defaultEndpoints, EnvVars: []string{"RAFTLOCK_ENDPOINTS"}},
		&cli.BoolFlag{Name: "json", Usage: "print machine-readable JSON"},
		&cli.DurationFlag{Name: "timeout", Usage: "how long to keep trying to reach the cluster (not counting --wait)", Value: 15 * time.Second},
	}
	return append(append(flags, securityFlags()...), own...)
}

// parsedArgs are a client command's arguments once flags are taken out.
type parsedArgs struct {
	// args are the positional arguments.
	args []string
	// tail are the arguments after "--", untouched.
	tail []string
	// dash reports whether "--" was given.
	dash bool
}

// clientAction is the action of a client command.
type clientAction func(c *cli.Context, a parsedArgs) error

// clientCommand fills in what every client command shares: usage errors exit 2, and
// flags may follow the positional arguments (raftlock acquire NAME --wait 5s).
func clientCommand(cmd *cli.Command, action clientAction) *cli.Command {
	cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return usageErrorf(c, "%v", err)
	}
	cmd.Action = func(c *cli.Context) error {
		args, tail, dash, err := splitArgs(c)
		if err != nil {
			return err
		}
		if c.Bool("help") {
			return cli.ShowSubcommandHelp(c)
		}
		return action(c, parsedArgs{args: args, tail: tail, dash: dash})
	}
	return cmd
}

// splitArgs separates c's remaining arguments into positional ones and flags, setting the
// flags on c. Go's flag parsing stops at the first positional argument; this lets users
// write flags after it. Arguments after "--" are returned untouched.
func splitArgs(c *cli.Context) (args, tail []string, dash bool, err error) {
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			return args, rest[i+1:], true, nil
		}
		if len(a) < 2 || a[0] != '-' {
			args = append(args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := lookupFlag(c.Command.Flags, name)
		if f == nil {
			return nil, nil, false, usageErrorf(c, "flag provided but not defined: %s", a)
		}
		if _, isBool := f.(*cli.BoolFlag); isBool {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(rest) {
				return nil, nil, false, usageErrorf(c, "flag needs an argument: %s", a)
			}
			i++
			val = rest[i]
		}
		if err := c.Set(f.Names()[0], val); err != nil {
			return nil, nil, false, usageErrorf(c, "invalid value %q for flag %s: %v", val, a, err)
		}
	}
	return args, nil, false, nil
}

func lookupFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	if name == "help" || name == "h" {
		return cli.HelpFlag
	}
	return nil
}

// usageErrorf returns a usage error (exit code 2) that names the command's usage line.
func usageErrorf(c *cli.Context, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if c != nil && c.Command != nil {
		line := c.Command.HelpName
		if line == "" {
			line = "raftlock " + c.Command.Name
		}
		if c.Command.ArgsUsage != "" {
			line += " " + c.Command.ArgsUsage
		}
		msg += "\nusage: " + line + " (see --help)"
	}
	return cli.Exit("raftlock: "+msg, exitUsage)
}

// newClient builds a client from the common flags: endpoints, timeout, TLS and the ACL
// token. With TLS on, the default endpoints are the https:// ones.
func newClient(c *cli.Context) (*client.Client, error) {
	opts, tlsOn, err := securityOptions(c)
	if err != nil {
		return nil, err
	}
	endpoints := c.String("endpoints")
	if tlsOn && !c.IsSet("endpoints") {
		endpoints = strings.ReplaceAll(endpoints, "http://", "https://")
	}
	opts = append(opts, client.WithTimeout(attemptTimeout(c)))
	cl, err := client.New(strings.Split(endpoints, ","), opts...)
	if err != nil {
		return nil, usageErrorf(c, "--endpoints: %v", err)
	}
	return cl, nil
}

// attemptTimeout bounds one attempt on one node: a hung node must not eat all of
// --timeout, so that the other nodes get a chance.
func attemptTimeout(c *cli.Context) time.Duration {
	return min(max(c.Duration("timeout")/3, 100*time.Millisecond), client.DefaultTimeout)
}

// callContext bounds a command's calls by --timeout plus extra (a wait).
func callContext(c *cli.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, c.Duration("timeout")+extra)
}

// commandError maps a client error to an exit status: invalid requests are usage errors,
// everything else exits 1. An error that already chose its status (cli.Exit) is kept.
func commandError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(cli.ExitCoder); ok {
		return err
	}
	if errors.Is(err, client.ErrInvalid) {
		return cli.Exit("raftlock: "+err.Error(), exitUsage)
	}
	msg := "raftlock: " + err.Error()
	switch {
	case errors.Is(err, client.ErrUnauthenticated):
		msg += "\nhint: ACLs are on: give a token with $" + envACLToken + " or --acl-token-file FILE"
	case errors.Is(err, client.ErrPermissionDenied):
		msg += "\nhint: the token's policies do not grant this; `raftlock acl token self` shows them"
	case errors.Is(err, client.ErrTLS):
		msg += "\nhint: --tls-ca must be the cluster's CA; a cluster that requires client certificates needs --tls-cert and --tls-key"
	}
	return cli.Exit(msg, 1)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkName validates a lock name before any request, as a usage error.
func checkName(c *cli.Context, name string) error {
	if e := api.ValidateName(name); e != nil {
		return usageErrorf(c, "%s", e.Message)
	}
	return nil
}

// fmtMs formats a duration in milliseconds for people.
func fmtMs(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// printJSONLine writes v as one line of JSON.
func printJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
