package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/testkit"
)

// waitScript records that the command started (its first argument names a file to create,
// with the environment it was given), then runs until the file named by its second
// argument exists, giving up with status 9 after 30 s.
const waitScript = `echo "$RAFTLOCK_TOKEN ${RAFTLOCK_VALUE:-} ${RAFTLOCK_LEASE:-}" > "$0.tmp"; mv "$0.tmp" "$0"
i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.05; done`

// started starts raftlock with args and returns a function that waits for its result.
func (r *cliRunner) started(args ...string) func() cliResult {
	r.t.Helper()
	p := r.start(args...)
	return func() cliResult { return p.wait(60 * time.Second) }
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startedWith reads what waitScript recorded: the token, then the value and lease if any.
func startedWith(t *testing.T, path string) (uint64, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	tok, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || tok == 0 {
		t.Fatalf("%s: RAFTLOCK_TOKEN = %q", path, b)
	}
	return tok, f[1:]
}

// TestCLI_Primitives runs `lock --shared`, `semaphore`, `elect`, `semaphore-status` and
// `leader` as a user would, against one in-process cluster.
func TestCLI_Primitives(t *testing.T) {
	r, c, ctx := startCLICluster(t)

	t.Run("LockSharedRunsTogether", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		// Each reader runs until it sees the other started: only readers that hold the lock
		// together can both finish.
		doneA := r.started("lock", "--shared", "cli/rw", "--ttl", "2s", "--", "sh", "-c", waitScript, a, b)
		doneB := r.started("lock", "cli/rw", "--shared", "--ttl", "2s", "--", "sh", "-c", waitScript, b, a)
		testkit.WaitFor(t, 30*time.Second, "both readers to run", func() bool { return exists(a) && exists(b) })
		for _, done := range []func() cliResult{doneA, doneB} {
			if res := done(); res.code != 0 {
				t.Fatalf("reader exited %d: %s", res.code, res.stderr)
			}
		}
		// A writer beside a reader is refused.
		res := r.run("acquire", "cli/rw", "--shared", "--ttl", "10s", "--owner", "reader", "--json")
		var g api.Grant
		if err := json.Unmarshal([]byte(res.stdout), &g); err != nil || g.Mode != api.ModeShared {
			t.Fatalf("acquire --shared: %d %q %v", res.code, res.stdout, err)
		}
		defer c.Revoke(ctx, g.LeaseID)
		if res := r.run("lock", "cli/rw", "--wait", "0", "--", "true"); res.code != exitNotAcquired {
			t.Fatalf("exclusive lock beside a reader exited %d; want %d\n%s", res.code, exitNotAcquired, res.stderr)
		}
		res = r.run("status", "cli/rw")
		if res.code != 0 || !strings.Contains(res.stdout, "shared, 1 holders") || !strings.Contains(res.stdout, "reader") {
			t.Fatalf("status of a lock held shared: %d %q %s", res.code, res.stdout, res.stderr)
		}
	})

	t.Run("SemaphoreLimitsConcurrency", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		dir := t.TempDir()
		const name = "cli/sem"
		// The test holds one of the two permits; the CLI gets the other, and a second CLI
		// run must wait for it.
		held := client.NewSemaphore(mustCLILease(t, c), name, 2, client.WithOwner("test"))
		if err := held.TryAcquire(ctx); err != nil {
			t.Fatal(err)
		}
		a, b, stop := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "stop")
		doneA := r.started("semaphore", name, "--limit", "2", "--ttl", "2s", "--", "sh", "-c", waitScript, a, stop)
		testkit.WaitFor(t, 30*time.Second, "the first run to hold a permit", func() bool { return exists(a) })
		doneB := r.started("semaphore", name, "--limit", "2", "--ttl", "2s", "--wait", "50s", "--json", "--", "sh", "-c", waitScript, b, stop)
		testkit.WaitFor(t, 30*time.Second, "the second run to queue", func() bool {
			st, err := c.SemaphoreStatus(ctx, name, client.StatusOptions{})
			return err == nil && st.Waiters == 1
		})
		if exists(b) {
			t.Fatal("a third command runs under a semaphore of limit 2")
		}
		res := r.run("semaphore", name, "--limit", "3", "--wait", "0", "--", "true")
		if res.code != exitNotAcquired || !strings.Contains(res.stderr, "limit") {
			t.Fatalf("another --limit exited %d; want %d naming the limit\n%s", res.code, exitNotAcquired, res.stderr)
		}
		res = r.run("semaphore-status", name, "--json")
		var st api.SemaphoreStatus
		if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.Limit != 2 || len(st.Permits) != 2 || st.Waiters != 1 {
			t.Fatalf("semaphore-status --json: %q %v", res.stdout, err)
		}
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if res := doneA(); res.code != 0 {
			t.Fatalf("first run exited %d: %s", res.code, res.stderr)
		}
		res = doneB()
		if res.code != 0 {
			t.Fatalf("second run exited %d: %s", res.code, res.stderr)
		}
		ta, _ := startedWith(t, a)
		tb, _ := startedWith(t, b)
		if tb <= ta {
			t.Fatalf("the handed-over permit's token %d is not above %d", tb, ta)
		}
		if ev := findEvent(t, res.stderr, "acquired"); ev["semaphore"] != name {
			t.Fatalf("--json acquired event %v does not name the semaphore", ev)
		}
		if res := r.run("semaphore", name, "--", "true"); res.code != exitUsage {
			t.Fatalf("semaphore without --limit exited %d; want %d", res.code, exitUsage)
		}
	})

	t.Run("ElectRunsOnlyWhileLeader", func(t *testing.T) {
		r := &cliRunner{t: t, bin: r.bin, eps: r.eps}
		dir := t.TempDir()
		const name = "cli/elect"
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		stopA, stopB := filepath.Join(dir, "stop-a"), filepath.Join(dir, "stop-b")
		doneA := r.started("elect", name, "--value", "host-a:9000", "--ttl", "2s", "--", "sh", "-c", waitScript, a, stopA)
		testkit.WaitFor(t, 30*time.Second, "the first candidate to lead", func() bool { return exists(a) })
		ta, rest := startedWith(t, a)
		if len(rest) != 1 || rest[0] != "host-a:9000" {
			t.Fatalf("the leader's command saw %q; want its value and no lease", rest)
		}
		res := r.run("leader", name, "--json")
		var st api.ElectionStatus
		if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || !st.Elected || st.Value != "host-a:9000" || st.Token != ta {
			t.Fatalf("leader --json: %q %v", res.stdout, err)
		}
		if res := r.run("elect", name, "--value", "x", "--wait", "0", "--", "true"); res.code != exitNotAcquired {
			t.Fatalf("elect --wait 0 against a leader exited %d; want %d\n%s", res.code, exitNotAcquired, res.stderr)
		}
		doneB := r.started("elect", name, "--value", "host-b:9000", "--ttl", "2s", "--grace", "100ms", "--export-lease", "--", "sh", "-c", waitScript, b, stopB)
		testkit.WaitFor(t, 30*time.Second, "the second candidate to queue", func() bool {
			st, err := c.ElectionStatus(ctx, name, client.StatusOptions{})
			return err == nil && st.Candidates == 1
		})
		if exists(b) {
			t.Fatal("a candidate's command runs while another leads")
		}
		// The leader's command ends: it resigns, and the candidate leads with its value.
		if err := os.WriteFile(stopA, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if res := doneA(); res.code != 0 {
			t.Fatalf("leader exited %d: %s", res.code, res.stderr)
		}
		testkit.WaitFor(t, 30*time.Second, "the candidate to lead", func() bool { return exists(b) })
		tb, rest := startedWith(t, b)
		if tb <= ta || len(rest) != 2 || rest[0] != "host-b:9000" {
			t.Fatalf("new leader saw token %d (previous %d), %q", tb, ta, rest)
		}
		res = r.run("leader", name)
		if res.code != 0 || !strings.Contains(res.stdout, "host-b:9000") {
			t.Fatalf("leader: %d %q %s", res.code, res.stdout, res.stderr)
		}
		// Leadership lost (its lease revoked): the command is stopped, raftlock exits 76.
		if _, err := c.Revoke(ctx, rest[1]); err != nil {
			t.Fatal(err)
		}
		res = doneB()
		if res.code != exitLockLost || !strings.Contains(res.stderr, "election") {
			t.Fatalf("leader whose lease was revoked exited %d; want %d\n%s", res.code, exitLockLost, res.stderr)
		}
		if st, err := c.ElectionStatus(ctx, name, client.StatusOptions{}); err != nil || st.Elected {
			t.Fatalf("after the leader's lease ended: %+v, %v", st, err)
		}
	})
}

// mustCLILease creates a kept-alive lease closed at the end of the test.
func mustCLILease(t *testing.T, c *client.Client) *client.Lease {
	t.Helper()
	l, err := c.NewLease(clustertest.Ctx(t, 10*time.Second), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = l.Close(ctx)
	})
	return l
}

// TestCLI_PrimitivesHelp: the new commands document what they run and their exit codes.
func TestCLI_PrimitivesHelp(t *testing.T) {
	for cmd, wants := range map[string][]string{
		"lock":      {"--shared", "shared holders"},
		"semaphore": {"--limit", "RAFTLOCK_SEMAPHORE", "RAFTLOCK_TOKEN", "limit_conflict", "76"},
		"elect":     {"--value", "only while leader", "resigns", "RAFTLOCK_ELECTION", "RAFTLOCK_VALUE", "76"},
	} {
		var out bytes.Buffer
		app := newApp()
		app.Writer = &out
		if err := app.Run([]string{"raftlock", cmd, "--help"}); err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s --help lacks %q", cmd, want)
			}
		}
	}
}
