// Command bankworker is one worker process of the verification campaign's bank workload
// (test/verify, TestBankShort and TestBankCampaign). It builds with the test, not for
// release. It takes locks from a raftlock cluster with a lease kept alive in the background,
// makes fenced charges to the ledger with each lock's token, releases, and repeats
// (workload.RunHolds) until its duration ends. Then it revokes its lease and writes every
// request it made, with call and return times on the machine's CLOCK_MONOTONIC less
// --clock-origin, to --history as a JSON array.
//
// A paused hold is a real stop of this process. Right before the hold's write the worker
// prints the line "pause" on stdout and waits for a line on stdin; the harness meanwhile
// stops the process with SIGSTOP (keepalives included), holds it stopped for longer than
// the lease's TTL, sends SIGCONT, and writes "go". The worker then makes its write with the
// token of a lease that has expired, which a fenced ledger must refuse.
//
//	bankworker --endpoints http://127.0.0.1:7001,... --ledger http://127.0.0.1:7100 \
//	    --locks bank/0,bank/1 --accounts a0,a1 --opening 1000000000000 --ttl-ms 1000 \
//	    --wait-ms 2000 --pause-every 60 --duration 30s --worker 3 --seed 42 \
//	    --clock-origin N --history /tmp/w3.json
//
// With --threads N the process runs N such workers at once (numbered worker*N .. worker*N+N-1
// in the records), as a JVM runs many threads: a pause of one stops the whole process, and
// every other worker with it, whatever it was doing (holding, writing, renewing). One pause
// is asked for at a time; a worker whose hold pauses while another's pause is in progress
// asks after it.
//
// On its last stdout line it prints "done holds=H pauses=P ops=N".
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/raftlock/raftlock/test/verify/workload"
)

// config is the command line.
type config struct {
	endpoints, locks, accounts []string
	ledger, history            string
	opening, ttlMs, waitMs     int64
	pauseEvery, pauseOffset    int
	duration                   time.Duration
	worker, threads            int
	seed, clockOrigin          int64
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bankworker:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bankworker:", err)
		stop()
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	var endpoints, locks, accounts string
	fs := flag.NewFlagSet("bankworker", flag.ContinueOnError)
	fs.StringVar(&endpoints, "endpoints", "", "comma-separated raftlock base URLs (required)")
	fs.StringVar(&c.ledger, "ledger", "", "the ledger's base URL (required)")
	fs.StringVar(&locks, "locks", "", "comma-separated lock names; the i-th protects the i-th account (required)")
	fs.StringVar(&accounts, "accounts", "", "comma-separated account ids (required)")
	fs.Int64Var(&c.opening, "opening", 0, "the accounts' opening balance in cents (required)")
	fs.Int64Var(&c.ttlMs, "ttl-ms", 1000, "lease TTL in milliseconds")
	fs.Int64Var(&c.waitMs, "wait-ms", 2000, "how long an acquire queues, in milliseconds")
	fs.IntVar(&c.pauseEvery, "pause-every", 0, "pause one hold in this many (0: never)")
	fs.IntVar(&c.pauseOffset, "pause-offset", 0, "which hold modulo --pause-every pauses")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run")
	fs.IntVar(&c.worker, "worker", 0, "the worker's number, for the records")
	fs.IntVar(&c.threads, "threads", 1, "how many workers the process runs at once (a pause stops them all)")
	fs.Int64Var(&c.seed, "seed", 1, "random seed")
	fs.Int64Var(&c.clockOrigin, "clock-origin", 0, "CLOCK_MONOTONIC reading (ns) the records count from")
	fs.StringVar(&c.history, "history", "", "file to write the recorded requests to (required)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.endpoints, c.locks, c.accounts = split(endpoints), split(locks), split(accounts)
	switch {
	case len(c.endpoints) == 0 || c.ledger == "" || c.history == "":
		return c, errors.New("--endpoints, --ledger and --history are required")
	case len(c.locks) == 0 || len(c.locks) != len(c.accounts):
		return c, fmt.Errorf("--locks and --accounts must have the same number of names, got %d and %d", len(c.locks), len(c.accounts))
	case c.opening <= 0:
		return c, errors.New("--opening must be positive")
	case c.threads < 1:
		return c, errors.New("--threads must be at least 1")
	}
	return c, nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// run makes holds until the duration ends or ctx is cancelled, then writes the history.
// Pause requests go out on out and wait for a line on in.
func run(ctx context.Context, cfg config, in io.Reader, out io.Writer) error {
	rec := workload.NewRecorder(workload.NewSharedClock(cfg.clockOrigin))
	lines := bufio.NewScanner(in)
	var pausing sync.Mutex // one pause request at a time: the harness answers them in turn
	pause := func(ctx context.Context) error {
		pausing.Lock()
		defer pausing.Unlock()
		if _, err := fmt.Fprintln(out, "pause"); err != nil {
			return err
		}
		// Stopped by the harness from here until it writes "go".
		if !lines.Scan() {
			if err := lines.Err(); err != nil {
				return err
			}
			return io.ErrUnexpectedEOF
		}
		if l := lines.Text(); l != "go" {
			return fmt.Errorf("expected \"go\" after a pause, got %q", l)
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	results := make([]workload.HoldsResult, cfg.threads)
	errs := make([]error, cfg.threads)
	var wg sync.WaitGroup
	for k := 0; k < cfg.threads; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := workload.NewClient(cfg.endpoints, cfg.ledger, rec, "bank", cfg.worker*cfg.threads+k, cfg.seed+int64(k)*7919)
			defer c.Close()
			results[k], errs[k] = workload.RunHolds(rctx, c, workload.HoldsConfig{
				Locks: cfg.locks, Accounts: cfg.accounts, OpeningCents: cfg.opening,
				TTLMs: cfg.ttlMs, WaitMs: cfg.waitMs,
				PauseEvery: cfg.pauseEvery, PauseOffset: (cfg.pauseOffset + k) % max(cfg.pauseEvery, 1), Pause: pause,
			})
		}()
	}
	wg.Wait()
	var res workload.HoldsResult
	for _, r := range results {
		res.Holds += r.Holds
		res.Pauses += r.Pauses
	}
	runErr := errors.Join(errs...)
	ops := rec.Ops()
	b, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.history, b, 0o644); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	_, err = fmt.Fprintf(out, "done holds=%d pauses=%d ops=%d\n", res.Holds, res.Pauses, len(ops))
	return err
}
