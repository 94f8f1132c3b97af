package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// cli runs the raftlock binary against a cluster.
type cliRunner struct {
	t   *testing.T
	bin string
	eps string
}

type cliResult struct {
	stdout, stderr string
	code           int
}

// command returns an unstarted raftlock command with the cluster's endpoints.
func (r *cliRunner) command(args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, args...)
	// A race-enabled binary sleeps 1 s at exit unless told not to.
	cmd.Env = append(os.Environ(), "RAFTLOCK_ENDPOINTS="+r.eps, "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	return cmd
}

// run runs raftlock to completion (at most 60 s).
func (r *cliRunner) run(args ...string) cliResult {
	r.t.Helper()
	cmd := r.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	res := r.wait(cmd, &out, &errb, 60*time.Second)
	r.t.Logf("raftlock %s: exit %d in %v", strings.Join(args, " "), res.code, time.Since(start).Round(time.Millisecond))
	return res
}

// cliProc is a raftlock process running in the background.
type cliProc struct {
	r         *cliRunner
	cmd       *exec.Cmd
	out, errb bytes.Buffer
}

// start starts raftlock in the background; the test's end kills it if it still runs.
func (r *cliRunner) start(args ...string) *cliProc {
	r.t.Helper()
	p := &cliProc{r: r, cmd: r.command(args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// wait waits at most timeout for p to exit.
func (p *cliProc) wait(timeout time.Duration) cliResult {
	p.r.t.Helper()
	return p.r.wait(p.cmd, &p.out, &p.errb, timeout)
}

// waitForFile waits until the command under test has written path.
func waitForFile(t *testing.T, path, what string) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, what, func() bool { return exists(path) })
}

func (r *cliRunner) wait(cmd *exec.Cmd, out, errb *bytes.Buffer, timeout time.Duration) cliResult {
	r.t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.t.Fatalf("raftlock %q: %v", cmd.Args[1:], err)
		}
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		r.t.Fatalf("raftlock %q still running after %v\nstderr: %s", cmd.Args[1:], timeout, errb)
	}
	return cliResult{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// alive reports whether pid is a live process (zombies count as dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

func fileHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// startCLICluster starts a three-node in-process cluster and returns a runner of the
// raftlock binary against it, a client of it, and a context for the whole test.
func startCLICluster(t *testing.T) (*cliRunner, *client.Client, context.Context) {
	tc := testcluster.StartInProcess(t, 3, nil)
	r := &cliRunner{t: t, bin: testcluster.Binary(t), eps: strings.Join(tc.Endpoints(), ",")}
	c, err := client.New(tc.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	return r, c, clustertest.Ctx(t, 5*time.Minute)
}

// TestCLI runs the client commands as a user would, against one in-process cluster.
func TestCLI(t *testing.T) {
	r, c, ctx := startCLICluster(t)
	status := func(name string) api.LockStatus {
		t.Helper()
		st, err := c.Status(ctx, name, client.StatusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	t.Run("AcquireStatusReleaseLeaseCluster", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		res := r.run("acquire", "cli/a", "--ttl", "5s", "--owner", "me", "--json")
		if res.code != 0 {
			t.Fatalf("acquire: %d %s", res.code, res.stderr)
		}
		var g api.Grant
		if err := json.Unmarshal([]byte(res.stdout), &g); err != nil || g.Token == 0 || g.Owner != "me" {
			t.Fatalf("acquire output %q: %+v %v", res.stdout, g, err)
		}
		// Human output names the token and lease.
		res = r.run("status", "cli/a")
		if res.code != 0 || !strings.Contains(res.stdout, strconv.FormatUint(g.Token, 10)) || !strings.Contains(res.stdout, "me") {
			t.Fatalf("status: %d %q %s", res.code, res.stdout, res.stderr)
		}
		// Held: acquire with --wait 0 exits 75.
		if res = r.run("acquire", "cli/a"); res.code != exitNotAcquired {
			t.Fatalf("acquire of a held lock exited %d; want %d\n%s", res.code, exitNotAcquired, res.stderr)
		}
		res = r.run("status", "--prefix", "cli/", "--json")
		var list api.LockList
		if err := json.Unmarshal([]byte(res.stdout), &list); err != nil || len(list.Locks) != 1 || list.Locks[0].Token != g.Token {
			t.Fatalf("status --prefix: %q %v", res.stdout, err)
		}
		if res = r.run("status", "--stale"); res.code != 0 || !strings.Contains(res.stdout, "cli/a") {
			t.Fatalf("status --stale: %d %q %s", res.code, res.stdout, res.stderr)
		}
		res = r.run("lease", "get", g.LeaseID, "--json")
		var l api.Lease
		if err := json.Unmarshal([]byte(res.stdout), &l); err != nil || len(l.Locks) != 1 || l.Locks[0] != "cli/a" {
			t.Fatalf("lease get: %q %v", res.stdout, err)
		}
		if res = r.run("lease", "keepalive", g.LeaseID); res.code != 0 || !strings.Contains(res.stdout, g.LeaseID) {
			t.Fatalf("lease keepalive: %d %q %s", res.code, res.stdout, res.stderr)
		}
		// A wrong token is refused; the right one releases.
		if res = r.run("release", "cli/a", "--lease", g.LeaseID, "--token", strconv.FormatUint(g.Token+1, 10)); res.code != 1 || !strings.Contains(res.stderr, "not the holder") {
			t.Fatalf("release with a wrong token: %d %s", res.code, res.stderr)
		}
		if res = r.run("release", "cli/a", "--lease", g.LeaseID, "--token", strconv.FormatUint(g.Token, 10)); res.code != 0 {
			t.Fatalf("release: %d %s", res.code, res.stderr)
		}
		if status("cli/a").Held {
			t.Fatal("still held after release")
		}
		// The same lease takes it again, then a revoke frees it.
		if res = r.run("acquire", "--lease", g.LeaseID, "cli/a"); res.code != 0 {
			t.Fatalf("acquire --lease: %d %s", res.code, res.stderr)
		}
		if res = r.run("lease", "revoke", g.LeaseID); res.code != 0 || !strings.Contains(res.stdout, "cli/a") {
			t.Fatalf("lease revoke: %d %q %s", res.code, res.stdout, res.stderr)
		}
		if status("cli/a").Held {
			t.Fatal("still held after revoke")
		}
		res = r.run("lease", "create", "--ttl", "2s", "--json")
		if err := json.Unmarshal([]byte(res.stdout), &l); err != nil || l.TTLMs != 2000 {
			t.Fatalf("lease create: %q %v", res.stdout, err)
		}
		res = r.run("cluster")
		if res.code != 0 || !strings.Contains(res.stdout, "n1") || !strings.Contains(res.stdout, "*") {
			t.Fatalf("cluster: %d %q %s", res.code, res.stdout, res.stderr)
		}
		res = r.run("cluster", "--json")
		var info api.Cluster
		if err := json.Unmarshal([]byte(res.stdout), &info); err != nil || len(info.Nodes) != 3 {
			t.Fatalf("cluster --json: %q %v", res.stdout, err)
		}
		// Usage errors exit 2.
		for _, args := range [][]string{
			{"acquire"}, {"acquire", "a", "b"}, {"acquire", "x", "--nope"}, {"release", "x"},
			{"status", "a", "--prefix", "b"}, {"lease", "get", "not-an-id"}, {"acquire", "x", "--ttl", "100ms"},
		} {
			if res := r.run(args...); res.code != exitUsage {
				t.Errorf("raftlock %q exited %d; want %d\n%s", args, res.code, exitUsage, res.stderr)
			}
		}
	})

	t.Run("LockChildSeesToken", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		out := filepath.Join(t.TempDir(), "env")
		script := `echo "$RAFTLOCK_LOCK $RAFTLOCK_TOKEN ${RAFTLOCK_LEASE:-none}" > "$0"`
		// By default the lease ID (a secret) is not passed on, not even one raftlock
		// itself inherited.
		cmd := r.command("lock", "cli/env", "--ttl", "2s", "--json", "--", "sh", "-c", script, out)
		cmd.Env = append(cmd.Env, "RAFTLOCK_LEASE=inherited")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if res := r.wait(cmd, &stdout, &stderr, 60*time.Second); res.code != 0 {
			t.Fatalf("lock: %d %s", res.code, res.stderr)
		}
		b, _ := os.ReadFile(out)
		f := strings.Fields(string(b))
		if len(f) != 3 || f[0] != "cli/env" || f[2] != "none" {
			t.Fatalf("child saw %q; want the lock, the token and no RAFTLOCK_LEASE", b)
		}
		if tok, err := strconv.ParseUint(f[1], 10, 64); err != nil || tok == 0 {
			t.Fatalf("RAFTLOCK_TOKEN = %q", f[1])
		}
		if strings.Contains(stderr.String(), "lease_id") {
			t.Fatalf("the --json events show the lease ID without --export-lease:\n%s", stderr.String())
		}

		// --export-lease passes it on.
		res := r.run("lock", "cli/env", "--ttl", "2s", "--export-lease", "--", "sh", "-c", script, out)
		if res.code != 0 {
			t.Fatalf("lock --export-lease: %d %s", res.code, res.stderr)
		}
		b, _ = os.ReadFile(out)
		f = strings.Fields(string(b))
		if len(f) != 3 || f[0] != "cli/env" || len(f[2]) != api.LeaseIDLen {
			t.Fatalf("child saw %q with --export-lease", b)
		}
		if status("cli/env").Held {
			t.Fatal("lock still held after the command ended")
		}
		if _, err := c.GetLease(ctx, f[2]); !errors.Is(err, client.ErrLeaseNotFound) {
			t.Fatalf("lease survived the command: %v", err)
		}
	})

	t.Run("LockGraceWithinDriftMargin", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		for _, ttl := range []time.Duration{2 * time.Second, 10 * time.Second, 600 * time.Millisecond} {
			res := r.run("lock", "cli/grace", "--ttl", ttl.String(), "--json", "--", "true")
			if res.code != 0 {
				t.Fatalf("lock --ttl %v: %d %s", ttl, res.code, res.stderr)
			}
			ev := findEvent(t, res.stderr, "acquired")
			grace, ok := ev["grace_ms"].(float64)
			if drift := client.DefaultDriftMargin(ttl); !ok || grace <= 0 || time.Duration(grace)*time.Millisecond > drift {
				t.Fatalf("--ttl %v: default grace %v ms; want positive and at most the drift margin %v", ttl, ev["grace_ms"], drift)
			}
		}
		// Longer than the drift margin (200ms for a 2s TTL): refused, saying why and what to do.
		res := r.run("lock", "cli/grace", "--ttl", "2s", "--grace", "1s", "--", "true")
		if res.code != exitUsage || !strings.Contains(res.stderr, "drift margin 200ms") || !strings.Contains(res.stderr, "--unsafe-grace") || !strings.Contains(res.stderr, "--ttl") {
			t.Fatalf("--grace 1s with --ttl 2s: exit %d\n%s; want a usage error naming the margin and the ways out", res.code, res.stderr)
		}
		for _, args := range [][]string{{"--grace", "200ms"}, {"--grace", "1s", "--unsafe-grace"}} {
			res := r.run(append([]string{"lock", "cli/grace", "--ttl", "2s"}, append(args, "--", "true")...)...)
			if res.code != 0 {
				t.Fatalf("lock %q: %d %s", args, res.code, res.stderr)
			}
		}
	})

	t.Run("LockReleasesAfterProcessGroupGone", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		dir := t.TempDir()
		// The command exits at once, leaving two background jobs in its group: one ends on
		// SIGTERM, the other ignores it and needs SIGKILL. Neither may still run once the
		// lock is free, or it would overlap with the next holder.
		script := `sleep 30 & echo $! > "$0/p1"
(trap '' TERM; exec sleep 30) & echo $! > "$0/p2.tmp"; mv "$0/p2.tmp" "$0/p2"
exit 0`
		p := r.start("lock", "cli/group", "--ttl", "2s", "--", "sh", "-c", script, dir)
		waitForFile(t, filepath.Join(dir, "p2"), "the command to start its jobs")
		p1, p2 := readInt(t, filepath.Join(dir, "p1")), readInt(t, filepath.Join(dir, "p2"))
		t.Cleanup(func() { syscall.Kill(p1, syscall.SIGKILL); syscall.Kill(p2, syscall.SIGKILL) })
		// The jobs exist once the command runs, so the lock is held by then; follow it with
		// blocking queries until it is free, and look at the jobs at that moment.
		deadline := time.Now().Add(30 * time.Second)
		st := status("cli/group")
		for st.Held {
			if time.Now().After(deadline) {
				t.Fatalf("lock still held after 30 s: %+v", st)
			}
			next, err := c.Status(ctx, "cli/group", client.StatusOptions{WaitIndex: st.ModifyIndex, Wait: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			st = next
		}
		if alive(p1) || alive(p2) {
			t.Fatalf("the lock is free while the command's background jobs still run (p1 %v, p2 %v)", alive(p1), alive(p2))
		}
		res := p.wait(20 * time.Second)
		if res.code != 0 || !strings.Contains(res.stderr, "still running") {
			t.Fatalf("raftlock exited %d; want 0 and a word about the jobs it stopped\n%s", res.code, res.stderr)
		}
	})

	t.Run("LockExitCodes", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		if res := r.run("lock", "cli/codes", "--", "sh", "-c", "exit 3"); res.code != 3 {
			t.Fatalf("command status 3 gave %d: %s", res.code, res.stderr)
		}
		if res := r.run("lock", "cli/codes"); res.code != exitUsage {
			t.Fatalf("lock without a command exited %d; want %d", res.code, exitUsage)
		}
		if res := r.run("lock", "cli/codes", "true"); res.code != exitUsage {
			t.Fatalf("lock without -- exited %d; want %d", res.code, exitUsage)
		}
		if res := r.run("lock", "cli/codes", "--", "/nonexistent/command"); res.code != exitCannotRun {
			t.Fatalf("lock of a missing command exited %d; want %d", res.code, exitCannotRun)
		}
		g, err := c.Acquire(ctx, "cli/codes", client.AcquireOptions{TTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Revoke(ctx, g.LeaseID)
		if res := r.run("lock", "cli/codes", "--wait", "0", "--", "true"); res.code != exitNotAcquired {
			t.Fatalf("lock of a held lock with --wait 0 exited %d; want %d\n%s", res.code, exitNotAcquired, res.stderr)
		}
		start := time.Now()
		res := r.run("lock", "cli/codes", "--wait", "300ms", "--json", "--", "true")
		if res.code != exitNotAcquired || !strings.Contains(res.stderr, `"event":"not_acquired"`) {
			t.Fatalf("lock of a held lock with --wait 300ms exited %d; want %d\n%s", res.code, exitNotAcquired, res.stderr)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("--wait 300ms took %v", d)
		}
		if st := status("cli/codes"); st.Waiters != 0 || st.Token != g.Token {
			t.Fatalf("after the failed waits: %+v", st)
		}
	})

	t.Run("LockRunsNeverOverlap", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		log := filepath.Join(t.TempDir(), "log")
		script := `echo "start $RAFTLOCK_TOKEN" >> "$0"; sleep 0.2; echo "end $RAFTLOCK_TOKEN" >> "$0"`
		const runs = 3
		var wg sync.WaitGroup
		results := make([]cliResult, runs)
		for i := 0; i < runs; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := r.command("lock", "cli/overlap", "--ttl", "2s", "--wait", "30s", "--", "sh", "-c", script, log)
				out, _ := cmd.CombinedOutput()
				results[i] = cliResult{stderr: string(out), code: cmd.ProcessState.ExitCode()}
			}()
		}
		wg.Wait()
		for i, res := range results {
			if res.code != 0 {
				t.Fatalf("run %d exited %d: %s", i, res.code, res.stderr)
			}
		}
		b, _ := os.ReadFile(log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2*runs {
			t.Fatalf("log has %d lines:\n%s", len(lines), b)
		}
		var last uint64
		for i := 0; i < len(lines); i += 2 {
			s, e := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			if s[0] != "start" || e[0] != "end" || s[1] != e[1] {
				t.Fatalf("runs overlapped:\n%s", b)
			}
			tok, _ := strconv.ParseUint(s[1], 10, 64)
			if tok <= last {
				t.Fatalf("tokens not increasing:\n%s", b)
			}
			last = tok
		}
	})

	t.Run("LockLostKillsProcessGroup", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		dir := t.TempDir()
		// The command ignores SIGTERM (it only logs it) and leaves a grandchild behind:
		// both must be gone once raftlock gives up, after --grace.
		script := `trap 'echo term >> "$0/log"' TERM
sleep 30 &
echo $! > "$0/gpid"
echo $$ > "$0/pid"
echo "$RAFTLOCK_LEASE" > "$0/lease.tmp"; mv "$0/lease.tmp" "$0/lease"
while :; do sleep 0.05; done`
		p := r.start("lock", "cli/lost", "--ttl", "2s", "--grace", "500ms", "--unsafe-grace", "--export-lease", "--", "sh", "-c", script, dir)
		waitForFile(t, filepath.Join(dir, "lease"), "the command to start")
		b, _ := os.ReadFile(filepath.Join(dir, "lease"))
		pid, gpid := readInt(t, filepath.Join(dir, "pid")), readInt(t, filepath.Join(dir, "gpid"))
		revokedAt := time.Now()
		if _, err := c.Revoke(ctx, strings.TrimSpace(string(b))); err != nil {
			t.Fatal(err)
		}
		res := p.wait(20 * time.Second)
		if res.code != exitLockLost {
			t.Fatalf("raftlock exited %d after its lease was revoked; want %d\n%s", res.code, exitLockLost, res.stderr)
		}
		t.Logf("raftlock exited %v after the revoke", time.Since(revokedAt))
		if !fileHas(filepath.Join(dir, "log"), "term") {
			t.Fatal("the command never got SIGTERM")
		}
		testkit.WaitFor(t, 10*time.Second, "the command and its grandchild to be gone", func() bool {
			return !alive(pid) && !alive(gpid)
		})
	})

	t.Run("LockPassesSignalsOn", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		dir := t.TempDir()
		script := `trap 'echo got >> "$0/log"; exit 7' TERM
echo ready > "$0/ready"
while :; do sleep 0.05; done`
		p := r.start("lock", "cli/signal", "--ttl", "2s", "--", "sh", "-c", script, dir)
		waitForFile(t, filepath.Join(dir, "ready"), "the command to start")
		p.cmd.Process.Signal(syscall.SIGTERM)
		res := p.wait(20 * time.Second)
		if res.code != 7 || !fileHas(filepath.Join(dir, "log"), "got") {
			t.Fatalf("raftlock exited %d; want the command's 7\n%s", res.code, res.stderr)
		}
		if status("cli/signal").Held {
			t.Fatal("lock still held after the command ended on a signal")
		}
	})
}

// findEvent returns the first --json event of the given kind in stderr.
func findEvent(t *testing.T, stderr, kind string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["event"] == kind {
			return ev
		}
	}
	t.Fatalf("no %q event in:\n%s", kind, stderr)
	return nil
}

// TestCLI_Help lists the exit codes.
func TestCLI_Help(t *testing.T) {
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	if err := app.Run([]string{"raftlock", "lock", "--help"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"75", "76", "usage error", "RAFTLOCK_TOKEN", "--grace", "drift margin", "--unsafe-grace", "--export-lease", "process group"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("lock --help lacks %q", want)
		}
	}
}
