package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

func lockCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "lock",
		Usage:     "run a command while holding a lock",
		ArgsUsage: "NAME [NAME...] [flags] -- COMMAND [ARGS...]",
		Description: `Takes lock NAME (waiting up to --wait), runs COMMAND in its own process group with
RAFTLOCK_LOCK (the name) and RAFTLOCK_TOKEN (the fencing token) in its environment, keeps
the lease alive while it runs, and releases the lock when it ends. raftlock exits with the
command's status.

The lease ID is not passed to the command: it is the secret that can renew, release and
revoke the lease, and the command needs only the token. --export-lease adds it as
RAFTLOCK_LEASE, for a command that must manage the lease itself (it then also appears in
the --json "acquired" event).

When the command exits, whatever it left running in its process group (background jobs,
"cmd &") may still be acting under the lock. raftlock therefore sends SIGTERM to the
group, SIGKILL after --grace, and releases the lock only once no process of the group is
left (zombies count as gone), so that the next holder never overlaps with them.

If the lease is lost while the command runs (the cluster says it expired or was revoked,
or no keepalive was answered before the lease's safe time passed), raftlock sends SIGTERM
to the command's process group, then SIGKILL after --grace, and exits 76. The safe time is
the send time of the last answered keepalive + TTL - the drift margin, max(TTL/10, 100ms):
the cluster cannot expire the lease before the drift margin has passed after it. So that
the command is dead before another holder can be granted the lock, --grace defaults to
half the drift margin (500ms with --ttl 10s), and a --grace longer than the drift margin
is refused unless --unsafe-grace is given. For a longer grace, raise --ttl (the margin is a
tenth of it). Even so, the command may still be writing when another holder starts (a
pause, a slow kill): pass RAFTLOCK_TOKEN with every write and have the storage refuse
lower tokens.

SIGINT, SIGTERM and SIGHUP sent to raftlock are passed on to the command's process group.
If raftlock itself is killed with SIGKILL, the command gets SIGKILL too (Linux). As the
command has its own process group, it is not the terminal's foreground group: use it for
non-interactive commands.

With --shared the lock is taken as a reader: any number of shared holders run at once,
never beside an exclusive holder. The lock's queue is FIFO across both modes, so a
waiting exclusive holder blocks later shared ones. Shared holders read; the exclusive
holder's RAFTLOCK_TOKEN is the one that fences writes.

With several NAMEs the locks are taken together, atomically, in one commit (a lockset,
protocol version 3): all or none, so two commands taking the same locks in different orders
never deadlock, and a wait never holds some of them. The command then gets, for each lock
in name order (i from 1), RAFTLOCK_LOCK_i (its name) and RAFTLOCK_TOKEN_i (its token),
plus RAFTLOCK_LOCK_COUNT, RAFTLOCK_LOCKS (the names joined by commas) and RAFTLOCK_TOKEN
(the set's token, the same for every lock it was granted in one commit).

--max-hold D ends the grant D after it even while the lease is kept alive (the cluster
grants the next waiter): raftlock then stops the command as on a lost lease (exit 76).
--lock-delay D keeps the lock from everyone for D after the lease expired or was revoked
without a release: for storage that cannot check RAFTLOCK_TOKEN.

With --json, raftlock writes one JSON line per event (acquired, not_acquired, lost,
released) to stderr; the command's own output is untouched.

Example:
   raftlock lock payments/order-1001 --ttl 10s --wait 30s -- ./charge.sh 1001
   raftlock lock --shared catalog/prices -- ./export-prices.sh
` + exitCodesHelp,
		Flags: holdFlags("lock", 30*time.Second, "",
			&cli.BoolFlag{Name: "shared", Usage: "take the lock shared (a reader): any number of shared holders at once, no exclusive holder beside them"},
			&cli.DurationFlag{Name: "max-hold", Usage: "end the grant this long after it, even while the lease is kept alive, and stop the command (protocol version 3); 0: none"},
			&cli.DurationFlag{Name: "lock-delay", Usage: "keep the lock from everyone this long after the lease ended without a release (exclusive only; protocol version 3); 0: none"},
		),
	}, runLock)
}

// holdFlags are the flags of the commands that run a command while holding something
// (lock, semaphore, elect): what is "the lock" in their help is what, and wait is the
// default --wait (waitText its help text when not empty).
func holdFlags(what string, wait time.Duration, waitText string, own ...cli.Flag) []cli.Flag {
	return clientFlags(append([]cli.Flag{
		&cli.DurationFlag{Name: "ttl", Usage: "TTL of the lease that holds the " + what + " (500ms to 24h)", Value: 10 * time.Second},
		&cli.DurationFlag{Name: "wait", Usage: "how long to wait for the " + what + "; 0 fails at once when it is held", Value: wait, DefaultText: waitText},
		&cli.StringFlag{Name: "owner", Usage: "label shown in the " + what + "'s status (default: HOST/PID)"},
		&cli.DurationFlag{Name: "grace", Usage: "time between SIGTERM and SIGKILL to the command's process group (" + what + " lost, or command done with processes left); at most the drift margin max(TTL/10, 100ms) unless --unsafe-grace", DefaultText: "half the drift margin"},
		&cli.BoolFlag{Name: "unsafe-grace", Usage: "allow a --grace longer than the drift margin: the command may then outlive the lease and overlap with the next holder"},
		&cli.BoolFlag{Name: "export-lease", Usage: "pass the lease ID to the command as RAFTLOCK_LEASE (a secret: it can release and revoke the " + what + ")"},
	}, own...)...)
}

// Bounds of the wait for the command's process group to be gone before the release.
const (
	// groupPoll is how often raftlock looks whether the group is empty: no event says so.
	groupPoll = 20 * time.Millisecond
	// groupKillWait bounds the wait after SIGKILL. A process that SIGKILL has not ended by
	// then is stuck in the kernel (uninterruptible I/O) and never runs its own code again.
	groupKillWait = 5 * time.Second
)

// holding is what a run holds while its command runs: a lock (either mode), a permit of
// a semaphore, the leadership of an election.
type holding struct {
	// what names it for messages and events: "lock", "semaphore", "election".
	what string
	// take takes it with the run's lease, waiting in its queue when wait is set.
	take func(ctx context.Context, wait bool) error
	// give gives it back; client.ErrNotLocked when nothing is held.
	give func(ctx context.Context) error
	// token and lost are those of the hold (client.Mutex's Token and Lost).
	token func() uint64
	lost  func() <-chan struct{}
	// env is what the command learns besides RAFTLOCK_TOKEN; envFn, when set, adds what
	// is known only once it is held (a lockset's tokens).
	env   []string
	envFn func() []string
}

// holdFactory makes what a run holds, on its lease, for the command line in c.
type holdFactory func(c *cli.Context, lease *client.Lease, name, owner string) holding

// lockRun is one `raftlock lock` (semaphore, elect) invocation.
type lockRun struct {
	c       *cli.Context
	cl      *client.Client
	name    string
	argv    []string
	grace   time.Duration // between SIGTERM and SIGKILL to the command's group
	sigs    chan os.Signal
	lease   *client.Lease
	newHold holdFactory
	h       holding
}

// label names what is held, for messages: lock "a/b", semaphore "slots".
func (r *lockRun) label() string { return fmt.Sprintf("%s %q", r.h.what, r.name) }

// defaultGrace is --grace when not given: half the drift margin the client uses for a
// lease of ttl, so that SIGKILL reaches the command before the cluster can expire the
// lease, with half the margin left for clock drift and the time to notice the loss.
func defaultGrace(ttl time.Duration) time.Duration {
	return client.DefaultDriftMargin(ttl) / 2
}

// graceFlag returns --grace, or a usage error when it is longer than the lease's drift
// margin without --unsafe-grace.
func graceFlag(c *cli.Context) (time.Duration, error) {
	ttl := c.Duration("ttl")
	if !c.IsSet("grace") {
		return defaultGrace(ttl), nil
	}
	grace, drift := c.Duration("grace"), client.DefaultDriftMargin(ttl)
	if grace > drift && !c.Bool("unsafe-grace") {
		return 0, usageErrorf(c, "--grace %v is longer than the lease's drift margin %v (max(TTL/10, 100ms) with --ttl %v): "+
			"after a lost lease the command could still run when the cluster expires the lease and grants the lock to someone else. "+
			"Use --grace %v or less, raise --ttl (the margin is a tenth of it), or pass --unsafe-grace if every write the command makes is fenced with RAFTLOCK_TOKEN",
			grace, drift, ttl, drift)
	}
	return grace, nil
}

func runLock(c *cli.Context, a parsedArgs) error {
	if len(a.args) > 1 {
		return runLockSet(c, a)
	}
	return runHold(c, a, "lock", func(c *cli.Context, lease *client.Lease, name, owner string) holding {
		m := client.NewRWMutex(lease, name, client.WithOwner(owner), client.WithMaxHold(c.Duration("max-hold")), client.WithLockDelay(c.Duration("lock-delay")))
		shared := c.Bool("shared")
		return holding{
			what: "lock",
			take: func(ctx context.Context, wait bool) error {
				switch {
				case shared && wait:
					return m.RLock(ctx)
				case shared:
					return m.TryRLock(ctx)
				case wait:
					return m.Lock(ctx)
				}
				return m.TryLock(ctx)
			},
			give: m.Unlock, token: m.Token, lost: m.Lost,
			env: []string{"RAFTLOCK_LOCK=" + name},
		}
	})
}

// runHold runs `raftlock lock` or one of its kin: what names the thing held in usage
// errors, and newHold builds it once the lease exists.
func runHold(c *cli.Context, a parsedArgs, what string, newHold holdFactory) error {
	if len(a.args) == 0 || len(a.args) > 1 && what != "lockset" || !a.dash || len(a.tail) == 0 {
		return usageErrorf(c, "%s needs a %s NAME, then --, then the COMMAND to run", c.Command.Name, what)
	}
	kind := what
	if kind == "lockset" {
		kind = "lock"
	}
	for _, name := range a.args {
		if e := api.ValidateNameOf(kind, name); e != nil {
			return usageErrorf(c, "%s", e.Message)
		}
	}
	if c.Duration("wait") < 0 || c.Duration("grace") < 0 {
		return usageErrorf(c, "--wait and --grace cannot be negative")
	}
	grace, err := graceFlag(c)
	if err != nil {
		return err
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	r := &lockRun{c: c, cl: cl, name: strings.Join(a.args, ","), argv: a.tail, grace: grace, sigs: make(chan os.Signal, 8), newHold: newHold, h: holding{what: what}}
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
	r.h = r.newHold(c, lease, r.name, owner)
	wait := c.Duration("wait")
	if wait == 0 {
		ctx, cancel = callContext(c, 0)
		err = r.h.take(ctx, false)
	} else {
		ctx, cancel = context.WithTimeout(c.Context, wait)
		err = r.h.take(ctx, true)
	}
	cancel()
	if err == nil && c.Context.Err() != nil {
		err = c.Context.Err() // interrupted as the lock was granted: do not start
	}
	if err != nil {
		r.closeLease(r.h.give)
		return r.notAcquired(err)
	}
	ev := map[string]any{"token": r.h.token(), "ttl_ms": lease.TTL().Milliseconds(), "grace_ms": r.grace.Milliseconds()}
	if c.Bool("export-lease") {
		ev["lease_id"] = lease.ID()
	}
	r.event("acquired", ev)
	return nil
}

// notAcquired maps a failure to take the lock to an exit status.
func (r *lockRun) notAcquired(err error) error {
	if r.c.Context.Err() != nil {
		return cli.Exit("raftlock: interrupted while taking the "+r.h.what, r.signalStatus())
	}
	if errors.Is(err, client.ErrInvalid) {
		return cli.Exit("raftlock: "+err.Error(), exitUsage)
	}
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrNoLeader) {
		msg = fmt.Sprintf("%s still held after waiting %v", r.label(), r.c.Duration("wait"))
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

// run starts the command, watches the lock while it runs, and releases the lock once
// the command and everything left in its process group are gone.
func (r *lockRun) run() error {
	c := r.c
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The command gets the token and the lock's name, not raftlock's own secrets: the
	// lease ID only with --export-lease, the ACL token never.
	env := os.Environ()
	for _, secret := range []string{"RAFTLOCK_LEASE", envLeaseID, "RAFTLOCK_ACL_TOKEN"} {
		env = withoutEnv(env, secret)
	}
	cmd.Env = append(append(env, r.h.env...), "RAFTLOCK_TOKEN="+strconv.FormatUint(r.h.token(), 10))
	if r.h.envFn != nil {
		cmd.Env = append(cmd.Env, r.h.envFn()...)
	}
	if c.Bool("export-lease") {
		cmd.Env = append(cmd.Env, "RAFTLOCK_LEASE="+r.lease.ID())
	}
	prepareCommand(cmd)
	if err := cmd.Start(); err != nil {
		r.closeLease(r.h.give)
		return cli.Exit(fmt.Sprintf("raftlock: cannot run %q: %v", r.argv[0], err), exitCannotRun)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	lost := false
	lostCh := r.h.lost()
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
			r.reportLost("sending SIGTERM to the command")
			signalCommand(cmd, syscall.SIGTERM)
			t := time.NewTimer(r.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			signalCommand(cmd, syscall.SIGKILL)
		}
	}
	status := exitStatus(cmd, waitErr)
	if !lost {
		// The command is done, but what it started in its group may still be acting under
		// the lock: stop it and wait for it to be gone before anyone else can get the lock.
		lost = r.drainGroup(cmd, lostCh)
	}
	if lost {
		// Whatever the command left running in its group goes too: it no longer holds
		// the lock.
		signalCommand(cmd, syscall.SIGKILL)
		r.closeLease(nil)
		return cli.Exit(fmt.Sprintf("raftlock: %s was lost while the command ran; the command was stopped (its status: %d)", r.label(), status), exitLockLost)
	}
	if err := r.closeLease(r.h.give); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "raftlock: releasing %s: %v (the lease expires by itself)\n", r.label(), err)
	}
	r.event("released", map[string]any{"exit_code": status})
	if status != 0 {
		return cli.Exit("", status)
	}
	return nil
}

// reportLost tells the user (and --json readers) that the lock was lost.
func (r *lockRun) reportLost(action string) {
	why := fmt.Sprint(r.lease.Err())
	if r.lease.Err() == nil {
		why = "its maximum hold ended the grant"
	}
	fmt.Fprintf(r.c.App.ErrWriter, "raftlock: %s lost (%s); %s, SIGKILL in %v\n", r.label(), why, action, r.grace)
	r.event("lost", map[string]any{"error": why, "grace_ms": r.grace.Milliseconds()})
}

// drainGroup runs after the command exited normally: while processes of its group are
// left, it sends them SIGTERM, then SIGKILL after the grace, and waits (bounded by
// groupKillWait after the SIGKILL) until none is left. Signals to raftlock are passed on
// meanwhile. It reports true when the lock was lost before the group was gone.
func (r *lockRun) drainGroup(cmd *exec.Cmd, lostCh <-chan struct{}) (lost bool) {
	if !groupAlive(cmd) {
		return false
	}
	fmt.Fprintf(r.c.App.ErrWriter, "raftlock: the command exited, but processes it started are still running; "+
		"sending them SIGTERM, SIGKILL in %v, and releasing %s once they are gone\n", r.grace, r.label())
	signalCommand(cmd, syscall.SIGTERM)
	poll := time.NewTicker(groupPoll)
	defer poll.Stop()
	killT := time.NewTimer(r.grace)
	defer killT.Stop()
	var giveUp <-chan time.Time
	for groupAlive(cmd) {
		select {
		case <-poll.C:
		case s := <-r.sigs:
			signalCommand(cmd, s)
		case <-lostCh:
			lostCh, lost = nil, true
			r.reportLost("its processes are still running; sending SIGKILL now")
			killT.Reset(0)
		case <-killT.C:
			signalCommand(cmd, syscall.SIGKILL)
			t := time.NewTimer(groupKillWait)
			defer t.Stop()
			giveUp = t.C
		case <-giveUp:
			fmt.Fprintf(r.c.App.ErrWriter, "raftlock: processes of the command's group survived SIGKILL for %v (stuck in the kernel); they cannot run code any more, going on\n", groupKillWait)
			return lost
		}
	}
	return lost
}

// withoutEnv returns env without the variable name, so that a RAFTLOCK_LEASE inherited
// from raftlock's own environment is not mistaken for this lock's lease.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
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
	fields[r.h.what] = r.name
	_ = printJSONLine(r.c.App.ErrWriter, fields)
}

// runLockSet runs `raftlock lock A B C -- COMMAND`: the locks taken together, in one
// commit, with one lease (a lockset).
func runLockSet(c *cli.Context, a parsedArgs) error {
	if c.Bool("shared") {
		return usageErrorf(c, "--shared takes one lock NAME")
	}
	names := a.args
	return runHold(c, a, "lockset", func(c *cli.Context, lease *client.Lease, _, owner string) holding {
		set := client.NewLockSet(lease, names, client.WithOwner(owner), client.WithMaxHold(c.Duration("max-hold")), client.WithLockDelay(c.Duration("lock-delay")))
		h := holding{
			what: "lockset",
			take: func(ctx context.Context, wait bool) error {
				if wait {
					return set.Lock(ctx)
				}
				return set.TryLock(ctx)
			},
			give: set.Unlock,
			lost: set.Lost,
			token: func() uint64 {
				var t uint64
				for _, lt := range set.Tokens() {
					t = max(t, lt.Token)
				}
				return t
			},
		}
		h.envFn = func() []string { return lockSetEnv(set.Tokens()) }
		return h
	})
}

// lockSetEnv is what a command run under a lockset learns: per lock in name order,
// RAFTLOCK_LOCK_i and RAFTLOCK_TOKEN_i (i from 1), then RAFTLOCK_LOCK_COUNT and
// RAFTLOCK_LOCKS (the names joined by commas).
func lockSetEnv(locks []api.LockToken) []string {
	var env []string
	names := make([]string, 0, len(locks))
	for i, lt := range locks {
		env = append(env, fmt.Sprintf("RAFTLOCK_LOCK_%d=%s", i+1, lt.Name), fmt.Sprintf("RAFTLOCK_TOKEN_%d=%d", i+1, lt.Token))
		names = append(names, lt.Name)
	}
	return append(env, "RAFTLOCK_LOCK_COUNT="+strconv.Itoa(len(locks)), "RAFTLOCK_LOCKS="+strings.Join(names, ","))
}
