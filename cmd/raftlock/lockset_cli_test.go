package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testkit"
)

// `raftlock lock a b c -- CMD` takes a set atomically and passes every token on; with
// --max-hold the command is stopped when the maximum hold ends the grant (exit 76), and
// `raftlock why` says so.
func TestCLI_LockSetAndMaxHold(t *testing.T) {
	r, c, ctx := startCLICluster(t)
	testkit.WaitFor(t, 30*time.Second, "protocol version 3", func() bool {
		info, err := c.Cluster(ctx)
		return err == nil && info.ProtocolVersion >= 3
	})
	out := filepath.Join(t.TempDir(), "env")
	script := `echo "$RAFTLOCK_LOCK_COUNT $RAFTLOCK_LOCKS $RAFTLOCK_LOCK_1 $RAFTLOCK_TOKEN_1 $RAFTLOCK_LOCK_3 $RAFTLOCK_TOKEN_3 $RAFTLOCK_TOKEN" > "$0"`
	res := r.run("lock", "set/c", "set/a", "set/b", "--ttl", "2s", "--", "sh", "-c", script, out)
	if res.code != 0 {
		t.Fatalf("lock a set: %d %s", res.code, res.stderr)
	}
	b, _ := os.ReadFile(out)
	f := strings.Fields(string(b))
	if len(f) != 7 || f[0] != "3" || f[1] != "set/a,set/b,set/c" || f[2] != "set/a" || f[4] != "set/c" || f[3] != f[5] || f[5] != f[6] || f[3] == "0" {
		t.Fatalf("child saw %q", b)
	}
	for _, n := range []string{"set/a", "set/b", "set/c"} {
		if st, err := c.Status(ctx, n, client.StatusOptions{}); err == nil && st.Held {
			t.Fatalf("%s still held after the command", n)
		}
	}

	start := time.Now()
	res = r.run("lock", "mh/job", "--ttl", "3s", "--max-hold", "1500ms", "--json", "--", "sleep", "30")
	if res.code != exitLockLost || !strings.Contains(res.stderr, "maximum hold") {
		t.Fatalf("--max-hold: exit %d after %v, stderr %s", res.code, time.Since(start), res.stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the command ran %v: not stopped at its maximum hold", d)
	}
	w := why(t, []string{strings.Split(r.eps, ",")[0]}, "mh/job")
	mustMatch(t, w, `held for its maximum`)
}
