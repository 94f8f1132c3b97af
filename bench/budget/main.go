// Command budget measures raftlock's latency budget: where the time of one commit goes,
// stage by stage, beside each stage's physical floor on this machine
// (docs/PERFORMANCE.md "Latency budget").
//
//	go run ./bench/budget [--cycles 500] [--warmup 50] [--stores boltdb,wal]
//
// For each log store it starts a three-node cluster inside this process (real raft over
// loopback TCP, real log stores with fsync on disk, the HTTP API on loopback: the same
// cluster and transport code as `raftlock serve`, on ports picked at random in
// 20000-32767), all nodes recording into one internal/budget Recorder, and drives
// uncontended acquire + release cycles of one lease over HTTP, alternately through the
// leader and through a follower (which forwards to the leader). Each request is one
// commit; the table gives every stage's p50 and p99 over all of them, the stage's floor
// (measured first: fdatasync in the data directory, a loopback round trip, a goroutine
// hand-off, JSON coding, the state machine's apply on its own) and the gap between p50 and
// floor.
//
// All three nodes share one Go runtime (GOMAXPROCS as the machine has), and the client
// runs in it too: figures are a little higher than with three processes, and the load
// average of the machine is printed with them.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/internal/budget"
)

func main() {
	benchkit.MainErr("budget", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// options are the command's flags.
type options struct {
	cycles, warmup int
	stores         []cluster.LogStoreKind
	dir            string
	floorSamples   int
	logLevel       string
	// floorsOnly prints the floors and measures no cluster: make bench puts them beside
	// its figures (scripts/bench.sh), in the same sitting.
	floorsOnly bool
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("budget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	fs.IntVar(&o.cycles, "cycles", 500, "measured acquire + release cycles through each of the leader and a follower, per store")
	fs.IntVar(&o.warmup, "warmup", 50, "unmeasured cycles before them")
	stores := fs.String("stores", "boltdb,wal", "log stores to measure, comma-separated")
	fs.StringVar(&o.dir, "data-dir", "", "parent of the nodes' data directories (default: a new temporary directory, removed at exit)")
	fs.IntVar(&o.floorSamples, "floor-samples", 500, "fdatasync samples for the floor (ten times as many of the cheaper floors)")
	fs.BoolVar(&o.floorsOnly, "floors-only", false, "print the floors (fdatasync, loopback round trip, ...) and stop: no cluster is started")
	fs.StringVar(&o.logLevel, "log-level", "off", "the nodes' log level (off by default: stopping a cluster logs connection errors)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.cycles < 1 || o.warmup < 0 || o.floorSamples < 1 {
		return o, errors.New("--cycles and --floor-samples must be >= 1, --warmup >= 0")
	}
	for _, s := range strings.Split(*stores, ",") {
		k, err := cluster.ParseLogStoreKind(strings.TrimSpace(s))
		if err != nil {
			return o, err
		}
		o.stores = append(o.stores, k)
	}
	return o, nil
}

// result is one store's measurement.
type result struct {
	store    cluster.LogStoreKind
	budgets  []budget.Budget
	client   map[string]time.Duration // client-side round trip by tag
	loadavg  [2]string                // before and after
	duration time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "budget", Level: hclog.Info, Output: stderr})
	nodeLogger := hclog.New(&hclog.LoggerOptions{Name: "budget", Level: hclog.LevelFromString(o.logLevel), Output: stderr})
	if o.dir == "" {
		d, err := os.MkdirTemp("", "raftlock-budget-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		o.dir = d
	}
	sink, err := installRaftSink()
	if err != nil {
		return err
	}
	logger.Info("measuring floors", "dir", o.dir)
	fl, err := measureFloors(o.dir, o.floorSamples)
	if err != nil {
		return fmt.Errorf("floors: %w", err)
	}
	if o.floorsOnly {
		fmt.Fprintf(stdout, "floors, %s, %s\n", machine(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
		printFloors(stdout, fl)
		return nil
	}
	var results []*result
	for _, store := range o.stores {
		r, err := measureStore(ctx, o, store, sink, logger, nodeLogger)
		if err != nil {
			return fmt.Errorf("%s: %w", store, err)
		}
		results = append(results, r)
	}
	fmt.Fprintf(stdout, "raftlock latency budget, %s, GOMAXPROCS %d, %s\n\n", machine(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	printFloors(stdout, fl)
	for _, r := range results {
		fmt.Fprintln(stdout)
		printTable(stdout, r, fl)
	}
	return nil
}

// measureStore runs the cycles against a fresh cluster on one log store.
func measureStore(ctx context.Context, o options, store cluster.LogStoreKind, sink *raftSink, logger, nodeLogger hclog.Logger) (*result, error) {
	dir, err := os.MkdirTemp(o.dir, string(store)+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rec := budget.New()
	sink.rec.Store(rec)
	defer sink.rec.Store(nil)
	c, err := startCluster(ctx, dir, store, rec, nodeLogger)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	leader, follower := c.leader(), c.follower()
	if leader == nil || follower == nil {
		return nil, errors.New("no leader or no follower")
	}
	d := newDriver(leader.url, "budget/"+string(store))
	defer d.hc.CloseIdleConnections()
	if err := d.createLease(ctx); err != nil {
		return nil, err
	}
	targets := []string{leader.url, follower.url}
	for i := 0; i < 2*o.warmup; i++ {
		if err := d.cycle(ctx, targets[i%2], ""); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	res := &result{store: store, client: map[string]time.Duration{}}
	res.loadavg[0] = loadavg()
	rec.Reset()
	start := time.Now()
	for i := 0; i < 2*o.cycles; i++ {
		tag := strconv.Itoa(i)
		if err := d.cycle(ctx, targets[i%2], tag); err != nil {
			return nil, err
		}
	}
	res.duration = time.Since(start)
	res.loadavg[1] = loadavg()
	for k, v := range d.rtt {
		res.client[k] = v
	}
	res.budgets = rec.Budgets()
	if n := rec.Dropped(); n > 0 {
		logger.Warn("records dropped", "count", n)
	}
	logger.Info("measured", "store", store, "cycles", 2*o.cycles, "commits", len(res.budgets), "took", res.duration.Round(time.Millisecond))
	return res, nil
}

// driver is the benchmark's HTTP client: one lease, one lock, keep-alive connections.
type driver struct {
	hc      *http.Client
	leader  string
	lock    string
	leaseID string
	rtt     map[string]time.Duration
}

func newDriver(leader, lock string) *driver {
	return &driver{
		hc:     &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second},
		leader: leader, lock: lock, rtt: map[string]time.Duration{},
	}
}

// do sends one request and decodes a 200 answer into out; tag labels it for the budget.
func (d *driver) do(ctx context.Context, method, url, tag string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if tag != "" {
		req.Header.Set("X-Raftlock-Budget-Tag", tag)
	}
	start := time.Now()
	resp, err := d.hc.Do(req)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if tag != "" {
		d.rtt[tag] = time.Since(start)
	}
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

func (d *driver) createLease(ctx context.Context) error {
	var l api.Lease
	if err := d.do(ctx, http.MethodPost, d.leader+"/v1/leases", "", api.CreateLeaseRequest{TTLMs: 86_400_000}, &l); err != nil {
		return err
	}
	d.leaseID = l.LeaseID
	return nil
}

// cycle takes the lock and releases it through base, tagging the requests tag+"a" and
// tag+"r" (no tag: not measured).
func (d *driver) cycle(ctx context.Context, base, tag string) error {
	at, rt := "", ""
	if tag != "" {
		at, rt = tag+"a", tag+"r"
	}
	var g api.Grant
	if err := d.do(ctx, http.MethodPut, base+"/v1/locks/"+d.lock, at, api.AcquireRequest{LeaseID: d.leaseID}, &g); err != nil {
		return err
	}
	var rr api.ReleaseResult
	return d.do(ctx, http.MethodDelete, base+"/v1/locks/"+d.lock, rt, api.ReleaseRequest{LeaseID: d.leaseID, Token: g.Token}, &rr)
}

// loadavg returns the first three fields of /proc/loadavg, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// machine describes the machine in a few words.
func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}
