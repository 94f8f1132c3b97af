package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

// rejoinTarget is round five's bound on a returning member (docs/PERFORMANCE.md, "A
// returning member"): ready within 2 s of its process starting, with under 10,000 locks,
// after 30 s down.
const rejoinTarget = 2.0 // seconds

// runRejoin measures how soon a member that was down is ready again. It fills
// --rejoin-locks held locks, then --restarts times: kills a follower with SIGKILL, keeps
// one client taking and releasing a lock through the leader for --down (as the rest of
// the cluster would be used meanwhile), reads the leader's commit index, starts the
// follower again with the same command line, and times it from its process start until
// it answers /readyz 200 with its applied index at least that commit index.
func runRejoin(ctx context.Context, o options, b *backend, progress io.Writer) (*benchkit.Result, error) {
	leader, err := b.cv.leader(ctx, b.hc)
	if err != nil {
		return nil, err
	}
	res := &benchkit.Result{System: "raftlock", Workload: "rejoin", Clients: 1, Op: "restart",
		Target: fmt.Sprintf("followers of %s killed with SIGKILL, down %v (+ up to %v), %d locks held", leader.ID, o.Down, o.DownJitter, o.RejoinLocks)}

	// Fill: the locks are held by a few leases, kept alive for the whole run.
	const fillers = 8
	sessions := make([]*session, fillers)
	for i := range sessions {
		if sessions[i], err = b.newSession(ctx, i, scaleLeaseTTL.Milliseconds()); err != nil {
			closeAll(sessions)
			return nil, err
		}
	}
	defer closeAll(sessions)
	prefix := fmt.Sprintf("bench/%d/rejoin/", time.Now().UnixNano())
	var next atomic.Int64
	var fillErr atomic.Value
	var wg sync.WaitGroup
	for _, s := range sessions {
		body, _ := json.Marshal(api.AcquireRequest{LeaseID: s.lease})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				j := next.Add(1) - 1
				if j >= int64(o.RejoinLocks) {
					return
				}
				if _, err := s.acquire(ctx, fmt.Sprintf("%s%06d", prefix, j), body, 0); err != nil {
					fillErr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := fillErr.Load().(error); err != nil {
		return nil, fmt.Errorf("filling %d locks: %w", o.RejoinLocks, err)
	}
	logf(progress, "raftlock rejoin      %d locks held; %d restarts of a follower down %v each", o.RejoinLocks, o.Restarts, o.Down)

	var times []time.Duration
	for r := 0; r < o.Restarts; r++ {
		var followers []*node
		for _, n := range b.cv.nodes {
			if n.ID != leader.ID && n.PID != 0 {
				followers = append(followers, n)
			}
		}
		if len(followers) == 0 {
			return nil, fmt.Errorf("no follower process found (see --pids)")
		}
		n := followers[r%len(followers)]
		d, err := rejoinOnce(ctx, o, b, sessions[0], leader, n, progress)
		if err != nil {
			return nil, fmt.Errorf("restart %d of %s: %w", r+1, n.ID, err)
		}
		times = append(times, d)
		logf(progress, "raftlock rejoin      restart %d/%d: %s ready %.2f s after its process started", r+1, o.Restarts, n.ID, d.Seconds())
	}
	sorted := append([]time.Duration(nil), times...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	p50 := sorted[(len(sorted)-1)/2]
	res.Ops = int64(len(times))
	var each []string
	for _, d := range times {
		each = append(each, fmt.Sprintf("%.2f", d.Seconds()))
	}
	res.Metrics = append(res.Metrics,
		benchkit.Metric{Name: "returning member ready, p50", Value: p50.Seconds(), Unit: fmt.Sprintf("s over %d restarts", len(times))}.Check(true, rejoinTarget),
		benchkit.Metric{Name: "returning member ready, max", Value: sorted[len(sorted)-1].Seconds(), Unit: "s"}.Check(true, rejoinTarget))
	res.Notes = append(res.Notes, "ready after each restart (s): "+strings.Join(each, " "))
	return res, nil
}

// rejoinOnce kills follower n, keeps one client cycling a lock through the leader for
// o.Down, starts n again and returns how long after its start it was ready.
func rejoinOnce(ctx context.Context, o options, b *backend, s *session, leader, n *node, progress io.Writer) (time.Duration, error) {
	rl, err := captureProcess(n.PID)
	if err != nil {
		return 0, err
	}
	defer rl.close()
	old := n.PID
	if err := stopProcess(old, syscall.SIGKILL); err != nil {
		return 0, err
	}
	down := time.Now()
	outage := o.Down
	if o.DownJitter > 0 {
		outage += rand.N(o.DownJitter)
	}
	name := fmt.Sprintf("bench/%d/rejoin-traffic", time.Now().UnixNano())
	for i := 0; time.Since(down) < outage; i++ {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if tok, err := s.acquire(ctx, name, s.lockBody, 0); err == nil {
			_ = s.Unlock(ctx, name, tok)
		}
		time.Sleep(50 * time.Millisecond) // light traffic, about 15 cycles a second
	}
	info, err := nodeInfo(ctx, b.hc, leader)
	if err != nil {
		return 0, err
	}
	target := info.CommitIndex
	start := time.Now()
	pid, err := rl.start()
	if err != nil {
		return 0, err
	}
	n.PID = pid
	for i, p := range b.cv.pids {
		if p == old {
			b.cv.pids[i] = pid
		}
	}
	updatePIDFile(o.StateDir, old, pid)
	for {
		if time.Since(start) > scaleReadyWait {
			return 0, fmt.Errorf("%s not ready within %v of its restart", n.ID, scaleReadyWait)
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := b.hc.do(cctx, "GET", n.URL()+"/readyz", nil, nil)
		cancel()
		if err == nil {
			if ni, err := nodeInfo(ctx, b.hc, n); err == nil && ni.AppliedIndex >= target {
				return time.Since(start), nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// relauncher starts a server process again as it was: same executable, arguments,
// directory, environment and log file.
type relauncher struct {
	exe, cwd string
	args     []string
	env      []string
	log      *os.File
}

// captureProcess reads what relauncher needs from /proc while pid runs.
func captureProcess(pid int) (*relauncher, error) {
	args, err := benchkit.ProcArgs(pid)
	if err != nil {
		return nil, err
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return nil, err
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || strings.HasSuffix(exe, " (deleted)") {
		exe = args[0]
		if !filepath.IsAbs(exe) && strings.Contains(exe, "/") {
			exe = filepath.Join(cwd, exe)
		}
	}
	r := &relauncher{exe: exe, cwd: cwd, args: args}
	if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); len(env) > 0 {
		r.env = strings.Split(strings.TrimRight(string(env), "\x00"), "\x00")
	}
	if out, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid)); err == nil && filepath.IsAbs(out) && !strings.HasPrefix(out, "/dev/") {
		r.log, _ = os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	}
	return r, nil
}

func (r *relauncher) close() {
	if r.log != nil {
		r.log.Close()
	}
}

// start starts the process again, in its own session so that it outlives the benchmark,
// and returns its pid.
func (r *relauncher) start() (int, error) {
	cmd := exec.Command(r.exe, r.args[1:]...)
	cmd.Dir = r.cwd
	cmd.Env = r.env
	if r.log != nil {
		cmd.Stdout, cmd.Stderr = r.log, r.log
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s again: %w", r.exe, err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// stopProcess sends sig to pid and waits (at most 20 s, then SIGKILL) until it is gone.
func stopProcess(pid int, sig syscall.Signal) error {
	start := time.Now()
	_ = syscall.Kill(pid, sig)
	for benchkit.ProcAlive(pid) && time.Since(start) < 15*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if benchkit.ProcAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for benchkit.ProcAlive(pid) && time.Since(start) < 20*time.Second {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if benchkit.ProcAlive(pid) {
		return fmt.Errorf("process %d still runs 20 s after signal %v", pid, sig)
	}
	return nil
}
