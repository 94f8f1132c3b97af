package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/client"
)

func lockCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "lock",
		Usage:     "run a command while holding a lock",
		ArgsUsage: "NAME [flags] -- COMMAND [ARGS...]",
		Description: `Takes lock NAME (waiting up to --wait), runs COMMAND in its own process group with
RAFTLOCK_LOCK (the name), RAFTLOCK_TOKEN (the fencing token) and RAFTLOCK_LEASE (the
lease ID) in its environment, keeps the lease alive while it runs, and releases the lock
when it ends. raftlock exits with the command's status.

If the lease is lost while the command runs (the cluster says it expired or was revoked,
or no keepalive was answered before the lease's safe time passed), raftlock sends SIGTERM
to the command's process group, then SIGKILL after --grace, and exits 76. The safe time is
the send time of the last answered keepalive + TTL - max(TTL/10, 100ms), so the command
is signalled before the cluster can expire the lease; keep --grace short next to the TTL.
Even so, the command may still be writing when another holder starts: pass
RAFTLOCK_TOKEN with every write and have the storage refuse lower tokens.

SIGINT, SIGTERM and SIGHUP sent to raftlock are passed on to the command's process group.
If raftlock itself is killed with SIGKILL, the command gets SIGKILL too (Linux). As the
command has its own process group, it is not the terminal's foreground group: use it for
non-interactive commands.

With --json, raftlock writes one JSON line per event (acquired, not_acquired, lost,
released) to stderr; the command's own output is untouched.

Example:
   raftlock lock payments/order-1001 --ttl 10s --wait 30s -- ./charge.sh 1001
` + exitCodesHelp,
		Flags: clientFlags(
			&cli.DurationFlag{Name: "ttl", Usage: "TTL of the lease that holds the lock (500ms to 24h)", Value: 10 * time.Second},
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait for the lock; 0 fails at once when it is held", Value: 30 * time.Second},
			&cli.StringFlag{Name: "owner", Usage: "label shown in the lock's status (default: HOST/PID)"},
			&cli.DurationFlag{Name: "grace", Usage: "time between SIGTERM and SIGKILL when the lock is lost", Value: 5 * time.Second},
		),
	}, runLock)
}

// lockRun is one `raftlock lock` invocation.
type lockRun struct {
	c     *cli.Context
	cl    *client.Client
	name  string
	argv  []string
	sigs  chan os.Signal
	lease *client.Lease
	m     *client.Mutex
}

func runLock(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 1 || !a.dash || len(a.tail) == 0 {
		return usageErrorf(c, "lock needs a lock NAME, then --, then the COMMAND to run")
	}
	if err := checkName(c, a.args[0]); err != nil {
		return err
	}
	if c.Duration("wait") < 0 || c.Duration("grace") < 0 {
		return usageErrorf(c, "--wait and --grace cannot be negative")
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	r := &lockRun{c: c, cl: cl, name: a.args[0], argv: a.tail, sigs: make(chan os.Signal, 8)}
	// main's signal.NotifyContext cancels c.Context on SIGINT and SIGTERM, which ends the
	// wait for the lock; this channel also receives them, to pass them on to the command.
	signal.Notify(r.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(r.sigs)

	if err := r.acquire(); err != nil {
		return err
	}
	return r.run()
}

// acquire creates the lease and takes the lock, or returns the error to exit with.
func (r *lockRun) acquire() error {
	c := r.c
	owner := c.String("owner")
	if !c.IsSet("owner") {
		host, _ := os.Hostname()
		owner = host + "/" + strconv.Itoa(os.Getpid())
	}
	ctx, cancel := callContext(c, 0)
	lease, err := r.cl.NewLease(ctx, c.Duration("ttl"))
	cancel()
	if err != nil {
		return r.notAcquired(err)
	}
	r.lease = lease
	r.m = client.NewMutex(lease, r.name, client.WithOwner(owner))
	wait := c.Duration("wait")
	if wait == 0 {
		ctx, cancel = callContext(c, 0)
		err = r.m.TryLock(ctx)
	} else {
		ctx, cancel = context.WithTimeout(c.Context, wait)
		err = r.m.Lock(ctx)
	}
	cancel()
	if err == nil && c.Context.Err() != nil {
		err = c.Context.Err() // interrupted as the lock was granted: do not start
	}
	if err != nil {
		r.closeLease(r.m.Unlock)
		return r.notAcquired(err)
	}
	r.event("acquired", map[string]any{"token": r.m.Token(), "lease_id": lease.ID(), "ttl_ms": lease.TTL().Milliseconds()})
	return nil
}

// notAcquired maps a failure to take the lock to an exit status.
func (r *lockRun) notAcquired(err error) error {
	if r.c.Context.Err() != nil {
		return cli.Exit("raftlock: interrupted while taking the lock", r.signalStatus())
	}
	if errors.Is(err, client.ErrInvalid) {
		return cli.Exit("raftlock: "+err.Error(), exitUsage)
	}
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrNoLeader) {
		msg = fmt.Sprintf("lock %q still held after waiting %v", r.name, r.c.Duration("wait"))
	}
	r.event("not_acquired", map[string]any{"error": msg})
	return cli.Exit("raftlock: "+msg, exitNotAcquired)
}

// signalStatus returns 128+N for the first signal received, as a shell would.
func (r *lockRun) signalStatus() int {
	select {
	case s := <-r.sigs:
		if sig, ok := s.(syscall.Signal); ok {
			return 128 + int(sig)
		}
	default:
	}
	return 128 + int(syscall.SIGINT)
}

// run starts the command, watches the lock while it runs, and releases the lock.
func (r *lockRun) run() error {
	c := r.c
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"RAFTLOCK_LOCK="+r.name,
		"RAFTLOCK_TOKEN="+strconv.FormatUint(r.m.Token(), 10),
		"RAFTLOCK_LEASE="+r.lease.ID(),
	)
	prepareCommand(cmd)
	if err := cmd.Start(); err != nil {
		r.closeLease(r.m.Unlock)
		return cli.Exit(fmt.Sprintf("raftlock: cannot run %q: %v", r.argv[0], err), exitCannotRun)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	lost := false
	lostCh := r.m.Lost()
	var kill <-chan time.Time
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case s := <-r.sigs:
			signalCommand(cmd, s)
		case <-lostCh:
			lostCh, lost = nil, true
			fmt.Fprintf(c.App.ErrWriter, "raftlock: lock %q lost (%v); sending SIGTERM to the command, SIGKILL in %v\n", r.name, r.lease.Err(), c.Duration("grace"))
			r.event("lost", map[string]any{"error": fmt.Sprint(r.lease.Err())})
			signalCommand(cmd, syscall.SIGTERM)
			t := time.NewTimer(c.Duration("grace"))
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			signalCommand(cmd, syscall.SIGKILL)
		}
	}
	status := exitStatus(cmd, waitErr)
	if lost {
		// Whatever the command left running in its group goes too: it no longer holds
		// the lock.
		signalCommand(cmd, syscall.SIGKILL)
		r.closeLease(nil)
		return cli.Exit(fmt.Sprintf("raftlock: lock %q was lost while the command ran; the command was stopped (its status: %d)", r.name, status), exitLockLost)
	}
	if err := r.closeLease(r.m.Unlock); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "raftlock: releasing %q: %v (the lease expires by itself)\n", r.name, err)
	}
	r.event("released", map[string]any{"exit_code": status})
	if status != 0 {
		return cli.Exit("", status)
	}
	return nil
}

// closeLease releases the lock (when unlock is given) and revokes the lease, on a context
// of its own: c.Context may already be cancelled by a signal.
func (r *lockRun) closeLease(unlock func(context.Context) error) error {
	if r.lease == nil {
		return nil
	}
	timeout := r.c.Duration("timeout")
	if r.lease.Err() != nil {
		timeout = min(timeout, time.Second) // it is lost anyway; do not linger
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	if unlock != nil {
		if uerr := unlock(ctx); uerr != nil && !errors.Is(uerr, client.ErrNotLocked) {
			err = uerr
		}
	}
	if cerr := r.lease.Close(ctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// exitStatus returns the command's exit status, 128+N when it died of signal N.
func exitStatus(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// event writes one JSON line to stderr with --json, for programs that drive raftlock.
func (r *lockRun) event(kind string, fields map[string]any) {
	if !r.c.Bool("json") {
		return
	}
	fields["event"] = kind
	fields["lock"] = r.name
	_ = printJSONLine(r.c.App.ErrWriter, fields)
}
