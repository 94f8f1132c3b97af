package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

// The scale targets (docs/PERFORMANCE.md), stated for 1,000,000 held locks.
const (
	scaleTargetLocks   = 1_000_000
	scaleTargetRSSMiB  = 1024
	scaleTargetRestart = 10 // seconds to ready
	scaleLeaseTTL      = 60 * time.Second
	scaleDefaultFill   = 64
	scaleSnapshotWait  = 2 * time.Minute
	scaleTargetStallMs = 50 // longest probe cycle while a snapshot of the locks is written
	// scaleFillers is how many clients keep the log growing while the snapshots are
	// waited for: enough to pass a threshold of entries within seconds, few enough that
	// their queueing does not hide the probe's stall.
	scaleFillers   = 16
	scaleReadyWait = 2 * time.Minute
)

// runScale fills the cluster with --locks held locks and reports each node's memory,
// the size and write time of a snapshot holding them all, and how long a follower takes
// from restart to ready. The locks are held by a few leases (one per filling client),
// kept alive, and revoked at the end unless --keep.
func runScale(ctx context.Context, o options, b *backend, progress io.Writer) (*benchkit.Result, error) {
	leader, err := b.cv.leader(ctx, b.hc)
	if err != nil {
		return nil, err
	}
	total := o.Locks
	clients := o.Clients
	if clients == 0 {
		clients = scaleDefaultFill
		// Each client holds its locks on one lease, and the cluster's quota bounds the locks
		// per lease (10,000 by default): 1,000,000 locks need over 100 leases, not 64.
		// A fresh cluster reports no limits until it reaches protocol version 2, a moment
		// after its first leader: assume the servers' default until then.
		per := 10_000
		if info, err := clusterInfo(ctx, b.hc, []string{leader.URL()}, 10*time.Second); err == nil && info.Limits.MaxLocksPerLease > 0 {
			per = int(info.Limits.MaxLocksPerLease)
		}
		// A quarter more leases than the bare quotient: the clients take names from one
		// counter, so some fill their lease faster than others.
		if total*5/4 > clients*per {
			clients = (total*5/4 + per - 1) / per
		}
	}
	prefix := "bench/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/scale/"
	res := &benchkit.Result{System: "raftlock", Workload: "scale", Clients: clients, Op: "acquire",
		Target: fmt.Sprintf("acquires to the leader %s at %s", leader.ID, leader.URL())}
	before := memory(b.cv)
	retries0 := b.Retries()

	sessions := make([]*session, clients)
	for i := range sessions {
		if sessions[i], err = b.newSession(ctx, i, scaleLeaseTTL.Milliseconds()); err != nil {
			closeAll(sessions)
			return nil, err
		}
	}
	released := false
	defer func() {
		if !released {
			closeAll(sessions)
		}
	}()

	// Fill.
	var next, held, errs atomic.Int64
	var errSamples benchkit.Samples
	lat := make([][]time.Duration, clients)
	meter := benchkit.NewCPUMeter(b.cv.pids)
	meter.Start()
	var wg sync.WaitGroup
	for i, s := range sessions {
		body, _ := json.Marshal(api.AcquireRequest{LeaseID: s.lease})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				j := next.Add(1) - 1
				if j >= int64(total) {
					return
				}
				start := time.Now()
				if _, err := s.acquire(ctx, fmt.Sprintf("%s%07d", prefix, j), body, 0); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
						errSamples.Add(err.Error())
					}
					continue
				}
				lat[i] = append(lat[i], time.Since(start))
				held.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	fillStart, lastHeld, lastT := time.Now(), int64(0), time.Now()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-ctx.Done():
			<-done
			return nil, ctx.Err()
		case now := <-time.After(time.Second):
			h := held.Load()
			logf(progress, "raftlock scale       %3.0fs  %8d of %d locks held  %8.0f acquires/s  errors %d",
				now.Sub(fillStart).Seconds(), h, total, float64(h-lastHeld)/now.Sub(lastT).Seconds(), errs.Load())
			lastHeld, lastT = h, now
		}
	}
	use := meter.Stop()
	res.Ops, res.Errors, res.ErrSamples, res.Retries = held.Load(), errs.Load(), errSamples.List(), b.Retries()-retries0
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	res.Latency = benchkit.Summarize(all)
	res.SetCPU(use)
	res.Metrics = append(res.Metrics, benchkit.Metric{Name: "locks held", Value: float64(res.Ops), Unit: fmt.Sprintf("(by %d leases, filled in %.1f s)", clients, use.Wall.Seconds())})
	info, err := nodeInfo(ctx, b.hc, leader)
	if err != nil {
		return nil, err
	}
	fillEnd := info.CommitIndex

	// Memory.
	targetNote := ""
	if res.Ops < scaleTargetLocks {
		targetNote = fmt.Sprintf(" [target stated for %d locks]", scaleTargetLocks)
	}
	after := memory(b.cv)
	for _, n := range b.cv.nodes {
		m, ok := after[n.ID]
		if !ok {
			continue
		}
		rss := benchkit.Metric{Name: "RSS " + n.ID + targetNote, Value: float64(m.rss) / (1 << 20), Unit: fmt.Sprintf("MiB (peak %.0f MiB)", float64(m.peak)/(1<<20))}
		res.Metrics = append(res.Metrics, rss.Check(true, scaleTargetRSSMiB))
		if m0, ok := before[n.ID]; ok && res.Ops > 0 && m.rss > m0.rss {
			res.Metrics = append(res.Metrics, benchkit.Metric{Name: "RSS growth per lock " + n.ID, Value: float64(m.rss-m0.rss) / float64(res.Ops), Unit: "bytes"})
		}
	}
	if len(after) == 0 {
		res.Notes = append(res.Notes, "memory not measured: no server process found (see --pids)")
	}

	// Snapshot.
	if o.Snapshot {
		if err := waitSnapshots(ctx, b, sessions, prefix, leader.ID, fillEnd, res, progress); err != nil {
			res.Notes = append(res.Notes, "snapshot: "+err.Error())
		}
	}

	// Restart one follower.
	if o.Restart {
		if err := restartFollower(ctx, o, b, leader, res, progress); err != nil {
			res.Notes = append(res.Notes, "restart: "+err.Error())
		}
	}

	if !o.Keep {
		start := time.Now()
		closeAll(sessions)
		released = true
		res.Metrics = append(res.Metrics, benchkit.Metric{Name: "revoking the leases (releasing every lock)", Value: time.Since(start).Seconds(), Unit: "s"})
	} else {
		released = true // --keep: leave the locks held (their leases expire once not kept alive)
		for _, s := range sessions {
			close(s.stop)
			<-s.done
		}
		res.Notes = append(res.Notes, fmt.Sprintf("--keep: the locks stay held until their leases expire (TTL %v)", scaleLeaseTTL))
	}
	return res, nil
}

type mem struct{ rss, peak int64 }

// memory reads each found node's resident set size.
func memory(cv *clusterView) map[string]mem {
	out := map[string]mem{}
	for _, n := range cv.nodes {
		if n.PID == 0 {
			continue
		}
		if rss, peak, err := benchkit.ProcMem(n.PID); err == nil {
			out[n.ID] = mem{rss, peak}
		}
	}
	return out
}

func closeAll(sessions []*session) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s != nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = s.Close(ctx) }()
		}
	}
	wg.Wait()
}

// snapshotInfo describes a snapshot on disk in hashicorp/raft's file snapshot store:
// DataDir/snapshots/TERM-INDEX-MILLIS/{state.bin,meta.json}.
type snapshotInfo struct {
	Index   uint64
	Size    int64
	Persist time.Duration // from the store creating it to meta.json being written
	// Started is when the store created the snapshot (the directory name's milliseconds),
	// Finished when meta.json was written.
	Started, Finished time.Time
}

// latestSnapshot returns the newest complete snapshot under dataDir.
func latestSnapshot(dataDir string) (snapshotInfo, bool) {
	dir := filepath.Join(dataDir, "snapshots")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return snapshotInfo{}, false
	}
	var best snapshotInfo
	found := false
	for _, e := range ents {
		parts := strings.Split(e.Name(), "-")
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") || len(parts) != 3 {
			continue
		}
		index, err1 := strconv.ParseUint(parts[1], 10, 64)
		millis, err2 := strconv.ParseInt(parts[2], 10, 64)
		st, err3 := os.Stat(filepath.Join(dir, e.Name(), "state.bin"))
		meta, err4 := os.Stat(filepath.Join(dir, e.Name(), "meta.json"))
		if errors.Join(err1, err2, err3, err4) != nil || (found && index <= best.Index) {
			continue
		}
		best = snapshotInfo{Index: index, Size: st.Size(), Persist: meta.ModTime().Sub(time.UnixMilli(millis)), Started: time.UnixMilli(millis), Finished: meta.ModTime()}
		found = true
	}
	return best, found
}

// waitSnapshots keeps the cluster busy with acquire/release cycles on spare locks (raft
// snapshots only after enough new entries) until every node whose data directory is
// known has a snapshot taken after the fill, then reports its size and write time, and
// what the snapshots cost a client.
//
// The cost is read from a probe: one client that cycles one lock of its own, alone, while
// scaleFillers others keep the log growing. Its cycles that overlap a node's snapshot
// window (the store creating the snapshot to meta.json written) are set against its cycles
// outside every window, so the figure is the snapshot's and not the queueing of a hundred
// clients on two cores (which the fill's own p99 shows).
func waitSnapshots(ctx context.Context, b *backend, sessions []*session, prefix, leaderID string, fillEnd uint64, res *benchkit.Result, progress io.Writer) error {
	var nodes []*node
	for _, n := range b.cv.nodes {
		if n.DataDir != "" {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return errors.New("no data directory known (the server processes were not found)")
	}
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var cycles atomic.Int64
	var worst atomic.Int64
	fillers := sessions[1:min(len(sessions), 1+scaleFillers)]
	for i, s := range fillers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lockCycles(fctx, s, fmt.Sprintf("%sfiller/%d", prefix, i), func(c probeCycle) {
				cycles.Add(1)
				if d := int64(c.took); d > worst.Load() {
					worst.Store(d)
				}
			})
		}()
	}
	var probe []probeCycle // written by the probe alone, read after wg.Wait
	wg.Add(1)
	go func() {
		defer wg.Done()
		lockCycles(fctx, sessions[0], prefix+"probe", func(c probeCycle) { probe = append(probe, c) })
	}()
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	for {
		got := map[string]snapshotInfo{}
		for _, n := range nodes {
			if s, ok := latestSnapshot(n.DataDir); ok && s.Index >= fillEnd {
				got[n.ID] = s
			}
		}
		if len(got) == len(nodes) {
			waited := time.Since(start)
			cancel()
			wg.Wait()
			for _, n := range nodes {
				s := got[n.ID]
				res.Metrics = append(res.Metrics,
					benchkit.Metric{Name: "snapshot size " + n.ID, Value: float64(s.Size) / (1 << 20), Unit: fmt.Sprintf("MiB (%.0f bytes per lock, index %d)", float64(s.Size)/float64(max(res.Ops, 1)), s.Index)},
					benchkit.Metric{Name: "snapshot write " + n.ID, Value: s.Persist.Seconds(), Unit: "s (store created -> meta.json written)"})
			}
			res.Metrics = append(res.Metrics, probeMetrics(probe, nodes, got, leaderID)...)
			res.Metrics = append(res.Metrics, benchkit.Metric{Name: "longest filler cycle while snapshotting", Value: float64(worst.Load()) / 1e6, Unit: fmt.Sprintf("ms (%d clients, %d cycles to reach the snapshot threshold, %.1f s)", len(fillers), cycles.Load(), waited.Seconds())})
			return nil
		}
		if time.Since(start) > scaleSnapshotWait {
			return fmt.Errorf("no snapshot after index %d on every node within %v", fillEnd, scaleSnapshotWait)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logf(progress, "raftlock scale       waiting for snapshots after index %d: %d of %d nodes, %d filler cycles", fillEnd, len(got), len(nodes), cycles.Load())
		benchkit.Sleep(ctx, time.Second)
	}
}

// probeCycle is one acquire+release of a lock (the snapshot probe's, a filler's): when it
// began and how long it took.
type probeCycle struct {
	start time.Time
	took  time.Duration
}

// lockCycles acquires and releases name with s over and over until ctx ends, passing each
// cycle that succeeded to done. A failed cycle is retried after a pause, so that a cluster
// busy with a snapshot or an election is not spun on.
func lockCycles(ctx context.Context, s *session, name string, done func(probeCycle)) {
	for ctx.Err() == nil {
		start := time.Now()
		tok, err := s.Lock(ctx, name)
		if err == nil {
			err = s.Unlock(ctx, name, tok)
		}
		if err != nil {
			benchkit.Sleep(ctx, 10*time.Millisecond)
			continue
		}
		done(probeCycle{start, time.Since(start)})
	}
}

// probeMetrics splits the probe's cycles into those that overlap each node's snapshot
// window and those that overlap none, and reports the longest of each (the first against
// the stall target) with the p99 outside as the baseline.
func probeMetrics(probe []probeCycle, nodes []*node, snaps map[string]snapshotInfo, leaderID string) []benchkit.Metric {
	var outside []time.Duration
	var out []benchkit.Metric
	inside := map[string]time.Duration{}
	counted := map[string]int{}
	for _, c := range probe {
		end, hit := c.start.Add(c.took), false
		for _, n := range nodes {
			s := snaps[n.ID]
			if c.start.Before(s.Finished) && end.After(s.Started) {
				hit = true
				counted[n.ID]++
				inside[n.ID] = max(inside[n.ID], c.took)
			}
		}
		if !hit {
			outside = append(outside, c.took)
		}
	}
	worst := time.Duration(0)
	for _, n := range nodes {
		role := "follower"
		if n.ID == leaderID {
			role = "leader"
		}
		worst = max(worst, inside[n.ID])
		out = append(out, benchkit.Metric{Name: "longest probe cycle while " + n.ID + " (" + role + ") wrote its snapshot", Value: float64(inside[n.ID]) / 1e6, Unit: fmt.Sprintf("ms (%d cycles)", counted[n.ID])})
	}
	out = append(out, benchkit.Metric{Name: "longest probe cycle during any snapshot", Value: float64(worst) / 1e6, Unit: "ms"}.Check(true, scaleTargetStallMs))
	if sum := benchkit.Summarize(outside); sum != nil {
		out = append(out, benchkit.Metric{Name: "probe cycle outside every snapshot", Value: sum.P99, Unit: fmt.Sprintf("ms p99, longest %.1f ms (%d cycles)", sum.Max, sum.Count)})
	}
	return out
}

// restartFollower stops one follower (SIGTERM), starts it again with the same command
// line, directory, environment and log file, and times it from start until it answers
// /readyz and has applied everything the leader had committed when it was stopped.
func restartFollower(ctx context.Context, o options, b *backend, leader *node, res *benchkit.Result, progress io.Writer) error {
	var n *node
	for _, c := range b.cv.nodes {
		if c.ID != leader.ID && c.PID != 0 {
			n = c
			break
		}
	}
	if n == nil {
		return errors.New("no follower process found (see --pids)")
	}
	old := n.PID
	rl, err := captureProcess(old)
	if err != nil {
		return err
	}
	defer rl.close()

	logf(progress, "raftlock scale       restarting follower %s (pid %d)", n.ID, old)
	stopStart := time.Now()
	if err := stopProcess(old, syscall.SIGTERM); err != nil {
		return err
	}
	stopTime := time.Since(stopStart)
	info, err := nodeInfo(ctx, b.hc, leader)
	if err != nil {
		return err
	}
	target := info.CommitIndex

	start := time.Now()
	if n.PID, err = rl.start(); err != nil {
		return fmt.Errorf("starting %s again: %w", n.ID, err)
	}
	for i, p := range b.cv.pids {
		if p == old {
			b.cv.pids[i] = n.PID
		}
	}
	updatePIDFile(o.StateDir, old, n.PID)

	var ready time.Duration
	for {
		if time.Since(start) > scaleReadyWait {
			return fmt.Errorf("%s not ready within %v of its restart", n.ID, scaleReadyWait)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := b.hc.do(cctx, "GET", n.URL()+"/readyz", nil, nil)
		cancel()
		if err == nil {
			if ni, err := nodeInfo(ctx, b.hc, n); err == nil && ni.AppliedIndex >= target {
				ready = time.Since(start)
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := benchkit.Metric{Name: "restart to ready " + n.ID, Value: ready.Seconds(), Unit: fmt.Sprintf("s (stopping took %.1f s)", stopTime.Seconds())}
	res.Metrics = append(res.Metrics, m.Check(true, scaleTargetRestart))
	if rss, peak, err := benchkit.ProcMem(n.PID); err == nil {
		res.Metrics = append(res.Metrics, benchkit.Metric{Name: "RSS after restart " + n.ID, Value: float64(rss) / (1 << 20), Unit: fmt.Sprintf("MiB (peak %.0f MiB)", float64(peak)/(1<<20))})
	}
	logf(progress, "raftlock scale       %s ready %.2f s after its restart (pid %d)", n.ID, ready.Seconds(), n.PID)
	return nil
}

// updatePIDFile points the pid file of scripts/cluster.sh at the restarted process, so
// that `scripts/cluster.sh stop` still stops it.
func updatePIDFile(stateDir string, old, pid int) {
	if stateDir == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(stateDir, "*", "pid"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(old) {
			_ = os.WriteFile(f, []byte(strconv.Itoa(pid)+"\n"), 0o644)
		}
	}
}
