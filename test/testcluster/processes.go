package testcluster

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster/clustertest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// GoBuild builds package pkg of this module (e.g. "./cmd/raftlock") into out with extra
// `go build` flags, from the module's root, and says what failed with the compiler's output.
func GoBuild(out, pkg string, flags ...string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	args := append(append([]string{"build", "-o", out}, flags...), pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}

// serverFlags are the build flags of the server binaries tests start: -race and the
// mutants tag when the test binary itself has them.
func serverFlags() []string {
	var flags []string
	if raceEnabled {
		flags = append(flags, "-race")
	}
	return append(flags, mutantTags...)
}

// Binary builds cmd/raftlock once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "raftlock-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "raftlock")
		buildErr = GoBuild(binPath, "./cmd/raftlock", serverFlags()...)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// BuildBinary builds cmd/raftlock into a new file with extra `go build` flags (for
// example "-ldflags=-X main.version=next": a newer build of the same code for upgrade
// drills) and returns its path.
func BuildBinary(t testing.TB, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "raftlock")
	if err := GoBuild(out, "./cmd/raftlock", append(serverFlags(), flags...)...); err != nil {
		t.Fatal(err)
	}
	return out
}

// Processes is a cluster of `raftlock serve` processes.
type Processes struct {
	t     testing.TB
	bin   string
	dir   string
	ids   []string
	http  []string
	raft  []string
	boot  string
	mu    sync.Mutex
	procs []*exec.Cmd
	Extra []string // extra serve flags for every node
	// NodeArgs, when set, returns extra serve flags for node i (its own certificate).
	NodeArgs func(i int) []string
	// Scheme is "http://" (the default) or "https://".
	Scheme string
	// Client talks to the nodes (the default: a plain client with a 2 s timeout).
	Client *http.Client
	bins   map[int]string // per-node binary overrides (upgrades)
}

// SetBinary makes node i's next Start run bin (a rolling upgrade).
func (p *Processes) SetBinary(i int, bin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bins == nil {
		p.bins = map[int]string{}
	}
	p.bins[i] = bin
}

// Terminate stops node i gracefully with SIGTERM (a leader hands leadership over first)
// and waits up to 30 s for it to exit.
func (p *Processes) Terminate(i int) {
	p.t.Helper()
	p.mu.Lock()
	cmd := p.procs[i]
	p.procs[i] = nil
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	clustertest.WaitFor(p.t, 30*time.Second, p.ids[i]+" to exit after SIGTERM", func() bool {
		return cmd.Process.Signal(syscall.Signal(0)) != nil
	})
}

// NewProcesses prepares n nodes (IDs, ports, data directories) without starting them, so
// that a test can set NodeArgs, Scheme and Client first; StartAll then starts them.
func NewProcesses(t testing.TB, n int, extra ...string) *Processes {
	t.Helper()
	return NewProcessesOn(t, n, "127.0.0.1", extra...)
}

// NewProcessesOn is NewProcesses with every address on host ("[::1]" for IPv6).
func NewProcessesOn(t testing.TB, n int, host string, extra ...string) *Processes {
	t.Helper()
	p := &Processes{t: t, bin: Binary(t), dir: t.TempDir(), Extra: extra}
	onHost := func(addr string) string { return host + addr[strings.LastIndexByte(addr, ':'):] }
	var boot []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		p.ids = append(p.ids, id)
		p.http = append(p.http, onHost(clustertest.FreePort(t)))
		p.raft = append(p.raft, onHost(clustertest.FreePort(t)))
		boot = append(boot, id+"="+p.raft[i])
	}
	p.boot = strings.Join(boot, ",")
	p.procs = make([]*exec.Cmd, n)
	t.Cleanup(p.KillAll)
	return p
}

// StartAll starts every node prepared by NewProcesses.
func (p *Processes) StartAll() {
	p.t.Helper()
	for i := range p.ids {
		p.Start(i)
	}
}

// Dir returns the folder that holds the nodes' data directories and logs.
func (p *Processes) Dir() string { return p.dir }

// HTTPAddr and RaftAddr return node i's listen addresses.
func (p *Processes) HTTPAddr(i int) string { return p.http[i] }

// RaftAddr returns node i's Raft address.
func (p *Processes) RaftAddr(i int) string { return p.raft[i] }

func (p *Processes) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return &http.Client{Timeout: 2 * time.Second}
}

// StartProcesses starts n server processes and waits for a leader that every node knows.
func StartProcesses(t testing.TB, n int, extra ...string) *Processes {
	t.Helper()
	p := StartProcessesNoWait(t, n, extra...)
	p.WaitLeader(20 * time.Second)
	return p
}

// StartProcessesNoWait starts n server processes and returns at once, for tests that
// decide for themselves, as an outside client would, when the cluster is ready.
func StartProcessesNoWait(t testing.TB, n int, extra ...string) *Processes {
	t.Helper()
	p := NewProcesses(t, n, extra...)
	p.StartAll()
	return p
}

// Start starts (or restarts) node i's process.
func (p *Processes) Start(i int) {
	p.t.Helper()
	logf, err := os.OpenFile(filepath.Join(p.dir, p.ids[i]+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	args := append([]string{"serve", "--id", p.ids[i], "--http-addr", p.http[i], "--raft-addr", p.raft[i],
		"--data-dir", filepath.Join(p.dir, p.ids[i]), "--bootstrap", p.boot}, p.Extra...)
	if p.NodeArgs != nil {
		args = append(args, p.NodeArgs(i)...)
	}
	p.mu.Lock()
	bin := p.bin
	if b, ok := p.bins[i]; ok {
		bin = b
	}
	p.mu.Unlock()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("starting %s: %v", p.ids[i], err)
	}
	go func() { cmd.Wait(); logf.Close() }()
	p.mu.Lock()
	p.procs[i] = cmd
	p.mu.Unlock()
}

// Log returns node i's log so far, for failure messages.
func (p *Processes) Log(i int) string {
	b, _ := os.ReadFile(filepath.Join(p.dir, p.ids[i]+".log"))
	return string(b)
}

// Signal sends sig to node i's process.
func (p *Processes) Signal(i int, sig syscall.Signal) {
	p.mu.Lock()
	cmd := p.procs[i]
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// Kill kills node i with SIGKILL and waits until it is gone.
func (p *Processes) Kill(i int) {
	p.mu.Lock()
	cmd := p.procs[i]
	p.procs[i] = nil
	p.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		clustertest.WaitFor(p.t, 10*time.Second, p.ids[i]+" to exit", func() bool {
			return cmd.Process.Signal(syscall.Signal(0)) != nil
		})
	}
}

// KillAll kills every node.
func (p *Processes) KillAll() {
	for i := range p.procs {
		p.Kill(i)
	}
}

// URL returns node i's base URL.
func (p *Processes) URL(i int) string {
	if p.Scheme != "" {
		return p.Scheme + p.http[i]
	}
	return "http://" + p.http[i]
}

// Endpoints returns every node's base URL.
func (p *Processes) Endpoints() []string {
	var out []string
	for i := range p.http {
		out = append(out, p.URL(i))
	}
	return out
}

// LeaderIndex asks the running nodes who leads and returns its index, or -1. It needs a
// majority of answering nodes to agree, and the leader to be ready.
func (p *Processes) LeaderIndex() int {
	for i := range p.ids {
		p.mu.Lock()
		alive := p.procs[i] != nil
		p.mu.Unlock()
		if !alive {
			continue
		}
		info, err := ClusterInfoWith(p.client(), p.URL(i))
		if err != nil || info.LeaderID == "" {
			continue
		}
		for j, id := range p.ids {
			if id == info.LeaderID && j == i {
				if resp, err := p.client().Get(p.URL(i) + "/v1/locks?prefix=%00"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return i
					}
				}
			}
		}
	}
	return -1
}

// WaitLeader waits until a ready leader answers a linearizable read, and returns it.
func (p *Processes) WaitLeader(timeout time.Duration) int {
	p.t.Helper()
	idx := -1
	deadline := time.Now().Add(timeout)
	for idx = p.LeaderIndex(); idx < 0; idx = p.LeaderIndex() {
		if time.Now().After(deadline) {
			for i := range p.ids {
				p.t.Logf("log of %s:\n%s", p.ids[i], p.Log(i))
			}
			p.t.Fatalf("no ready leader after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return idx
}

// ListenLoopback opens a loopback listener on a port below Linux's ephemeral range, for
// harnesses that return errors rather than failing a test (clustertest.ListenLoopback).
func ListenLoopback() (net.Listener, error) { return clustertest.ListenLoopback() }
