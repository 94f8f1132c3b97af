package testcluster

import (
	"bytes"
	"errors"
	"fmt"
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

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testkit"
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
	return server.Path(t, serverFlags()...)
}

// server is cmd/raftlock as Binary builds it.
var server = &OnceBuild{DirPrefix: "raftlock-bin-", Name: "raftlock", Pkg: "./cmd/raftlock"}

// OnceBuild builds one package once per test process into a temporary directory of its
// own, so that every test of the process runs the same file and pays for one build.
type OnceBuild struct {
	// DirPrefix names the temporary directory; Name is the file in it; Pkg is the package
	// to build, relative to the module root.
	DirPrefix, Name, Pkg string

	once sync.Once
	path string
	err  error
}

// Path builds the package with flags on its first call and returns the file's path; a
// failed build fails the test of every call.
func (b *OnceBuild) Path(t testing.TB, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", b.DirPrefix)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, b.Name)
		b.err = GoBuild(b.path, b.Pkg, flags...)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
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

// BuildBinaryAt builds cmd/raftlock as it was at commit of this repository (another
// release, for a cluster of mixed releases) into a new file and returns its path: the
// commit's tree, taken with git archive, built with the test's server flags. It needs git
// and the commit in the repository's history, which a shallow clone lacks: without them
// the test cannot run (testkit.Unavailable: skipped, or failed under CI), so a test that
// calls this belongs behind the verify build tag, not in `make test`.
func BuildBinaryAt(t testing.TB, commit string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		testkit.Unavailable(t, "commit %s is not in this repository's history (git: %v %s)", commit, err, out)
	}
	src := t.TempDir()
	tree, err := exec.Command("git", "-C", root, "archive", "--format=tar", commit).Output()
	if err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	extract := exec.Command("tar", "-x", "-C", src)
	extract.Stdin = bytes.NewReader(tree)
	if out, err := extract.CombinedOutput(); err != nil {
		testkit.Unavailable(t, "extracting commit %s with tar: %v %s", commit, err, out)
	}
	out := filepath.Join(t.TempDir(), "raftlock-"+commit[:min(len(commit), 12)])
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, serverFlags()...), "./cmd/raftlock")...)
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building commit %s: %v\n%s", commit, err, b)
	}
	return out
}

// Errors of the process methods that return them rather than fail the test.
var (
	// ErrNotRunning: the node has no process (never started, killed, or exited).
	ErrNotRunning = errors.New("testcluster: node not running")
	// ErrSlowExit: the node did not exit within the wait after the signal; it was then
	// sent SIGKILL.
	ErrSlowExit = errors.New("testcluster: node did not exit in time")
)

// Addrs are one node's addresses: the ones it listens on and, when set, the ones it
// advertises to its peers and clients instead.
type Addrs struct {
	HTTP, Raft                   string // --http-addr, --raft-addr
	HTTPAdvertise, RaftAdvertise string // --http-advertise, --raft-advertise; "" passes no flag
}

// Options shape a cluster of processes before it starts. The zero value is nodes on
// loopback ports from testkit, running Binary(t), with their data under t.TempDir().
type Options struct {
	// Host replaces the host of every picked address ("[::1]" for IPv6 loopback).
	Host string
	// Addrs, when set, adjusts node i's addresses, which start as picked loopback ports:
	// a proxy's address to advertise, or fixed addresses inside a network namespace.
	Addrs func(i int, a *Addrs) error
	// Binary is the raftlock binary every node runs; "" is Binary(t).
	Binary string
	// Dir holds the nodes' data directories and logs; "" is t.TempDir().
	Dir string
	// Env, when non-nil, is every node's whole environment; nil inherits the test's.
	Env []string
	// Exec, when set, makes the command that runs node i's argv (inside a network
	// namespace, say); nil runs argv directly.
	Exec func(i int, argv []string) *exec.Cmd
	// KillWithTest has the kernel send every node SIGKILL should the test process die
	// (Linux): for nodes that no cleanup would reach after a -timeout panic.
	KillWithTest bool
	// Extra are serve flags for every node.
	Extra []string
}

// Processes is a cluster of `raftlock serve` processes: the one fixture that starts
// server processes. Its methods that fail the test serve ordinary tests; the ones that
// return errors (TryStart, Stop, Signal) serve harnesses that record a failure and go on.
type Processes struct {
	t     testing.TB
	opts  Options
	bin   string
	dir   string
	ids   []string
	addrs []Addrs
	boot  string
	// Extra are extra serve flags for every node.
	Extra []string
	// NodeArgs, when set, returns extra serve flags for node i (its own certificate).
	NodeArgs func(i int) []string
	// Scheme is "http://" (the default) or "https://".
	Scheme string
	// Client talks to the nodes (the default: a plain client with a 2 s timeout).
	Client *http.Client

	mu    sync.Mutex
	procs []*proc
	bins  map[int]string // per-node binary overrides (upgrades)
}

// proc is a node's running process; exited closes once it has been reaped.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// NewProcesses prepares n nodes (IDs, ports, data directories) without starting them, so
// that a test can set NodeArgs, Scheme and Client first; StartAll then starts them.
func NewProcesses(t testing.TB, n int, extra ...string) *Processes {
	t.Helper()
	return NewProcessesWith(t, n, Options{Extra: extra})
}

// NewProcessesWith is NewProcesses shaped by o.
func NewProcessesWith(t testing.TB, n int, o Options) *Processes {
	t.Helper()
	p := &Processes{t: t, opts: o, bin: o.Binary, dir: o.Dir, Extra: o.Extra, procs: make([]*proc, n)}
	if p.bin == "" {
		p.bin = Binary(t)
	}
	if p.dir == "" {
		p.dir = t.TempDir()
	}
	onHost := func(addr string) string {
		if o.Host == "" {
			return addr
		}
		return o.Host + addr[strings.LastIndexByte(addr, ':'):]
	}
	var boot []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		a := Addrs{HTTP: onHost(testkit.FreePort(t)), Raft: onHost(testkit.FreePort(t))}
		if o.Addrs != nil {
			if err := o.Addrs(i, &a); err != nil {
				t.Fatalf("addresses of %s: %v", id, err)
			}
		}
		p.ids = append(p.ids, id)
		p.addrs = append(p.addrs, a)
		boot = append(boot, id+"="+p.RaftAddr(i))
	}
	p.boot = strings.Join(boot, ",")
	t.Cleanup(p.KillAll)
	return p
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

// N returns the number of nodes.
func (p *Processes) N() int { return len(p.ids) }

// ID returns node i's server ID.
func (p *Processes) ID(i int) string { return p.ids[i] }

// Addrs returns node i's addresses.
func (p *Processes) Addrs(i int) Addrs { return p.addrs[i] }

// HTTPAddr returns the address clients reach node i at: the one it advertises, if any,
// else the one it listens on.
func (p *Processes) HTTPAddr(i int) string {
	if a := p.addrs[i].HTTPAdvertise; a != "" {
		return a
	}
	return p.addrs[i].HTTP
}

// RaftAddr returns the Raft address node i's peers know it by (as HTTPAddr).
func (p *Processes) RaftAddr(i int) string {
	if a := p.addrs[i].RaftAdvertise; a != "" {
		return a
	}
	return p.addrs[i].Raft
}

// Bootstrap returns the --bootstrap list every node is started with.
func (p *Processes) Bootstrap() string { return p.boot }

// Dir returns the folder that holds the nodes' data directories and logs.
func (p *Processes) Dir() string { return p.dir }

// DataDir returns node i's data directory, for tests that wipe or restore it while the
// node is stopped.
func (p *Processes) DataDir(i int) string { return filepath.Join(p.dir, p.ids[i]) }

// LogPath returns node i's log file (its stdout and stderr, across restarts).
func (p *Processes) LogPath(i int) string { return filepath.Join(p.dir, p.ids[i]+".log") }

// Log returns node i's log so far, for failure messages.
func (p *Processes) Log(i int) string {
	b, _ := os.ReadFile(p.LogPath(i))
	return string(b)
}

// DumpLogs writes every node's log to the test's output, for a failure.
func (p *Processes) DumpLogs() {
	for i := range p.ids {
		p.t.Logf("log of %s:\n%s", p.ids[i], p.Log(i))
	}
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

// StartAll starts every node prepared by NewProcesses.
func (p *Processes) StartAll() {
	p.t.Helper()
	for i := range p.ids {
		p.Start(i)
	}
}

// Start starts (or restarts) node i's process; a node that runs is left alone.
func (p *Processes) Start(i int) {
	p.t.Helper()
	if _, err := p.launch(i); err != nil {
		p.t.Fatal(err)
	}
}

// TryStart starts node i (a no-op if it runs) and returns an error instead of failing the
// test. A node that exits within 150 ms failed to start: a restart after SIGKILL may find
// its port briefly held by a lingering socket, so TryStart tries up to five times.
func (p *Processes) TryStart(i int) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var pr *proc
		if pr, err = p.launch(i); err == nil {
			if pr == nil {
				return nil // already running
			}
			select {
			case <-pr.exited:
				p.mu.Lock()
				if p.procs[i] == pr {
					p.procs[i] = nil
				}
				p.mu.Unlock()
				err = fmt.Errorf("testcluster: %s exited at start; log tail:\n%s", p.ids[i], tail(p.Log(i), 800))
			case <-time.After(150 * time.Millisecond):
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// launch starts node i's process and returns it, or nil when the node already runs.
func (p *Processes) launch(i int) (*proc, error) {
	p.mu.Lock()
	running := p.procs[i] != nil
	bin := p.bin
	if b, ok := p.bins[i]; ok {
		bin = b
	}
	p.mu.Unlock()
	if running {
		return nil, nil
	}
	logf, err := os.OpenFile(p.LogPath(i), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	a := p.addrs[i]
	argv := []string{bin, "serve", "--id", p.ids[i], "--http-addr", a.HTTP, "--raft-addr", a.Raft}
	if a.HTTPAdvertise != "" {
		argv = append(argv, "--http-advertise", a.HTTPAdvertise)
	}
	if a.RaftAdvertise != "" {
		argv = append(argv, "--raft-advertise", a.RaftAdvertise)
	}
	argv = append(append(argv, "--data-dir", p.DataDir(i), "--bootstrap", p.boot), p.Extra...)
	if p.NodeArgs != nil {
		argv = append(argv, p.NodeArgs(i)...)
	}
	var cmd *exec.Cmd
	if p.opts.Exec != nil {
		cmd = p.opts.Exec(i, argv)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	if p.opts.Env != nil {
		cmd.Env = p.opts.Env
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.opts.KillWithTest {
		killWithParent(cmd.SysProcAttr)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("testcluster: starting %s: %w", p.ids[i], err)
	}
	pr := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(pr.exited) }()
	// Registered at once, so that a proxy in front of the node can tell its connections
	// by process ID from the first one.
	p.mu.Lock()
	p.procs[i] = pr
	p.mu.Unlock()
	return pr, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Running reports whether node i's process runs (possibly stopped by SIGSTOP).
func (p *Processes) Running(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[i] != nil
}

// Paused reports whether node i is stopped by SIGSTOP.
func (p *Processes) Paused(i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[i] != nil && p.procs[i].paused
}

// Pids maps the process ID of every running node to its index.
func (p *Processes) Pids() map[int]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]int{}
	for i, pr := range p.procs {
		if pr != nil {
			out[pr.cmd.Process.Pid] = i
		}
	}
	return out
}

// Signal sends sig to node i's process; SIGSTOP and SIGCONT are recorded (Paused) once
// sent.
func (p *Processes) Signal(i int, sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.procs[i]
	if pr == nil {
		return fmt.Errorf("%s to %s: %w", sig, p.ids[i], ErrNotRunning)
	}
	if err := pr.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("testcluster: %s to %s: %w", sig, p.ids[i], err)
	}
	switch sig {
	case syscall.SIGSTOP:
		pr.paused = true
	case syscall.SIGCONT:
		pr.paused = false
	}
	return nil
}

// Stop sends node i SIGCONT (a paused node could not act on sig) and then sig, and waits
// up to wait for it to exit. A node still running then gets SIGKILL, and Stop returns
// ErrSlowExit once it has exited (or after 10 s more).
func (p *Processes) Stop(i int, sig syscall.Signal, wait time.Duration) error {
	p.mu.Lock()
	pr := p.procs[i]
	p.procs[i] = nil
	p.mu.Unlock()
	if pr == nil {
		return fmt.Errorf("%s to %s: %w", sig, p.ids[i], ErrNotRunning)
	}
	_ = pr.cmd.Process.Signal(syscall.SIGCONT)
	if err := pr.cmd.Process.Signal(sig); err != nil {
		_ = pr.cmd.Process.Kill()
		<-pr.exited
		return fmt.Errorf("testcluster: %s to %s: %w", sig, p.ids[i], err)
	}
	select {
	case <-pr.exited:
		return nil
	case <-time.After(wait):
	}
	_ = pr.cmd.Process.Kill()
	select {
	case <-pr.exited:
	case <-time.After(10 * time.Second):
	}
	return fmt.Errorf("%s (pid %d) after %s and %v: %w", p.ids[i], pr.cmd.Process.Pid, sig, wait, ErrSlowExit)
}

// Terminate stops node i gracefully with SIGTERM (a leader hands leadership over first)
// and fails the test unless it exits within 30 s.
func (p *Processes) Terminate(i int) {
	p.t.Helper()
	if err := p.Stop(i, syscall.SIGTERM, 30*time.Second); !gone(err) {
		p.t.Fatal(err)
	}
}

// Kill kills node i with SIGKILL and waits until it is gone (10 s at most, or the test
// fails).
func (p *Processes) Kill(i int) {
	p.t.Helper()
	if err := p.Stop(i, syscall.SIGKILL, 10*time.Second); !gone(err) {
		p.t.Fatal(err)
	}
}

// KillAll kills every node; it runs as the test's cleanup, and goes on past a node that
// will not exit.
func (p *Processes) KillAll() {
	for i := range p.procs {
		if err := p.Stop(i, syscall.SIGKILL, 10*time.Second); !gone(err) {
			p.t.Error(err)
		}
	}
}

// gone reports whether Stop's err leaves the node without a process, as Kill and
// Terminate want it: stopped, never started, or exited already by itself.
func gone(err error) bool {
	return err == nil || errors.Is(err, ErrNotRunning) || errors.Is(err, os.ErrProcessDone)
}

// URL returns node i's base URL.
func (p *Processes) URL(i int) string {
	if p.Scheme != "" {
		return p.Scheme + p.HTTPAddr(i)
	}
	return "http://" + p.HTTPAddr(i)
}

// Endpoints returns every node's base URL.
func (p *Processes) Endpoints() []string {
	var out []string
	for i := range p.ids {
		out = append(out, p.URL(i))
	}
	return out
}

func (p *Processes) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return &http.Client{Timeout: 2 * time.Second}
}

// LeaderIndex asks the running nodes who leads and returns its index, or -1. It needs a
// node that names itself the leader, and a linearizable read on it to succeed.
func (p *Processes) LeaderIndex() int {
	for i := range p.ids {
		if !p.Running(i) {
			continue
		}
		info, err := rawhttp.ClusterInfo(p.client(), p.URL(i))
		if err != nil || info.LeaderID != p.ids[i] {
			continue
		}
		if a := (rawhttp.Client{HTTP: p.client()}).Do(http.MethodGet, p.URL(i)+"/v1/locks?prefix=%00", ""); a.Status == http.StatusOK {
			return i
		}
	}
	return -1
}

// WaitLeader waits until a ready leader answers a linearizable read, and returns it; on
// a timeout it fails the test with every node's log.
func (p *Processes) WaitLeader(timeout time.Duration) int {
	p.t.Helper()
	idx := -1
	if !testkit.Poll(timeout, 20*time.Millisecond, func() bool { idx = p.LeaderIndex(); return idx >= 0 }) {
		p.DumpLogs()
		p.t.Fatalf("no ready leader after %v", timeout)
	}
	return idx
}
