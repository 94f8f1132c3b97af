package netns_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testcluster"
)

// The ports every node listens on inside its own namespace: each "host" has its own port
// space, so all three use the same ones, as real hosts would.
const (
	httpPort = "7001"
	raftPort = "8001"
)

// cluster is one `raftlock serve` process per namespace of a network, each bound to
// 0.0.0.0 and advertising its namespace's address.
type cluster struct {
	t    *testing.T
	nw   *network
	bin  string
	dir  string
	boot string
	// nodeArgs returns extra serve flags for node i (its certificate); may be nil.
	nodeArgs func(i int) []string
	extra    []string

	mu    sync.Mutex
	procs []*proc
}

// proc is a running node process; done closes when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// newCluster prepares (but does not start) a node per namespace of nw. extra are serve
// flags every node gets.
func newCluster(t *testing.T, nw *network, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, nw: nw, bin: testcluster.Binary(t), dir: t.TempDir(), extra: extra, procs: make([]*proc, len(nw.ns))}
	var boot []string
	for i := range nw.ns {
		boot = append(boot, c.id(i)+"="+c.RaftAddr(i))
	}
	c.boot = strings.Join(boot, ",")
	// Registered after the network's cleanup, so it runs before it: no process may
	// outlive its namespace.
	t.Cleanup(c.killAll)
	return c
}

func (c *cluster) id(i int) string { return fmt.Sprintf("n%d", i+1) }

// HTTPAddr is node i's advertised HTTP address (its namespace's IP).
func (c *cluster) HTTPAddr(i int) string { return c.nw.IP(i) + ":" + httpPort }

// RaftAddr is node i's advertised Raft address.
func (c *cluster) RaftAddr(i int) string { return c.nw.IP(i) + ":" + raftPort }

func (c *cluster) startAll() {
	c.t.Helper()
	for i := range c.procs {
		c.start(i)
	}
}

// start starts node i inside its namespace with `ip netns exec`.
func (c *cluster) start(i int) {
	c.t.Helper()
	logf, err := os.OpenFile(c.logPath(i), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	args := []string{c.bin, "serve", "--id", c.id(i),
		"--http-addr", "0.0.0.0:" + httpPort, "--http-advertise", c.HTTPAddr(i),
		"--raft-addr", "0.0.0.0:" + raftPort, "--raft-advertise", c.RaftAddr(i),
		"--data-dir", filepath.Join(c.dir, c.id(i)), "--bootstrap", c.boot}
	args = append(args, c.extra...)
	if c.nodeArgs != nil {
		args = append(args, c.nodeArgs(i)...)
	}
	cmd := c.nw.command(context.Background(), i, args...)
	cmd.Env = nodeEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: should the test binary itself die (a -timeout panic runs no cleanups),
	// the node dies with it rather than living on in a namespace nobody removes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("starting %s in %s: %v", c.id(i), c.nw.ns[i], err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs[i] = p
	c.mu.Unlock()
}

// kill sends SIGKILL to node i's process group (the one start created for it) and waits
// until the process is gone.
func (c *cluster) kill(i int) {
	c.mu.Lock()
	p := c.procs[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("%s (pid %d) still running 10 s after SIGKILL", c.id(i), p.cmd.Process.Pid)
	}
}

func (c *cluster) killAll() {
	for i := range c.procs {
		c.kill(i)
	}
}

func (c *cluster) logPath(i int) string { return filepath.Join(c.dir, c.id(i)+".log") }

// Log returns node i's stdout and stderr so far.
func (c *cluster) Log(i int) string {
	b, _ := os.ReadFile(c.logPath(i))
	return string(b)
}

// dumpLogs writes every node's log to the test output, for a failure.
func (c *cluster) dumpLogs() {
	for i := range c.procs {
		c.t.Logf("log of %s:\n%s", c.id(i), c.Log(i))
	}
}

// nodeEnv is the test's environment without RAFTLOCK_* settings (which would change how
// serve starts) and without proxy settings (a node must never send a forward elsewhere).
func nodeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAFTLOCK_") || strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
