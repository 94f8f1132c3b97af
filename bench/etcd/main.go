// Command etcd-bench runs raftlock's lock workloads (uncontended, parallel, contended)
// against an etcd cluster with the standard Go client's concurrency.Mutex, and the
// shared workload (90% shared, 10% exclusive) with etcd's nearest recipe, the RWMutex of
// client/v3/experimental/recipes. etcd has no semaphore, so there is no semaphore
// workload here. One concurrency.Session (lease, 10 s TTL by default) per client; it
// prints the same table as raftlock-bench, so that scripts/bench.sh can put the two side
// by side.
//
//	etcd-bench [flags] WORKLOAD...      uncontended parallel contended shared, or all
//
// It lives in a module of its own so that raftlock itself keeps no etcd dependency. The
// workload loops, the statistics and the report are raftlock's bench/benchkit, shared
// with raftlock-bench, so both systems are driven and measured the same way. Like
// raftlock-bench it sends every request to the leader (found with the Status API), and
// reads the CPU of the etcd processes from /proc.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/raftlock/raftlock/bench/benchkit"
)

func main() { benchkit.Main("etcd-bench", run) }

// options are the command's flags.
type options struct {
	benchkit.RunFlags
	endpoints string
	target    string
	ttl       int
	pids      string
	state     string
}

// workloads are those etcd has a recipe for, in the order "all" runs them.
var workloads = []string{benchkit.Uncontended, benchkit.Parallel, benchkit.Contended, benchkit.Shared}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var o options
	fs := flag.NewFlagSet("etcd-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoints, "endpoints", "127.0.0.1:12379,127.0.0.1:22379,127.0.0.1:32379", "etcd client endpoints, comma-separated")
	fs.StringVar(&o.target, "target", "leader", "where requests go: 'leader' (found with the Status API) or 'all' (the client balances over every endpoint)")
	o.Register(fs)
	fs.IntVar(&o.ttl, "ttl", 10, "session (lease) TTL in seconds")
	fs.StringVar(&o.pids, "pids", "", "etcd pids to charge CPU to, comma-separated (default: $ETCD_STATE/*/pid, else the local etcd processes serving the endpoints)")
	fs.StringVar(&o.state, "state", os.Getenv("ETCD_STATE"), "state directory of scripts/etcd-local.sh, for pid files")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: etcd-bench [flags] WORKLOAD...   (uncontended, parallel, contended, shared, or all; etcd has no semaphore)")
		fs.PrintDefaults()
	}
	names, err := benchkit.ParseWorkloads(fs, args, workloads, map[string]string{benchkit.Semaphore: noSemaphore})
	if names == nil {
		return 2, err
	}
	progress := o.Progress(stderr)

	b, err := newBackend(ctx, o)
	if err != nil {
		return 1, err
	}
	defer b.cli.Close()
	if progress != nil {
		fmt.Fprintf(progress, "etcd-bench on %s; %d etcd process(es) found for CPU readings %v; %s\n", benchkit.Machine(), len(b.pids), b.pids, b.target)
	}
	var results []*benchkit.Result
	for _, name := range names {
		cfg := o.Config(name, progress)
		r, err := benchkit.Run(ctx, b, cfg)
		if err != nil {
			return 1, fmt.Errorf("%s: %w", name, err)
		}
		recipe := "concurrency.Mutex"
		if name == benchkit.Shared {
			recipe = "experimental/recipes RWMutex (no fencing value: tokens not checked)"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("%s, one concurrency.Session per client (TTL %d s), etcd %s", recipe, o.ttl, b.version))
		results = append(results, r)
	}
	return o.Finish(stdout, "etcd-bench", results)
}

// findLeader returns the endpoint of the etcd leader and the server version.
func findLeader(ctx context.Context, endpoints []string) (string, string, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", "", err
	}
	defer cli.Close()
	deadline := time.Now().Add(15 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		for _, ep := range endpoints {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := cli.Status(sctx, ep)
			cancel()
			if err != nil {
				last = err
				continue
			}
			if st.Leader != 0 && st.Leader == st.Header.MemberId {
				return ep, st.Version, nil
			}
		}
		benchkit.Sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
	}
	return "", "", fmt.Errorf("no leader among %v within 15 s: %w", endpoints, errors.Join(last, errors.New("no member says it leads")))
}

// serverPIDs finds the etcd processes: pids given, pid files, or a /proc scan for etcd
// processes whose --listen-client-urls names one of the endpoints.
func serverPIDs(o options, endpoints []string) ([]int, error) {
	var pidGlob string
	if o.state != "" {
		pidGlob = filepath.Join(o.state, "*", "pid")
	}
	return benchkit.ServerPIDs(o.pids, pidGlob, func(args []string) bool {
		if filepath.Base(args[0]) != "etcd" {
			return false
		}
		urls := benchkit.FlagValue(args, "--listen-client-urls")
		for _, ep := range endpoints {
			if urls != "" && strings.Contains(urls, strings.TrimPrefix(strings.TrimPrefix(ep, "http://"), "https://")) {
				return true
			}
		}
		return false
	})
}
