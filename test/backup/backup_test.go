package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// raftlock runs the CLI binary and returns its stdout; a failure fails the test.
func raftlock(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testcluster.Binary(t), args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("raftlock %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	t.Logf("raftlock %s\n%s", args[0]+" "+args[1], out.String())
	return out.String()
}

// rebuild kills every node, wipes every data directory, restores each from the backup
// with the CLI (plus extra restore flags), starts them again and returns a client.
func rebuild(t *testing.T, p *testcluster.Processes, backup string, extra ...string) *client.Client {
	t.Helper()
	p.KillAll()
	for i := 0; i < 3; i++ {
		if err := os.RemoveAll(p.DataDir(i)); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"snapshot", "restore", backup, "--data-dir", p.DataDir(i), "--id", p.ID(i), "--bootstrap", p.Bootstrap()}, extra...)
		raftlock(t, args...)
	}
	p.StartAll()
	p.WaitLeader(20 * time.Second)
	cl, err := client.New(p.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Save → wipe all three data directories → restore → the first grant's token is above
// every token issued before the wipe (even after the backup), and a fenced SQLite table
// raised before the wipe accepts it. The negative control restores with --token-gap 0:
// the new cluster's tokens restart just above the backup's index, below tokens the lost
// cluster issued after the backup, and the fence refuses them.
func TestBackup_RestoreKeepsTokensAboveTheLostCluster(t *testing.T) {
	start := time.Now()
	p := testcluster.StartProcesses(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := client.New(p.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(cl *client.Client, name string) uint64 {
		t.Helper()
		g, err := cl.Acquire(ctx, name, client.AcquireOptions{TTL: time.Minute})
		if err != nil {
			t.Fatalf("acquire %s: %v", name, err)
		}
		return g.Token
	}

	// Before the backup: a few grants, one of them released.
	var before []uint64
	for i := 0; i < 4; i++ {
		before = append(before, acquire(cl, fmt.Sprintf("before/%d", i)))
	}
	g, err := cl.Acquire(ctx, "accounts/A", client.AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Release(ctx, "accounts/A", g.LeaseID, g.Token); err != nil {
		t.Fatal(err)
	}
	before = append(before, g.Token)

	backup := filepath.Join(t.TempDir(), "cluster.rlb")
	out := raftlock(t, "snapshot", "save", backup, "--endpoints", strings.Join(p.Endpoints(), ","))
	var backupIndex uint64
	if _, err := fmt.Sscanf(out[strings.Index(out, "index "):], "index %d", &backupIndex); err != nil {
		t.Fatalf("save output %q: %v", out, err)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file mode: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(backup + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("save left %s.tmp behind: %v", backup, err)
	}
	inspect := raftlock(t, "snapshot", "inspect", backup)
	if !strings.Contains(inspect, "checksum          ok") || !strings.Contains(inspect, "locks             4\n") {
		t.Fatalf("inspect of the saved backup:\n%s", inspect)
	}

	// After the backup the old cluster goes on granting: these tokens are in no backup.
	var maxToken uint64
	for i := 0; i < 100; i++ {
		maxToken = max(maxToken, acquire(cl, fmt.Sprintf("after/%d", i)))
	}
	info, err := rawhttp.ClusterInfo(nil, p.URL(p.WaitLeader(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	last := info.CommitIndex // every token the old cluster issued is at most this
	if maxToken <= backupIndex || last < maxToken {
		t.Fatalf("tokens after the backup up to %d, backup index %d, commit index %d", maxToken, backupIndex, last)
	}

	// The storage saw the newest tokens: both fences stand at the highest one.
	db, err := fencing.OpenSQLite(filepath.Join(t.TempDir(), "fences.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	guard, err := fencing.NewSQLGuard(db, fencing.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if err := guard.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"accounts/A", "accounts/B"} {
		if err := guard.Do(ctx, r, fencing.Token(maxToken), nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("old cluster: tokens before the backup %v, backup index %d, tokens after it up to %d, last index %d", before, backupIndex, maxToken, last)

	// Everything is lost; the cluster is rebuilt from the backup with the default gap.
	cl = rebuild(t, p, backup)
	after := acquire(cl, "accounts/A")
	if after <= last {
		t.Fatalf("first token after the restore %d is not above the lost cluster's last index %d", after, last)
	}
	if err := guard.Do(ctx, "accounts/A", fencing.Token(after), nil); err != nil {
		t.Fatalf("the fence from before the wipe refused the restored cluster's token %d: %v", after, err)
	}
	if st, err := cl.Status(ctx, "before/0", client.StatusOptions{}); err != nil || st.Held {
		t.Fatalf("a lock held in the backup is held after the restore: %+v %v", st, err)
	}
	t.Logf("restored with the default gap: first token %d > last old index %d; the fence accepted it", after, last)

	// Negative control: without the gap, tokens go backwards and the fence refuses them.
	cl = rebuild(t, p, backup, "--token-gap", "0")
	stale := acquire(cl, "accounts/B")
	if stale > maxToken {
		t.Fatalf("negative control: with --token-gap 0 the first token %d is above %d; the test cannot tell a floor from none", stale, maxToken)
	}
	err = guard.Do(ctx, "accounts/B", fencing.Token(stale), nil)
	if !errors.Is(err, fencing.ErrStaleToken) {
		t.Fatalf("negative control: the fence at %d took token %d: %v", maxToken, stale, err)
	}
	t.Logf("negative control (--token-gap 0): first token %d <= %d, the fence refused it: %v", stale, maxToken, err)
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}
