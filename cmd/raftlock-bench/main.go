// Command raftlock-bench measures a raftlock cluster: lock throughput and latency,
// handover gaps and fairness under contention, the contended shared lock (90% shared,
// 10% exclusive) and semaphore (limit 4) workloads, the cost of keeping many leases
// alive, and memory, snapshot and restart figures with many locks held.
//
//	raftlock-bench [flags] WORKLOAD...           uncontended parallel contended shared semaphore keepalive scale, or all
//	raftlock-bench --acl-token-file ADMIN neighbour   one tenant floods, expires and loses its token beside another
//	raftlock-bench [--down 30s --restarts 10] rejoin   a follower killed and started again, timed to ready
//	raftlock-bench compare RAFTLOCK.json ETCD.json
//	raftlock-bench table FILE.json...
//	raftlock-bench systems [--base etcd] FILE.json...
//	raftlock-bench cpu LABEL=PROFILE[,PROFILE...][@RATE|@RESULT.json]...
//
// It talks to the cluster over the HTTP API only (no server package is linked in) and
// sends lock traffic to the leader's endpoint, found with GET /v1/cluster, so that no
// request pays for a follower's forwarding hop. Server CPU is read from /proc for the
// server processes (--pids, $RAFTLOCK_STATE/*/pid, or the local `raftlock serve`
// processes of the cluster's members). Every run has a warm-up, a bounded duration, a
// progress line a second on stderr, and a table at the end (or JSON with --json).
//
// scripts/bench.sh runs it beside the etcd comparison (bench/etcd); docs/PERFORMANCE.md
// explains the method and holds a real run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

func main() {
	benchkit.MainErr("raftlock-bench", func(ctx context.Context) error { return newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args) })
}

// workloads lists every workload in the order "all" runs them.
var workloads = []string{benchkit.Uncontended, benchkit.Parallel, benchkit.Contended, benchkit.Shared, benchkit.Semaphore, "keepalive", "scale"}

// apartWorkloads are run only when named: they need a cluster set up for them (the
// neighbour workload: ACLs on and an admin token), or they kill its processes (rejoin).
var apartWorkloads = []string{"neighbour", "rejoin"}

// options are the flags of a run.
type options struct {
	Endpoints []string
	Target    string
	Duration  time.Duration
	Warmup    time.Duration
	Clients   int
	WaitMs    int64
	TTL       time.Duration
	Leases    int
	LeaseTTL  time.Duration
	Batch     int // keepalive: lease IDs per batch keepalive request; 0 sends one request per lease
	Locks     int
	// TenantLocks is the neighbour workload's locks held by the tenant that expires and
	// loses its token.
	TenantLocks int
	Snapshot    bool
	Restart     bool
	// rejoin: how long each follower stays down, how many restarts, how many locks held
	Down        time.Duration
	DownJitter  time.Duration
	Restarts    int
	RejoinLocks int
	Keep        bool
	PIDs        string
	StateDir    string
	JSON        bool
	JSONOut     string
	Label       string // the System name results carry; empty: "raftlock"
	Quiet       bool
	Stdout      io.Writer
	Stderr      io.Writer
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "raftlock-bench",
		Usage:     "benchmark a raftlock cluster",
		ArgsUsage: "WORKLOAD... (uncontended, parallel, contended, shared, semaphore, keepalive, scale, or all; neighbour and rejoin only by name)",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "endpoints", Usage: "HTTP API endpoints of the cluster", EnvVars: []string{"RAFTLOCK_ENDPOINTS"},
				Value: cli.NewStringSlice("http://127.0.0.1:7001", "http://127.0.0.1:7002", "http://127.0.0.1:7003")},
			&cli.StringFlag{Name: "target", Value: "leader", Usage: "where lock traffic goes: 'leader' (found with GET /v1/cluster) or 'all' (clients spread over the endpoints; followers forward)"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "measured time of each workload"},
			&cli.DurationFlag{Name: "warmup", Value: 2 * time.Second, Usage: "unmeasured time before each workload"},
			&cli.IntFlag{Name: "clients", Usage: "concurrent clients (0: 1 uncontended, 64 parallel, 16 contended, shared and semaphore, 64 to fill scale)"},
			&cli.Int64Flag{Name: "wait-ms", Value: 30000, Usage: "server-side wait of each acquire (wait_ms)"},
			&cli.DurationFlag{Name: "ttl", Value: 10 * time.Second, Usage: "TTL of each client's lease (kept alive at TTL/3)"},
			&cli.IntFlag{Name: "leases", Value: 10000, Usage: "keepalive: live leases kept alive"},
			&cli.IntFlag{Name: "batch", Usage: "keepalive: renew this many leases per request with the batch form of POST /v1/leases/keepalive (lease_ids, at most 10000); 0 sends one request per lease"},
			&cli.DurationFlag{Name: "lease-ttl", Value: 10 * time.Second, Usage: "keepalive: TTL of those leases (each is renewed every TTL/3)"},
			&cli.IntFlag{Name: "locks", Value: 1_000_000, Usage: "scale: locks held"},
			&cli.IntFlag{Name: "tenant-locks", Value: 200_000, Usage: "neighbour: locks of the tenant whose leases expire at once, then whose token is deleted"},
			&cli.BoolFlag{Name: "snapshot", Value: true, Usage: "scale: wait for a snapshot that holds every lock and report its size"},
			&cli.BoolFlag{Name: "restart", Value: true, Usage: "scale: restart one follower and time it until ready"},
			&cli.BoolFlag{Name: "keep", Usage: "scale: leave the locks held (default: revoke their leases at the end)"},
			&cli.DurationFlag{Name: "down", Value: 30 * time.Second, Usage: "rejoin: how long each killed follower stays down before it is started again"},
			&cli.DurationFlag{Name: "down-jitter", Usage: "rejoin: add a random part of up to this much to each outage (raft's replication retries run on a fixed schedule, so a fixed outage always meets it at the same phase)"},
			&cli.IntFlag{Name: "restarts", Value: 10, Usage: "rejoin: how many times a follower is killed and started again"},
			&cli.IntFlag{Name: "rejoin-locks", Value: 5000, Usage: "rejoin: locks held while the followers restart"},
			&cli.StringFlag{Name: "pids", Usage: "server pids to charge CPU to, comma-separated (default: $RAFTLOCK_STATE/*/pid, else the local serve processes of the members)"},
			&cli.StringFlag{Name: "state", EnvVars: []string{"RAFTLOCK_STATE"}, Usage: "state directory of scripts/cluster.sh, for pid files"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON on stdout instead of a table"},
			&cli.StringFlag{Name: "json-out", Usage: "also write the results as JSON to this file"},
			&cli.StringFlag{Name: "label", Usage: "name the system in the results (e.g. raftlock-wal), so runs of two configurations can be compared"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines"},
			&cli.StringFlag{Name: "tls-ca", EnvVars: []string{"RAFTLOCK_TLS_CA"}, Usage: "speak HTTPS, trusting this CA (PEM)"},
			&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"RAFTLOCK_TLS_CERT"}, Usage: "client certificate (PEM) for clusters that require one"},
			&cli.StringFlag{Name: "tls-key", EnvVars: []string{"RAFTLOCK_TLS_KEY"}, Usage: "the client certificate's key"},
			&cli.BoolFlag{Name: "http2", Usage: "speak HTTP/2 (h2c prior knowledge without TLS; the servers need --http2-cleartext): every client shares one connection per server"},
			&cli.StringFlag{Name: "acl-token-file", EnvVars: []string{"RAFTLOCK_ACL_TOKEN_FILE"}, Usage: "send the ACL token in this file (or $RAFTLOCK_ACL_TOKEN) on every request"},
		},
		Action: func(c *cli.Context) error {
			if err := setSecurity(c); err != nil {
				return cli.Exit(err.Error(), 2)
			}
			o := options{
				Endpoints: c.StringSlice("endpoints"), Target: c.String("target"),
				Duration: c.Duration("duration"), Warmup: c.Duration("warmup"), Clients: c.Int("clients"),
				WaitMs: c.Int64("wait-ms"), TTL: c.Duration("ttl"), Leases: c.Int("leases"), LeaseTTL: c.Duration("lease-ttl"), Batch: c.Int("batch"),
				Locks: c.Int("locks"), TenantLocks: c.Int("tenant-locks"), Snapshot: c.Bool("snapshot"), Restart: c.Bool("restart"), Keep: c.Bool("keep"),
				Down: c.Duration("down"), DownJitter: c.Duration("down-jitter"), Restarts: c.Int("restarts"), RejoinLocks: c.Int("rejoin-locks"),
				PIDs: c.String("pids"), StateDir: c.String("state"), JSON: c.Bool("json"), JSONOut: c.String("json-out"), Label: c.String("label"),
				Quiet: c.Bool("quiet"), Stdout: stdout, Stderr: stderr,
			}
			names, err := expand(c.Args().Slice())
			if err != nil {
				return cli.Exit(err.Error(), 2)
			}
			results, err := run(c.Context, o, names)
			if err != nil {
				return err
			}
			if err := benchkit.Violated(results); err != nil {
				return cli.Exit(err.Error(), benchkit.ExitViolations)
			}
			return nil
		},
		Commands: []*cli.Command{
			cpuCommand(stdout),
			{
				Name:      "compare",
				Usage:     "print two systems' results side by side, with the ratio and the targets of --targets",
				ArgsUsage: "A.json B.json",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "targets", Value: "boltdb", Usage: "whose targets to check: 'boltdb' or 'wal' (round two's, by raftlock's log store), or 'round1' (round one's, either store; docs/PERFORMANCE.md, \"Rounds\")"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return cli.Exit("compare needs two JSON files (raftlock's, then etcd's)", 2)
					}
					a, err := benchkit.ReadJSON(c.Args().Get(0))
					if err != nil {
						return err
					}
					b, err := benchkit.ReadJSON(c.Args().Get(1))
					if err != nil {
						return err
					}
					benchkit.PrintTable(stdout, append(append([]*benchkit.Result{}, a...), b...))
					fmt.Fprintln(stdout)
					checked, met := benchkit.Compare(stdout, a, b, benchkit.TargetsFor(c.String("targets")))
					fmt.Fprintf(stdout, "\ntargets met: %d of %d\n", met, checked)
					return nil
				},
			},
			{
				Name:      "systems",
				Usage:     "print one table of every system's results saved with --json-out, workload by workload, with rate and server CPU per operation beside --base's",
				ArgsUsage: "FILE.json...",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "base", Value: "etcd", Usage: "the system every other is divided by"},
				},
				Action: func(c *cli.Context) error {
					all, err := readResults(c.Args().Slice())
					if err != nil {
						return err
					}
					if benchkit.PrintSystems(stdout, all, c.String("base")) == 0 {
						return cli.Exit("systems: no results with figures", 1)
					}
					return nil
				},
			},
			{
				Name:      "table",
				Usage:     "print results saved with --json-out as a table",
				ArgsUsage: "FILE.json...",
				Action: func(c *cli.Context) error {
					all, err := readResults(c.Args().Slice())
					if err != nil {
						return err
					}
					benchkit.PrintTable(stdout, all)
					return nil
				},
			},
		},
	}
}

// readResults reads the results of every file written with --json-out, in order.
func readResults(paths []string) ([]*benchkit.Result, error) {
	var all []*benchkit.Result
	for _, f := range paths {
		rs, err := benchkit.ReadJSON(f)
		if err != nil {
			return nil, err
		}
		all = append(all, rs...)
	}
	return all, nil
}

// expand turns the arguments into workload names ("all" is every workload).
func expand(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("name at least one workload: " + strings.Join(workloads, ", ") + ", or all")
	}
	var out []string
	for _, a := range args {
		if a == "all" {
			out = append(out, workloads...)
			continue
		}
		known := false
		for _, w := range append(workloads, apartWorkloads...) {
			known = known || w == a
		}
		if !known {
			return nil, fmt.Errorf("unknown workload %q; known: %s, all, %s", a, strings.Join(workloads, ", "), strings.Join(apartWorkloads, ", "))
		}
		out = append(out, a)
	}
	return out, nil
}

// run runs the named workloads one after another and reports them.
func run(ctx context.Context, o options, names []string) ([]*benchkit.Result, error) {
	if o.Clients < 0 || o.Leases <= 0 || o.Locks <= 0 || o.WaitMs <= 0 || o.TTL < 500*time.Millisecond || o.LeaseTTL < 500*time.Millisecond {
		return nil, cli.Exit("--clients must be >= 0, --leases, --locks and --wait-ms > 0, --ttl and --lease-ttl >= 500ms", 2)
	}
	if o.Batch < 0 || o.Batch > api.MaxKeepAliveBatch {
		return nil, cli.Exit(fmt.Sprintf("--batch must be 0 to %d", api.MaxKeepAliveBatch), 2)
	}
	progress := o.Stderr
	if o.Quiet {
		progress = nil
	}
	hc := newHTTPClient(max(o.Clients, 256))
	defer hc.close()
	cv, err := discover(ctx, hc, o.Endpoints, o.PIDs, o.StateDir)
	if err != nil {
		return nil, err
	}
	b := &backend{hc: hc, cv: cv, ttlMs: o.TTL.Milliseconds(), waitMs: o.WaitMs}
	var results []*benchkit.Result
	logf(progress, "raftlock-bench on %s; %d server process(es) found for CPU readings %v", benchkit.Machine(), len(cv.pids), cv.pids)
	for _, name := range names {
		if err := b.aim(ctx, o); err != nil {
			return results, err
		}
		var r *benchkit.Result
		switch name {
		case "keepalive":
			r, err = runKeepalive(ctx, o, b, progress)
		case "scale":
			r, err = runScale(ctx, o, b, progress)
		case "rejoin":
			if o.Restarts <= 0 || o.RejoinLocks < 0 {
				return results, cli.Exit("--restarts must be > 0 and --rejoin-locks >= 0", 2)
			}
			r, err = runRejoin(ctx, o, b, progress)
		case "neighbour":
			var rs []*benchkit.Result
			rs, err = runNeighbour(ctx, o, b, progress)
			results = append(results, rs...)
			if err != nil {
				return results, fmt.Errorf("%s: %w", name, err)
			}
			continue
		default:
			clients := o.Clients
			if clients == 0 {
				clients = benchkit.DefaultClients(name)
			}
			r, err = benchkit.Run(ctx, b, benchkit.Config{Workload: name, Clients: clients, Duration: o.Duration, Warmup: o.Warmup, Progress: progress})
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		if o.Label != "" {
			r.System = o.Label
		}
		results = append(results, r)
	}
	return results, benchkit.Emit(o.Stdout, "raftlock-bench", results, o.JSON, o.JSONOut)
}

// aim points the lock traffic at the leader (or at every endpoint with --target all).
func (b *backend) aim(ctx context.Context, o options) error {
	switch o.Target {
	case "leader":
		l, err := b.cv.leader(ctx, b.hc)
		if err != nil {
			return err
		}
		b.bases = []string{l.URL()}
		b.target = fmt.Sprintf("all requests to the leader %s at %s", l.ID, l.URL())
	case "all":
		b.bases = nil
		for _, ep := range o.Endpoints {
			b.bases = append(b.bases, strings.TrimRight(ep, "/"))
		}
		b.target = fmt.Sprintf("clients spread over %s (followers forward to the leader)", strings.Join(b.bases, ", "))
	default:
		return cli.Exit(fmt.Sprintf("--target %q: want leader or all", o.Target), 2)
	}
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}
