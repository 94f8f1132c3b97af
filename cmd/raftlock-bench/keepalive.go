package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

// The keepalive targets (docs/PERFORMANCE.md), stated for 100,000 live leases renewed at TTL/3.
const (
	keepaliveTargetLeases     = 100_000
	keepaliveTargetEntries    = 10 // log entries per second, at most
	keepaliveTargetLeaderCPU  = 1  // cores on the leader, under
	keepaliveInFlightSeconds  = 0.25
	keepaliveMaxWorkers       = 8192
	keepaliveRequestTimeout   = 5 * time.Second
	keepaliveCreateRetryLimit = 3
	keepaliveBatchCreators    = 256
)

// keepaliveRun is the shared state of the keepalive workload.
type keepaliveRun struct {
	b         *backend
	hc        *httpClient
	base      string
	ttlMs     int64
	interval  time.Duration
	workers   int
	leases    int
	batch     int // lease IDs per request; 0: one request per lease on the URL route
	created   atomic.Int64
	creators  sync.WaitGroup // workers still creating their leases
	measuring atomic.Bool
	ops       atomic.Int64
	errors    atomic.Int64
	late      atomic.Int64
	errSample benchkit.Samples
	samples   [][]time.Duration
}

func (k *keepaliveRun) fail(err error) {
	k.errors.Add(1)
	k.errSample.Add(err.Error())
}

// runKeepalive creates --leases leases on the leader and keeps each alive every TTL/3,
// evenly spread in time, then measures how many log entries per second and how much
// leader CPU that costs. Keepalives are batched by the leader into Renew entries, so the
// entry rate depends on the renew window, not on the number of leases.
func runKeepalive(ctx context.Context, o options, b *backend, progress io.Writer) (*benchkit.Result, error) {
	leader, err := b.cv.leader(ctx, b.hc)
	if err != nil {
		return nil, err
	}
	k := &keepaliveRun{b: b, base: leader.URL(), ttlMs: o.LeaseTTL.Milliseconds(), interval: (o.LeaseTTL / 3).Round(time.Millisecond), leases: o.Leases, batch: o.Batch}
	rate := float64(k.leases) / k.interval.Seconds()
	// Each worker has one request in flight; a keepalive waits for the leader's renew
	// window and a commit, so give every worker a quarter of a second per request.
	k.workers = min(k.leases, keepaliveMaxWorkers, max(8, int(math.Ceil(rate*keepaliveInFlightSeconds))))
	if k.batch > 0 {
		// One batch of each worker's leases per interval: as many workers as batches, and
		// enough of them (each creates its share of the leases one after another) to fill
		// the leases at a fair rate.
		k.workers = min(k.leases, max(keepaliveBatchCreators, int(math.Ceil(float64(k.leases)/float64(k.batch)))))
	}
	k.samples = make([][]time.Duration, k.workers)
	k.hc = newHTTPClient(k.workers)
	defer k.hc.close()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	k.creators.Add(k.workers)
	for w := 0; w < k.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.worker(runCtx, w)
		}()
	}
	logf(progress, "keepalive: %d leases with TTL %v, each renewed every %v (%.0f keepalives/s) by %d clients (batch %d), on the leader %s",
		k.leases, o.LeaseTTL, k.interval, rate, k.workers, k.batch, leader.ID)
	createStart := time.Now()
	allMade := make(chan struct{})
	go func() { k.creators.Wait(); close(allMade) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for creating := true; creating; {
		select {
		case <-allMade:
			creating = false
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			logf(progress, "raftlock keepalive   creating leases: %d of %d, errors %d", k.created.Load(), k.leases, k.errors.Load())
			if time.Since(createStart) > 10*time.Minute {
				return nil, errors.New("creating the leases took more than 10 minutes")
			}
		}
	}
	createTime := time.Since(createStart)
	if made := int(k.created.Load()); made < k.leases {
		return nil, fmt.Errorf("only %d of %d leases could be created: %v", made, k.leases, k.errSample.List())
	}
	// Let every lease be renewed once before measuring, so the load is steady.
	benchkit.Sleep(ctx, max(o.Warmup, k.interval))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	meter := benchkit.NewCPUMeter(b.cv.pids)
	info0, err := nodeInfo(ctx, b.hc, leader)
	if err != nil {
		return nil, err
	}
	leaderCPU0, leaderErr := benchkit.ProcCPU(leader.PID)
	followers := map[string]time.Duration{}
	for _, n := range b.cv.nodes {
		if n.ID != leader.ID && n.PID != 0 {
			if cpu, err := benchkit.ProcCPU(n.PID); err == nil {
				followers[n.ID] = cpu
			}
		}
	}
	meter.Start()
	errs0, retries0 := k.errors.Load(), b.Retries()
	k.measuring.Store(true)
	start, lastCommit, lastOps, lastT := time.Now(), info0.CommitIndex, int64(0), time.Now()
	for time.Since(start) < o.Duration && ctx.Err() == nil {
		benchkit.Sleep(ctx, time.Second)
		now := time.Now()
		ops := k.ops.Load()
		if info, err := nodeInfo(ctx, b.hc, leader); err == nil {
			dt := now.Sub(lastT).Seconds()
			logf(progress, "raftlock keepalive  %3.0fs  %8.0f keepalives/s  %6.1f log entries/s  errors %d  late %d",
				now.Sub(start).Seconds(), float64(ops-lastOps)/dt, float64(info.CommitIndex-lastCommit)/dt, k.errors.Load()-errs0, k.late.Load())
			lastCommit = info.CommitIndex
		}
		lastOps, lastT = ops, now
	}
	info1, infoErr := nodeInfo(ctx, b.hc, leader)
	leaderCPU1, leaderErr1 := benchkit.ProcCPU(leader.PID)
	followerCores := map[string]float64{}
	for _, n := range b.cv.nodes {
		if cpu0, ok := followers[n.ID]; ok {
			if cpu1, err := benchkit.ProcCPU(n.PID); err == nil {
				followerCores[n.ID] = (cpu1 - cpu0).Seconds()
			}
		}
	}
	k.measuring.Store(false)
	use := meter.Stop()
	retries := b.Retries() - retries0
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	res := &benchkit.Result{
		System: "raftlock", Workload: "keepalive", Clients: k.workers, Op: "keepalive",
		Target: fmt.Sprintf("keepalives to the leader %s at %s", leader.ID, leader.URL()),
		Ops:    k.ops.Load(), Errors: k.errors.Load() - errs0, ErrSamples: k.errSample.List(), Retries: retries,
	}
	var all []time.Duration
	for _, s := range k.samples {
		all = append(all, s...)
	}
	res.Latency = benchkit.Summarize(all)
	res.SetCPU(use)
	secs := use.Wall.Seconds()
	res.Metrics = append(res.Metrics,
		benchkit.Metric{Name: "live leases", Value: float64(k.leases), Unit: fmt.Sprintf("(TTL %v, renewed every %v)", o.LeaseTTL, k.interval)},
		benchkit.Metric{Name: "lease creation", Value: float64(k.leases) / createTime.Seconds(), Unit: "leases/s"},
	)
	scaleNote := ""
	if k.leases != keepaliveTargetLeases {
		scaleNote = fmt.Sprintf(" [target stated for %d leases]", keepaliveTargetLeases)
	}
	if infoErr == nil {
		entries := benchkit.Metric{Name: "log entries per second" + scaleNote, Value: float64(info1.CommitIndex-info0.CommitIndex) / secs, Unit: "entries/s"}
		res.Metrics = append(res.Metrics, entries.Check(true, keepaliveTargetEntries))
	}
	if leader.PID != 0 && leaderErr == nil && leaderErr1 == nil {
		cores := benchkit.Metric{Name: "leader CPU" + scaleNote, Value: (leaderCPU1 - leaderCPU0).Seconds() / secs, Unit: "cores"}
		res.Metrics = append(res.Metrics, cores.Check(true, keepaliveTargetLeaderCPU))
	} else {
		res.Notes = append(res.Notes, "leader CPU not measured: the leader's process was not found (see --pids)")
	}
	for _, n := range b.cv.nodes {
		if v, ok := followerCores[n.ID]; ok {
			res.Metrics = append(res.Metrics, benchkit.Metric{Name: "follower CPU " + n.ID, Value: v / secs, Unit: "cores"})
		}
	}
	if k.batch > 0 {
		res.Metrics = append(res.Metrics, benchkit.Metric{Name: "lease IDs per keepalive request", Value: float64(k.batch), Unit: "(--batch; ops count leases renewed)"})
	}
	res.Metrics = append(res.Metrics, benchkit.Metric{Name: "keepalives sent more than half an interval late", Value: float64(k.late.Load()), Unit: "(load generator falling behind)"})
	if now, err := b.cv.leader(ctx, b.hc); err == nil && now.ID != leader.ID {
		res.Notes = append(res.Notes, fmt.Sprintf("LEADERSHIP CHANGED during the run (%s -> %s): the leader CPU above is %s's, and keepalives were forwarded", leader.ID, now.ID, leader.ID))
	}
	res.Notes = append(res.Notes, "the leases are left to expire after the run")
	return res, nil
}

// worker creates its share of the leases, then renews them one after another, each once
// per interval, evenly spaced.
func (k *keepaliveRun) worker(ctx context.Context, w int) {
	body, _ := json.Marshal(api.CreateLeaseRequest{TTLMs: k.ttlMs})
	create := func() (string, bool) {
		for try := 0; try < keepaliveCreateRetryLimit && ctx.Err() == nil; try++ {
			var l api.Lease
			cctx, cancel := context.WithTimeout(ctx, keepaliveRequestTimeout)
			err := k.b.retry(cctx, func() error { return k.hc.do(cctx, "POST", k.base+"/v1/leases", body, &l) })
			cancel()
			if err == nil {
				return l.LeaseID, true
			}
			if ctx.Err() == nil {
				k.fail(fmt.Errorf("create lease: %w", err))
			}
		}
		return "", false
	}
	var ids []string
	renewed := time.Now()
	for j := w; j < k.leases; j += k.workers {
		id, ok := create()
		if !ok {
			k.creators.Done()
			return
		}
		ids = append(ids, id)
		k.created.Add(1)
		if k.batch > 0 && time.Since(renewed) > k.interval {
			// Creating a large share takes longer than a TTL: keep what is made alive
			// meanwhile (unmeasured), or the first leases expire before their first renewal.
			k.renewWhileCreating(ctx, ids)
			renewed = time.Now()
		}
	}
	k.creators.Done()
	if len(ids) == 0 {
		return
	}
	// Each request renews one lease (batch 0, on the URL route) or a chunk of up to
	// k.batch of this worker's leases (the batch form); the chunks are spread evenly over
	// the interval.
	size := max(1, k.batch)
	var chunks [][]string
	for i := 0; i < len(ids); i += size {
		chunks = append(chunks, ids[i:min(i+size, len(ids))])
	}
	step := k.interval / time.Duration(len(chunks))
	due := time.Now().Add(step * time.Duration(w) / time.Duration(k.workers))
	for i := 0; ctx.Err() == nil; i = (i + 1) % len(chunks) {
		if wait := time.Until(due); wait > 0 {
			benchkit.Sleep(ctx, wait)
		} else if -wait > k.interval/2 {
			if k.measuring.Load() {
				k.late.Add(1)
			}
			if -wait > k.interval {
				due = time.Now() // hopelessly behind: do not burst to catch up
			}
		}
		due = due.Add(step)
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, keepaliveRequestTimeout)
		var notFound []string
		var err error
		if k.batch == 0 {
			err = k.b.retry(cctx, func() error {
				return k.hc.do(cctx, "POST", k.base+"/v1/leases/"+chunks[i][0]+"/keepalive", nil, nil)
			})
			if errors.Is(err, &api.Error{Code: api.CodeLeaseNotFound}) {
				notFound = chunks[i]
			}
		} else {
			body, _ := json.Marshal(api.KeepAliveRequest{LeaseIDs: chunks[i]})
			var out api.KeepAliveBatch
			err = k.b.retry(cctx, func() error { return k.hc.do(cctx, "POST", k.base+"/v1/leases/keepalive", body, &out) })
			if err == nil && len(out.NotFound) > 0 {
				notFound = out.NotFound
				err = fmt.Errorf("%d leases not found", len(out.NotFound))
			}
		}
		cancel()
		switch {
		case err == nil:
			if k.measuring.Load() {
				k.samples[w] = append(k.samples[w], time.Since(start))
				k.ops.Add(int64(len(chunks[i])))
			}
		case ctx.Err() != nil:
			return
		default:
			if k.measuring.Load() {
				k.fail(fmt.Errorf("keepalive: %w", err))
			}
			for _, gone := range notFound {
				if id, ok := create(); ok {
					for j, v := range chunks[i] {
						if v == gone {
							chunks[i][j] = id // keep the number of live leases constant
						}
					}
				}
			}
		}
	}
}

// renewWhileCreating renews ids, in batches, while a worker is still creating its share.
func (k *keepaliveRun) renewWhileCreating(ctx context.Context, ids []string) {
	for i := 0; i < len(ids); i += k.batch {
		body, _ := json.Marshal(api.KeepAliveRequest{LeaseIDs: ids[i:min(i+k.batch, len(ids))]})
		cctx, cancel := context.WithTimeout(ctx, keepaliveRequestTimeout)
		if err := k.b.retry(cctx, func() error { return k.hc.do(cctx, "POST", k.base+"/v1/leases/keepalive", body, nil) }); err != nil && ctx.Err() == nil {
			k.fail(fmt.Errorf("keepalive while creating: %w", err))
		}
		cancel()
	}
}
