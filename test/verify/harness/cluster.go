package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
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

// Cluster is a set of `raftlock serve` processes (a testcluster.Processes) seen as the
// nemesis sees it: methods that return errors, a leader that unpaused nodes agree on, and
// membership changes. Node indexes are 0-based; IDs are n1...
type Cluster struct {
	p   *testcluster.Processes
	cfg ClusterConfig

	IDs       []string
	HTTPAddrs []string
	RaftBind  []string
	RaftAddrs []string // advertised
}

// NewCluster prepares the addresses and advertised addresses of cfg.N nodes and starts
// them all; it does not wait for a leader (see WaitLeader).
func NewCluster(t testing.TB, cfg ClusterConfig) (*Cluster, error) {
	t.Helper()
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = 500 * time.Millisecond
	}
	c := &Cluster{cfg: cfg}
	c.p = testcluster.NewProcessesWith(t, cfg.N, testcluster.Options{
		Binary: cfg.Binary,
		Dir:    cfg.Dir,
		Env:    append(os.Environ(), cfg.Env...),
		Extra:  append([]string{"--election-timeout", cfg.ElectionTimeout.String()}, cfg.Extra...),
		Addrs: func(i int, a *testcluster.Addrs) error {
			a.RaftAdvertise = a.Raft
			if cfg.Advertise == nil {
				return nil
			}
			var err error
			a.RaftAdvertise, err = cfg.Advertise(i, a.Raft)
			return err
		},
	})
	for i := 0; i < cfg.N; i++ {
		a := c.p.Addrs(i)
		c.IDs = append(c.IDs, c.p.ID(i))
		c.HTTPAddrs = append(c.HTTPAddrs, a.HTTP)
		c.RaftBind = append(c.RaftBind, a.Raft)
		c.RaftAddrs = append(c.RaftAddrs, a.RaftAdvertise)
	}
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
func (c *Cluster) LogPath(i int) string { return c.p.LogPath(i) }

// Log returns node i's log so far.
func (c *Cluster) Log(i int) string { return c.p.Log(i) }

// Start starts node i (a no-op if it runs), retrying while a lingering socket holds its
// port (testcluster.Processes.TryStart).
func (c *Cluster) Start(i int) error { return c.p.TryStart(i) }

// Running reports whether node i's process runs (possibly stopped by SIGSTOP).
func (c *Cluster) Running(i int) bool { return c.p.Running(i) }

// Paused reports whether node i is stopped by SIGSTOP.
func (c *Cluster) Paused(i int) bool { return c.p.Paused(i) }

// Pids maps the process ID of every running node to its index.
func (c *Cluster) Pids() map[int]int { return c.p.Pids() }

// Pause stops node i with SIGSTOP.
func (c *Cluster) Pause(i int) error { return c.p.Signal(i, syscall.SIGSTOP) }

// Resume continues node i with SIGCONT.
func (c *Cluster) Resume(i int) error { return c.p.Signal(i, syscall.SIGCONT) }

// Kill kills node i with SIGKILL and waits until it has exited. It fails when node i is not
// running, so that a fault that killed nothing is not counted as a kill.
func (c *Cluster) Kill(i int) error { return c.p.Stop(i, syscall.SIGKILL, 10*time.Second) }

// Terminate stops node i with SIGTERM (graceful: a leader hands off leadership first) and
// waits up to 20 s, then kills it.
func (c *Cluster) Terminate(i int) error {
	if err := c.p.Stop(i, syscall.SIGTERM, 20*time.Second); !errors.Is(err, testcluster.ErrSlowExit) {
		return err
	}
	return nil
}

// KillAll kills every node.
func (c *Cluster) KillAll() { c.p.KillAll() }

// URL returns node i's base URL.
func (c *Cluster) URL(i int) string { return c.p.URL(i) }

// Endpoints returns every node's base URL.
func (c *Cluster) Endpoints() []string { return c.p.Endpoints() }

var (
	infoClient   = &http.Client{Timeout: time.Second}
	leaderClient = rawhttp.Client{HTTP: &http.Client{Timeout: 10 * time.Second}}
)

// Info asks node i for GET /v1/cluster.
func (c *Cluster) Info(i int) (api.Cluster, error) { return rawhttp.ClusterInfo(infoClient, c.URL(i)) }

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
			if a := (rawhttp.Client{HTTP: infoClient}).Do(http.MethodGet, c.URL(l)+"/v1/locks?prefix=%00", ""); a.Status == http.StatusOK {
				return l, nil
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
		a := leaderClient.Send(ctx, method, c.URL(l)+path, rawhttp.JSON(body))
		err = a.Err
		if err == nil {
			if a.OK() {
				return nil
			}
			err = fmt.Errorf("%s %s: %d %s", method, path, a.Status, a.Raw)
			if a.Status/100 == 4 {
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
