package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftlock/raftlock/api"
)

// backupServer answers GET /v1/backup with the bytes of the backup file at path, as a
// node would.
func backupServer(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/backup" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", api.BackupContentType)
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCLI_BackupSaveIgnoresPlantedSymlinks plants symlinks where an attacker with write
// access to the backup directory's neighbourhood would: at FILE.tmp (the name save used to
// open with O_TRUNC, following the link) and at FILE itself. Save must write neither
// victim: the temporary file is created exclusively under a random name and renamed over
// FILE, which replaces a symlink at FILE rather than writing through it.
func TestCLI_BackupSaveIgnoresPlantedSymlinks(t *testing.T) {
	src, _ := writeTestBackup(t)
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	url := backupServer(t, src)

	for _, tc := range []struct {
		name   string
		plant  func(dir, file, victim string) error
		target string // where the planted symlink sits
	}{
		{"at FILE.tmp", func(dir, file, victim string) error { return os.Symlink(victim, file+".tmp") }, ".tmp"},
		{"at FILE", func(dir, file, victim string) error { return os.Symlink(victim, file) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			const victimText = "the victim's own content\n"
			if err := os.WriteFile(victim, []byte(victimText), 0o644); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "backup.rlb")
			if err := tc.plant(dir, file, victim); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := runInProcess(t, "backup", "save", file, "--endpoints", url)
			if err != nil {
				t.Fatalf("backup save: %v\n%s%s", err, out, errOut)
			}
			if got, _ := os.ReadFile(victim); string(got) != victimText {
				t.Fatalf("the victim behind the symlink %s was written: %d bytes now", tc.name, len(got))
			}
			fi, err := os.Lstat(file)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != backupFileMode {
				t.Fatalf("%s: %v, mode %v; want a regular file with mode %04o", file, err, fi.Mode(), backupFileMode)
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, want) {
				t.Fatalf("%s holds %d bytes, not the %d of the backup", file, len(got), len(want))
			}
			// Nothing is left behind but FILE and what was planted.
			ents, _ := os.ReadDir(dir)
			names := []string{}
			for _, e := range ents {
				names = append(names, e.Name())
			}
			wantNames := map[string]bool{"backup.rlb": true}
			if tc.target != "" {
				wantNames["backup.rlb"+tc.target] = true
			}
			if len(names) != len(wantNames) {
				t.Fatalf("the directory holds %q; want only %v", names, wantNames)
			}
			for _, n := range names {
				if !wantNames[n] {
					t.Fatalf("the directory holds %q; want only %v", names, wantNames)
				}
			}
		})
	}
}
