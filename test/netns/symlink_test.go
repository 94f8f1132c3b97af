package netns_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testcluster"
)

// plantedSymlinks is the attack suite's case for `raftlock backup save` (the CLI a
// stranger runs, over TLS, with the token in the environment, never in argv): someone
// who may write where backups go plants a symlink at FILE.tmp, the name save used to open
// with O_TRUNC and follow, and one at FILE itself. Refused means: the victim behind the
// link keeps its bytes, FILE ends up a regular 0600 file, and `backup inspect` reads it
// as a backup of this cluster.
func plantedSymlinks(t *testing.T, ty *tally, c *testcluster.Processes, k *pki, token string) {
	t.Helper()
	files := k.WriteClient(t, "backup-operator")
	for _, at := range []string{"FILE.tmp", "FILE"} {
		dir, victimDir := t.TempDir(), t.TempDir()
		victim := filepath.Join(victimDir, "victim")
		const victimText = "the victim's own content\n"
		if err := os.WriteFile(victim, []byte(victimText), 0o644); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "backup.rlb")
		link := file
		if at == "FILE.tmp" {
			link = file + ".tmp"
		}
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		save := exec.CommandContext(ctx, testcluster.Binary(t), "backup", "save", file,
			"--endpoints", "https://"+c.HTTPAddr(0), "--tls-ca", files.CA, "--tls-cert", files.Cert, "--tls-key", files.Key)
		save.Env = append(nodeEnv(), "RAFTLOCK_ACL_TOKEN="+token)
		out, err := save.CombinedOutput()
		inspect, ierr := exec.CommandContext(ctx, testcluster.Binary(t), "backup", "inspect", file).CombinedOutput()
		cancel()
		got, _ := os.ReadFile(victim)
		fi, serr := os.Lstat(file)
		refused := err == nil && string(got) == victimText && serr == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o600 && ierr == nil
		ty.check("backup save with a symlink planted at "+at+": victim untouched, FILE a backup", c.ID(0), refused,
			string(bytes.TrimSpace(append(append(out, '\n'), inspect...))))
	}
}
