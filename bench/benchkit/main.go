package benchkit

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main runs a benchmark tool (bench/etcd, bench/peers): run gets the arguments and a
// context that SIGINT and SIGTERM cancel, so that a stopped run still prints what it
// measured; its error is printed under the tool's name and its code is the exit status.
func Main(tool string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)) {
	exit(tool, func(ctx context.Context) (int, error) { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// MainErr runs a program whose error alone decides its exit status (bench/budget,
// bench/inproc, raftlock-bench) as Main does: nil exits 0; an error is printed under the
// tool's name and exits with the status it carries (ExitCode() int, as cli.Exit's errors
// have), else 1.
func MainErr(tool string, run func(ctx context.Context) error) {
	exit(tool, func(ctx context.Context) (int, error) {
		err := run(ctx)
		if err == nil {
			return 0, nil
		}
		if ec, ok := err.(interface{ ExitCode() int }); ok {
			return ec.ExitCode(), err
		}
		return 1, err
	})
}

// exit is Main and MainErr's common part: run under a context that SIGINT and SIGTERM
// cancel, print its error, exit with its code.
func exit(tool string, run func(ctx context.Context) (int, error)) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, tool+":", err)
	}
	os.Exit(code)
}

// RunFlags are the flags every benchmark tool takes for its lock workloads and its output.
type RunFlags struct {
	Duration, Warmup time.Duration
	// Clients is the number of concurrent clients; 0 is DefaultClients of the workload.
	Clients int
	// JSON prints the results as JSON on stdout; JSONOut also writes them to a file.
	JSON    bool
	JSONOut string
	// Quiet drops the progress lines.
	Quiet bool
}

// Register defines the flags on fs with raftlock-bench's names and defaults.
func (f *RunFlags) Register(fs *flag.FlagSet) {
	fs.DurationVar(&f.Duration, "duration", 10*time.Second, "measured time of each workload")
	fs.DurationVar(&f.Warmup, "warmup", 2*time.Second, "unmeasured time before each workload")
	fs.IntVar(&f.Clients, "clients", 0, "concurrent clients (0: 1 uncontended, 64 parallel, 16 contended)")
	fs.BoolVar(&f.JSON, "json", false, "print the results as JSON on stdout instead of a table")
	fs.StringVar(&f.JSONOut, "json-out", "", "also write the results as JSON to this file")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress lines")
}

// Progress is where progress lines go: stderr, or nowhere with Quiet.
func (f *RunFlags) Progress(stderr io.Writer) io.Writer {
	if f.Quiet {
		return nil
	}
	return stderr
}

// Config is the Run configuration of one workload under these flags.
func (f *RunFlags) Config(workload string, progress io.Writer) Config {
	clients := f.Clients
	if clients == 0 {
		clients = DefaultClients(workload)
	}
	return Config{Workload: workload, Clients: clients, Duration: f.Duration, Warmup: f.Warmup, Progress: progress}
}

// Finish prints a tool's results as the flags ask (Emit) and returns its exit status:
// ExitViolations with the error when a run saw a safety violation, 1 when the results
// could not be written, else 0.
func (f *RunFlags) Finish(stdout io.Writer, tool string, results []*Result) (int, error) {
	if err := Emit(stdout, tool, results, f.JSON, f.JSONOut); err != nil {
		return 1, err
	}
	if err := Violated(results); err != nil {
		return ExitViolations, err
	}
	return 0, nil
}
