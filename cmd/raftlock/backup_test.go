package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
)

// runInProcess runs the raftlock app in this process and returns its output and error.
func runInProcess(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errb
	app.ExitErrHandler = func(*cli.Context, error) {} // keep the test process alive
	err = app.Run(append([]string{"raftlock"}, args...))
	return out.String(), errb.String(), err
}

// writeTestBackup writes a backup of a small state (2 leases, 1 lock held with a waiter,
// 1 registered node) and returns its path and a lease ID that must never be printed.
func writeTestBackup(t *testing.T) (string, string) {
	t.Helper()
	f := fsm.New(nil)
	a, b := fsm.LeaseID{0xab, 0xcd, 1}, fsm.LeaseID{0xab, 0xcd, 2}
	cmds := []fsm.Command{
		{Type: fsm.TypeRegisterNode, Now: 1, Node: fsm.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:8001", HTTPAddr: "127.0.0.1:7001"}},
		{Type: fsm.TypeAcquire, Now: 2500, Lease: a, NewLease: true, TTL: 10_000, Name: "accounts/A"},
		{Type: fsm.TypeAcquire, Now: 2600, Lease: b, NewLease: true, TTL: 10_000, Name: "accounts/A", Wait: 5000},
	}
	for i := range cmds {
		f.ApplyCommand(uint64(i+1), &cmds[i])
	}
	state, sum, err := f.SnapshotWithSummary()
	if err != nil {
		t.Fatal(err)
	}
	h := api.NewBackupHeader(sum.Index, sum.ClusterTimeMs, sum.ProtocolVersion, "2025-06-01T12:00:00Z", state)
	path := filepath.Join(t.TempDir(), "backup.rlb")
	if err := os.WriteFile(path, append(h.Encode(), state...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, a.String()
}

func TestCLI_SnapshotInspect(t *testing.T) {
	path, leaseID := writeTestBackup(t)
	out, _, err := runInProcess(t, "snapshot", "inspect", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inspect:\n%s", out)
	for _, want := range []string{
		"checksum          ok (sha256 ",
		"index             3\n",
		"cluster time      2.6s (2600 ms)\n",
		"protocol version  1 (snapshot format 1)\n",
		"leases            2\n",
		"locks             1\n",
		"waiters           1\n",
		"nodes             1\n",
		"limits            max_leases unlimited, max_locks_per_lease unlimited, max_waiters_per_lock unlimited\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
	if strings.Contains(out, leaseID) || strings.Contains(out, leaseID[:8]) {
		t.Error("inspect printed a lease ID")
	}

	out, _, err = runInProcess(t, "snapshot", "inspect", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got inspectOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if got.Index != 3 || got.ClusterTimeMs != 2600 || got.Leases != 2 || got.Locks != 1 || got.Waiters != 1 || got.Nodes != 1 || got.Created != "2025-06-01T12:00:00Z" || len(got.SHA256) != 64 {
		t.Fatalf("--json: %+v", got)
	}

	// Corrupted files are refused with the reason, exit 1.
	raw, _ := os.ReadFile(path)
	for name, mutate := range map[string]func([]byte) []byte{
		"checksum mismatch": func(b []byte) []byte { b[len(b)-1] ^= 0x40; return b },
		"does not start with": func(b []byte) []byte {
			b[0] = 'X'
			return b
		},
		"truncated or extended": func(b []byte) []byte { return b[:len(b)-2] },
	} {
		bad := filepath.Join(t.TempDir(), "bad.rlb")
		os.WriteFile(bad, mutate(append([]byte(nil), raw...)), 0o600)
		_, _, err := runInProcess(t, "snapshot", "inspect", bad)
		if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != 1 || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestCLI_SnapshotRestoreOffline(t *testing.T) {
	path, _ := writeTestBackup(t)
	dir := filepath.Join(t.TempDir(), "n1")
	boot := "n1=127.0.0.1:8001,n2=127.0.0.1:8002,n3=127.0.0.1:8003"
	_, _, err := runInProcess(t, "snapshot", "restore", path, "--data-dir", dir, "--id", "n9", "--bootstrap", boot)
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitUsage {
		t.Fatalf("--id not in --bootstrap: %v", err)
	}
	out, _, err := runInProcess(t, "snapshot", "restore", path, "--data-dir", dir, "--id", "n1", "--bootstrap", boot, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got restoreOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.BackupIndex != 3 || got.RestoreIndex != 3+1_000_000_000 || got.DroppedLeases != 2 || got.DroppedLocks != 1 || got.DroppedWaiters != 1 || got.DroppedNodes != 1 || got.Voters != 3 {
		t.Fatalf("restore: %+v", got)
	}
	_, _, err = runInProcess(t, "snapshot", "restore", path, "--data-dir", dir, "--id", "n1", "--bootstrap", boot)
	if err == nil || !strings.Contains(err.Error(), "already holds raft state") {
		t.Fatalf("restore over a restored data dir: %v", err)
	}
	// The floor wins when it is higher than index + gap.
	out, _, err = runInProcess(t, "snapshot", "restore", path, "--data-dir", filepath.Join(t.TempDir(), "n2"), "--id", "n2", "--bootstrap", boot, "--token-gap", "10", "--token-floor", "5000")
	if err != nil || !strings.Contains(out, "new log starts after index 5000 (gap 10, floor 5000)") {
		t.Fatalf("floor: %v\n%s", err, out)
	}
}

// TestCLI_Backup runs the command by its documented name, backup; the tests above use
// its other name, snapshot, which must keep working the same.
func TestCLI_Backup(t *testing.T) {
	path, _ := writeTestBackup(t)
	out, _, err := runInProcess(t, "backup", "inspect", path)
	if err != nil {
		t.Fatal(err)
	}
	alias, _, err := runInProcess(t, "snapshot", "inspect", path)
	if err != nil || alias != out {
		t.Fatalf("snapshot inspect printed %q (%v); backup inspect %q", alias, err, out)
	}
	_, _, err = runInProcess(t, "backup", "inspect")
	if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitUsage || !strings.Contains(err.Error(), "usage: raftlock backup inspect FILE") {
		t.Fatalf("backup inspect without FILE: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "n1")
	out, _, err = runInProcess(t, "backup", "restore", path, "--data-dir", dir, "--id", "n1", "--bootstrap", "n1=127.0.0.1:8001")
	if err != nil || !strings.Contains(out, "restored "+dir+" for n1: backup index 3") {
		t.Fatalf("backup restore: %v\n%s", err, out)
	}
	help, _, err := runInProcess(t, "--help")
	if err != nil || !strings.Contains(help, "backup, snapshot") {
		t.Fatalf("--help does not list backup with its alias snapshot: %v\n%s", err, help)
	}
}
