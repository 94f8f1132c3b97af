package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/testcluster"
)

// ClusterConfig configures a Cluster.
type ClusterConfig struct {
	// N is the number of nodes (3 or 5).
	N int
	// Advertise, when non-nil, returns the Raft address node i advertises given the address
	// it listens on (raftBind): a proxy's address. Nil advertises raftBind itself.
	Advertise func(i int, raftBind string) (string, error)
	// ElectionTimeout is every node's --election-timeout; zero means 500 ms.
	ElectionTimeout time.Duration
	// Extra are more serve flags for every node (--snapshot-threshold, ...).
	Extra []string
	// Binary is the raftlock binary; empty builds it with testcluster.Binary.
	Binary string
	// Env are more environment variables (KEY=value) for every node, such as
	// RAFTLOCK_MUTANT for a Binary built with the mutants tag.
	Env []string
	// Dir holds the nodes' data directories and logs; empty means t.TempDir().
	Dir string
}

// Cluster is a set of `raftlock serve` processes. Node indexes are 0-based; IDs are n1...
type Cluster struct {
	t   testing.TB
	cfg ClusterConfig
	bin string

	IDs       []string
	HTTPAddrs []string
	RaftBind  []string
	RaftAddrs []string // advertised

	mu    sync.Mutex
	procs []*exec.Cmd
	exits []chan struct{}
	pause []bool
}

// FreePort returns a loopback address whose port was free a moment ago. The port lies
// below Linux's ephemeral range (see clustertest.FreePort): a port from "127.0.0.1:0" can be
// taken, before the node binds it, by the local end of an outgoing connection of any test
// running beside this one, which is how CI once failed with "address already in use".
func FreePort() (string, error) {
	l, err := testcluster.ListenLoopback()
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// NewCluster prepares the addresses and advertised addresses of cfg.N nodes and starts
// them all; it does not wait for a leader (see WaitLeader).
func NewCluster(t testing.TB, cfg ClusterConfig) (*Cluster, error) {
	t.Helper()
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = 500 * time.Millisecond
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c := &Cluster{t: t, cfg: cfg, bin: cfg.Binary}
	if c.bin == "" {
		c.bin = testcluster.Binary(t)
	}
	for i := 0; i < cfg.N; i++ {
		h, err := FreePort()
		if err != nil {
			return nil, err
		}
		r, err := FreePort()
		if err != nil {
			return nil, err
		}
		adv := r
		if cfg.Advertise != nil {
			if adv, err = cfg.Advertise(i, r); err != nil {
				return nil, err
			}
		}
		c.IDs = append(c.IDs, fmt.Sprintf("n%d", i+1))
		c.HTTPAddrs = append(c.HTTPAddrs, h)
		c.RaftBind = append(c.RaftBind, r)
		c.RaftAddrs = append(c.RaftAddrs, adv)
	}
	c.procs = make([]*exec.Cmd, cfg.N)
	c.exits = make([]chan struct{}, cfg.N)
	c.pause = make([]bool, cfg.N)
	t.Cleanup(c.KillAll)
	for i := 0; i < cfg.N; i++ {
		if err := c.Start(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// N returns the number of nodes.
func (c *Cluster) N() int { return c.cfg.N }

// ElectionTimeout returns the nodes' election timeout.
func (c *Cluster) ElectionTimeout() time.Duration { return c.cfg.ElectionTimeout }

// LogPath returns node i's log file.
func (c *Cluster) LogPath(i int) string { return filepath.Join(c.cfg.Dir, c.IDs[i]+".log") }

// Log returns node i's log so far.
func (c *Cluster) Log(i int) string {
	b, _ := os.ReadFile(c.LogPath(i))
	return string(b)
}

func (c *Cluster) bootstrap() string {
	var parts []string
	for i, id := range c.IDs {
		parts = append(parts, id+"="+c.RaftAddrs[i])
	}
	return strings.Join(parts, ",")
}

// Start starts node i (a no-op if it runs). A restart after SIGKILL may find its HTTP port
// briefly taken by a lingering socket; Start retries a few times.
func (c *Cluster) Start(i int) error {
	c.mu.Lock()
	running := c.procs[i] != nil
	c.mu.Unlock()
	if running {
		return nil
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if lastErr = c.startOnce(i); lastErr == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return lastErr
}

func (c *Cluster) startOnce(i int) error {
	logf, err := os.OpenFile(c.LogPath(i), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := append([]string{"serve", "--id", c.IDs[i], "--http-addr", c.HTTPAddrs[i],
		"--raft-addr", c.RaftBind[i], "--raft-advertise", c.RaftAddrs[i],
		"--data-dir", filepath.Join(c.cfg.Dir, c.IDs[i]), "--bootstrap", c.bootstrap(),
		"--election-timeout", c.cfg.ElectionTimeout.String()}, c.cfg.Extra...)
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), c.cfg.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("harness: starting %s: %w", c.IDs[i], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	// Registered at once, so that the proxies can identify its first connections.
	c.mu.Lock()
	c.procs[i], c.exits[i], c.pause[i] = cmd, exited, false
	c.mu.Unlock()
	// A node that exits at once (a port still in use) failed to start.
	select {
	case <-exited:
		c.mu.Lock()
		if c.procs[i] == cmd {
			c.procs[i] = nil
		}
		c.mu.Unlock()
		return fmt.Errorf("harness: %s exited at start; log tail:\n%s", c.IDs[i], tail(c.Log(i), 800))
	case <-time.After(150 * time.Millisecond):
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Running reports whether node i's process runs (possibly stopped by SIGSTOP).
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i] != nil
}

// Paused reports whether node i is stopped by SIGSTOP.
func (c *Cluster) Paused(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pause[i]
}

// Pids maps the process ID of every running node to its index.
func (c *Cluster) Pids() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int{}
	for i, p := range c.procs {
		if p != nil && p.Process != nil {
			out[p.Process.Pid] = i
		}
	}
	return out
}

func (c *Cluster) signal(i int, sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[i]
	if p == nil || p.Process == nil {
		return fmt.Errorf("harness: %s to %s: not running", sig, c.IDs[i])
	}
	if err := p.Process.Signal(sig); err != nil {
		return fmt.Errorf("harness: %s to %s: %w", sig, c.IDs[i], err)
	}
	switch sig { // recorded only once the signal was sent
	case syscall.SIGSTOP:
		c.pause[i] = true
	case syscall.SIGCONT:
		c.pause[i] = false
	}
	return nil
}

// Pause stops node i with SIGSTOP.
func (c *Cluster) Pause(i int) error { return c.signal(i, syscall.SIGSTOP) }

// Resume continues node i with SIGCONT.
func (c *Cluster) Resume(i int) error { return c.signal(i, syscall.SIGCONT) }

// Kill kills node i with SIGKILL and waits until it has exited. It fails when node i is not
// running, so that a fault that killed nothing is not counted as a kill.
func (c *Cluster) Kill(i int) error { return c.stop(i, syscall.SIGKILL, 10*time.Second) }

// Terminate stops node i with SIGTERM (graceful: a leader hands off leadership first) and
// waits up to 20 s, then kills it.
func (c *Cluster) Terminate(i int) error { return c.stop(i, syscall.SIGTERM, 20*time.Second) }

func (c *Cluster) stop(i int, sig syscall.Signal, wait time.Duration) error {
	c.mu.Lock()
	p, exited := c.procs[i], c.exits[i]
	c.procs[i], c.pause[i] = nil, false
	c.mu.Unlock()
	if p == nil || p.Process == nil {
		return fmt.Errorf("harness: %s to %s: not running", sig, c.IDs[i])
	}
	_ = p.Process.Signal(syscall.SIGCONT)
	if err := p.Process.Signal(sig); err != nil {
		_ = p.Process.Kill()
		<-exited
		return fmt.Errorf("harness: %s to %s: %w", sig, c.IDs[i], err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(wait):
		_ = p.Process.Kill()
		<-exited
		if sig == syscall.SIGKILL {
			return fmt.Errorf("harness: %s did not exit within %v of SIGKILL", c.IDs[i], wait)
		}
		return nil
	}
}

// KillAll kills every node.
func (c *Cluster) KillAll() {
	for i := range c.procs {
		_ = c.Kill(i) // a node that is not running is fine here
	}
}

// URL returns node i's base URL.
func (c *Cluster) URL(i int) string { return "http://" + c.HTTPAddrs[i] }

// Endpoints returns every node's base URL.
func (c *Cluster) Endpoints() []string {
	var out []string
	for i := range c.HTTPAddrs {
		out = append(out, c.URL(i))
	}
	return out
}

var infoClient = &http.Client{Timeout: time.Second}

// Info asks node i for GET /v1/cluster.
func (c *Cluster) Info(i int) (api.Cluster, error) {
	var out api.Cluster
	resp, err := infoClient.Get(c.URL(i) + "/v1/cluster")
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("harness: GET /v1/cluster on %s: %d %s", c.IDs[i], resp.StatusCode, b)
	}
	return out, json.Unmarshal(b, &out)
}

// Leader returns the index of the node that a running, unpaused node names as leader and
// that says so itself, or -1.
func (c *Cluster) Leader() int {
	for i := range c.IDs {
		if !c.Running(i) || c.Paused(i) {
			continue
		}
		info, err := c.Info(i)
		if err != nil || info.LeaderID == "" {
			continue
		}
		for j, id := range c.IDs {
			if id == info.LeaderID && c.Running(j) && !c.Paused(j) {
				if self, err := c.Info(j); err == nil && self.LeaderID == id {
					return j
				}
			}
		}
	}
	return -1
}

// WaitLeader waits until a leader answers a linearizable read, and returns its index.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	for {
		if l := c.Leader(); l >= 0 {
			resp, err := infoClient.Get(c.URL(l) + "/v1/locks?prefix=%00")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return l, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("harness: no ready leader: %w", ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// WaitAllCaughtUp waits until every running node reports an applied index at least the
// leader's commit index at the time of the call.
func (c *Cluster) WaitAllCaughtUp(ctx context.Context) error {
	l, err := c.WaitLeader(ctx)
	if err != nil {
		return err
	}
	li, err := c.Info(l)
	if err != nil {
		return err
	}
	for i := range c.IDs {
		if !c.Running(i) {
			continue
		}
		for {
			info, err := c.Info(i)
			if err == nil && info.AppliedIndex >= li.CommitIndex {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("harness: %s did not catch up to index %d: %w", c.IDs[i], li.CommitIndex, ctx.Err())
			case <-time.After(25 * time.Millisecond):
			}
		}
	}
	return nil
}

// do sends a JSON request to the leader (found afresh each try) until it answers 2xx.
func (c *Cluster) do(ctx context.Context, method, path string, body any) error {
	var lastErr error
	for {
		l, err := c.WaitLeader(ctx)
		if err != nil {
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %v)", err, lastErr)
			}
			return err
		}
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = strings.NewReader(string(b))
		}
		req, _ := http.NewRequestWithContext(ctx, method, c.URL(l)+path, rd)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			err = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
			if resp.StatusCode/100 == 4 {
				return err
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RemoveNode removes node i from the configuration (DELETE /v1/cluster/nodes/{id}).
func (c *Cluster) RemoveNode(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodDelete, "/v1/cluster/nodes/"+c.IDs[i], nil)
}

// AddNode adds node i back as a voter (POST /v1/cluster/nodes) with its advertised address.
func (c *Cluster) AddNode(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodPost, "/v1/cluster/nodes", api.AddNodeRequest{ID: c.IDs[i], RaftAddr: c.RaftAddrs[i], HTTPAddr: c.HTTPAddrs[i]})
}
