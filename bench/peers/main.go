// Command peers-bench runs raftlock's lock workloads against the lock services users weigh
// it against besides etcd (bench/etcd): a ZooKeeper ensemble through the Curator-style
// recipe of go-zookeeper/zk's Lock, and a Redis server through SET NX PX with a Lua
// compare-and-delete release (go-redis). Redis is not a safe lock service (no fencing, no
// consensus) and its results say so; it is here for what that buys.
//
//	peers-bench --system zookeeper|redis [flags] WORKLOAD...   uncontended parallel contended shared semaphore, or all
//
// Neither peer has a shared lock or a semaphore recipe in its client, so those workloads
// produce a result that says "n/a" and why, for the one table of every system that
// scripts/bench.sh prints. It lives in a module of its own so that raftlock itself keeps no
// ZooKeeper or Redis dependency; the workload loops, the statistics and the report are
// raftlock's bench/benchkit, shared with raftlock-bench and etcd-bench, so every system is
// driven and measured the same way. Server CPU is read from /proc for the server
// processes (--pids, the pid files of scripts/zk-local.sh or scripts/redis-local.sh, or a
// scan for the local servers).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/raftlock/raftlock/bench/benchkit"
)

func main() { benchkit.Main("peers-bench", run) }

// options are the command's flags.
type options struct {
	benchkit.RunFlags
	system     string
	endpoints  string
	ttl        time.Duration
	backoffMin time.Duration
	backoffMax time.Duration
	pids       string
	state      string
	label      string
}

// peer is a backend with what peers-bench needs besides benchkit's interfaces.
type peer interface {
	benchkit.Backend
	benchkit.Unsupported
	// Note describes the recipe, the client and the server, for every result.
	Note() string
}

var allWorkloads = []string{benchkit.Uncontended, benchkit.Parallel, benchkit.Contended, benchkit.Shared, benchkit.Semaphore}

// systems are the peers --system names: the servers of their local script
// (scripts/zk-local.sh, scripts/redis-local.sh) and the variable that holds its state
// directory, the defaults of --endpoints and --state.
var systems = map[string]struct{ endpoints, stateEnv string }{
	"zookeeper": {"127.0.0.1:21811,127.0.0.1:21812,127.0.0.1:21813", "ZK_STATE"},
	"redis":     {"127.0.0.1:63791", "REDIS_STATE"},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	var o options
	fs := flag.NewFlagSet("peers-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.system, "system", "", "the peer: zookeeper or redis")
	fs.StringVar(&o.endpoints, "endpoints", "", "servers, comma-separated host:port (default: zookeeper 127.0.0.1:21811,21812,21813 of scripts/zk-local.sh; redis 127.0.0.1:63791 of scripts/redis-local.sh)")
	o.Register(fs)
	fs.DurationVar(&o.ttl, "ttl", 10*time.Second, "zookeeper: session timeout; redis: each lock's PX")
	fs.DurationVar(&o.backoffMin, "backoff-min", time.Millisecond, "redis: first delay before trying a held lock again")
	fs.DurationVar(&o.backoffMax, "backoff-max", 64*time.Millisecond, "redis: the longest delay (each retry doubles it up to this)")
	fs.StringVar(&o.pids, "pids", "", "server pids to charge CPU to, comma-separated (default: the pid files under --state, else a scan for the local servers)")
	fs.StringVar(&o.state, "state", "", "state directory of scripts/zk-local.sh or scripts/redis-local.sh, for pid files (default $ZK_STATE or $REDIS_STATE)")
	fs.StringVar(&o.label, "label", "", "name the system in the results (e.g. redis-always)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: peers-bench --system zookeeper|redis [flags] WORKLOAD...   (uncontended, parallel, contended, shared, semaphore, or all)")
		fs.PrintDefaults()
	}
	names, err := benchkit.ParseWorkloads(fs, args, allWorkloads, nil)
	if names == nil {
		return 2, err
	}

	sys, ok := systems[o.system]
	if !ok {
		return 2, fmt.Errorf("--system %q: want zookeeper or redis", o.system)
	}
	if o.endpoints == "" {
		o.endpoints = sys.endpoints
	}
	if o.state == "" {
		o.state = os.Getenv(sys.stateEnv)
	}
	var b peer
	if o.system == "redis" {
		rb, err := newRedisBackend(ctx, o)
		if err != nil {
			return 1, err
		}
		defer rb.close()
		b = rb
	} else {
		zb, err := newZKBackend(ctx, o)
		if err != nil {
			return 1, err
		}
		b = zb
	}
	progress := o.Progress(stderr)
	if progress != nil {
		fmt.Fprintf(progress, "peers-bench %s on %s; %d server process(es) found for CPU readings %v; %s\n", b.Name(), benchkit.Machine(), len(b.ServerPIDs()), b.ServerPIDs(), b.Target())
	}
	var results []*benchkit.Result
	for _, name := range names {
		cfg := o.Config(name, progress)
		var r *benchkit.Result
		if name == benchkit.Shared || name == benchkit.Semaphore {
			// Neither peer's client has these recipes: say so in the table rather than
			// writing one here.
			r = &benchkit.Result{System: b.Name(), Workload: name, Clients: cfg.Clients, Op: "grant", Unsupported: b.Unsupported(name)}
			if u, ok := b.(benchkit.Unsafer); ok {
				r.Unsafe = u.Unsafe()
			}
		} else {
			var refused0 int64
			rb, isRedis := b.(*redisBackend)
			if isRedis {
				refused0 = rb.refused.Load()
			}
			var err error
			r, err = benchkit.Run(ctx, b, cfg)
			if err != nil {
				return 1, fmt.Errorf("%s: %w", name, err)
			}
			r.Notes = append(r.Notes, b.Note())
			if isRedis && r.Ops > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("SET NX answered 'held' %d times in the run (warm-up included), %.2f per %s measured",
					rb.refused.Load()-refused0, float64(rb.refused.Load()-refused0)/float64(r.Ops), r.Op))
			}
		}
		if o.label != "" {
			r.System = o.label
		}
		results = append(results, r)
	}
	return o.Finish(stdout, "peers-bench", results)
}

// serverPIDs finds the server processes: pids given, the pid files under the state
// directory (glob names the per-server subdirectories, "" for one server), or a /proc scan.
func serverPIDs(o options, glob string, match func(args []string) bool) ([]int, error) {
	var pidGlob string
	if o.state != "" {
		pidGlob = filepath.Join(o.state, glob, "pid")
	}
	pids, err := benchkit.ServerPIDs(o.pids, pidGlob, match)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return nil, errors.New("no server process found to read CPU from; pass --pids or --state")
	}
	return pids, nil
}
