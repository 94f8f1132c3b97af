package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
)

// TestCLI_RestoreBeforeACLBootstrapResetsIt checks what docs/SECURITY.md's "ACL bootstrap
// reset" procedure relies on: `backup restore` keeps the backup's ACL state, so a data
// directory restored from a backup taken before the bootstrap (or from a never-bootstrapped
// throwaway node) can be bootstrapped again, and one restored from a later backup cannot.
func TestCLI_RestoreBeforeACLBootstrapResetsIt(t *testing.T) {
	f := fsm.New(nil)
	f.ApplyCommand(1, &fsm.Command{Type: fsm.TypeSetVersion, Version: 2})
	before := backupOf(t, f, "before.rlb")
	r := f.ApplyCommand(2, &fsm.Command{Type: fsm.TypeACLBootstrap, Now: 10,
		ACL: fsm.ACLCommand{Accessor: "0123456789abcdef0123456789abcdef", SecretHash: sha256.Sum256([]byte("lost secret"))}})
	if r.Err != nil || !f.ACLBootstrapped() {
		t.Fatalf("bootstrap: %v", r.Err)
	}
	after := backupOf(t, f, "after.rlb")

	for _, tc := range []struct {
		file         string
		bootstrapped bool
	}{{before, false}, {after, true}} {
		dir := filepath.Join(t.TempDir(), "n1")
		if out, errOut, err := runInProcess(t, "backup", "restore", tc.file, "--data-dir", dir, "--id", "n1", "--bootstrap", "n1=127.0.0.1:8001", "--token-floor", "1000000"); err != nil {
			t.Fatalf("backup restore %s: %v\n%s%s", tc.file, err, out, errOut)
		}
		restored := fsm.New(nil)
		restoreSnapshot(t, dir, restored)
		if got := restored.ACLBootstrapped(); got != tc.bootstrapped {
			t.Errorf("restored from %s: bootstrapped %t, want %t", filepath.Base(tc.file), got, tc.bootstrapped)
		}
	}
}

// backupOf writes f's state as a backup file named name and returns its path.
func backupOf(t *testing.T, f *fsm.FSM, name string) string {
	t.Helper()
	state, sum, err := f.SnapshotWithSummary()
	if err != nil {
		t.Fatal(err)
	}
	h := api.NewBackupHeader(sum.Index, sum.ClusterTimeMs, sum.ProtocolVersion, "2026-12-01T00:00:00Z", state)
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, append(h.Encode(), state...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// restoreSnapshot loads the newest Raft snapshot in a data directory into f, as serve
// would at start.
func restoreSnapshot(t *testing.T, dir string, f *fsm.FSM) {
	t.Helper()
	store, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	metas, err := store.List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("snapshots in %s: %v, %d", dir, err, len(metas))
	}
	_, rc, err := store.Open(metas[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(rc); err != nil {
		t.Fatalf("restore: %v", err)
	}
}
