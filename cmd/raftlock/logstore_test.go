package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// --raft-log-store comes from the flag, RAFTLOCK_RAFT_LOG_STORE or the config file's
// raft-log-store key (auto by default: what the data directory holds, wal for a new one),
// and an unknown store is refused before anything starts.
func TestServe_RaftLogStoreSetting(t *testing.T) {
	printed := func(t *testing.T, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		app := newApp()
		app.Writer = &out
		if err := app.Run(append([]string{"raftlock", "serve", "--print-config"}, args...)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if out := printed(t); !strings.Contains(out, `raft-log-store = "auto"`) {
		t.Fatalf("default: %s", out)
	}
	cfg := filepath.Join(t.TempDir(), "n1.toml")
	if err := os.WriteFile(cfg, []byte("raft-log-store = \"wal\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := printed(t, "--config", cfg); !strings.Contains(out, `raft-log-store = "wal"`) {
		t.Fatalf("config file: %s", out)
	}
	t.Setenv("RAFTLOCK_RAFT_LOG_STORE", "wal")
	if out := printed(t); !strings.Contains(out, `raft-log-store = "wal"`) {
		t.Fatalf("environment: %s", out)
	}
	if out := printed(t, "--raft-log-store", "boltdb"); !strings.Contains(out, `raft-log-store = "boltdb"`) {
		t.Fatalf("the flag wins over the environment: %s", out)
	}

	var errb bytes.Buffer
	app := newApp()
	app.ErrWriter = &errb
	app.ExitErrHandler = func(*cli.Context, error) {}
	err := app.Run([]string{"raftlock", "serve", "--id", "n1", "--data-dir", t.TempDir(), "--raft-log-store", "rocksdb"})
	if err == nil || !strings.Contains(err.Error(), "rocksdb") {
		t.Fatalf("an unknown store: %v", err)
	}
}

// `raftlock log-store show` and `convert` on a restored data directory (raft-wal, the
// default): converted to boltdb and back, each step says what it did, and converting to
// the store a directory already uses is refused.
func TestCLI_LogStoreConvert(t *testing.T) {
	path, _ := writeTestBackup(t)
	dir := filepath.Join(t.TempDir(), "n1")
	if _, _, err := runInProcess(t, "backup", "restore", path, "--data-dir", dir, "--id", "n1", "--bootstrap", "n1=127.0.0.1:8001"); err != nil {
		t.Fatal(err)
	}
	show := func(want string) {
		t.Helper()
		if out, _, err := runInProcess(t, "log-store", "show", "--data-dir", dir); err != nil || strings.TrimSpace(out) != want {
			t.Fatalf("log-store show: %q, %v; want %s", out, err, want)
		}
	}
	show("wal")
	for _, to := range []string{"boltdb", "wal"} {
		out, errOut, err := runInProcess(t, "log-store", "convert", "--data-dir", dir, "--to", to)
		if err != nil || !strings.Contains(out, "converted "+dir+" to "+to) || !strings.Contains(errOut, "copied int CurrentTerm") {
			t.Fatalf("convert to %s: %v\n%s\n%s", to, err, out, errOut)
		}
		show(to)
	}
	if _, _, err := runInProcess(t, "log-store", "convert", "--data-dir", dir, "--to", "wal"); err == nil || !strings.Contains(err.Error(), "already uses wal") {
		t.Fatalf("converting to the store in use: %v", err)
	}
}
