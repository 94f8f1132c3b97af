package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/raftlock/raftlock/bench/benchkit"
)

// zkRoot is the parent of every lock node, so runs never touch anything else in the ensemble.
const zkRoot = "/raftlock-bench/"

// zkBackend drives a ZooKeeper ensemble with go-zookeeper/zk's Lock, the Curator-style recipe:
// a protected ephemeral sequential node under the lock's path, granted when it has the lowest
// sequence number, else a watch on the node just before it. Each client has its own ZooKeeper
// session (connection), whose ephemeral nodes are its lease, like an etcd session.
type zkBackend struct {
	leader  string
	ttl     time.Duration
	pids    []int
	version string
}

func newZKBackend(ctx context.Context, o options) (*zkBackend, error) {
	leader, version, err := zkLeader(ctx, benchkit.SplitList(o.endpoints))
	if err != nil {
		return nil, err
	}
	b := &zkBackend{leader: leader, ttl: o.ttl, version: version}
	if b.pids, err = serverPIDs(o, "zk*", func(args []string) bool {
		return len(args) > 0 && filepath.Base(args[0]) == "java" && strings.Contains(strings.Join(args, " "), "QuorumPeerMain")
	}); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *zkBackend) Name() string      { return "zookeeper" }
func (b *zkBackend) Target() string    { return "every session on the leader at " + b.leader }
func (b *zkBackend) ServerPIDs() []int { return b.pids }

// Unfenced says why ZooKeeper's grants carry no token here.
func (b *zkBackend) Unfenced() string {
	return "go-zookeeper/zk's Lock keeps its node's sequence number, ZooKeeper's fencing value, to itself"
}

// Unsupported says why a workload cannot run against ZooKeeper.
func (b *zkBackend) Unsupported(workload string) string {
	switch workload {
	case benchkit.Shared:
		return "go-zookeeper/zk has no read/write lock recipe (Lock is its only one)"
	case benchkit.Semaphore:
		return "go-zookeeper/zk has no semaphore recipe (Lock is its only one)"
	}
	return "zookeeper has no " + workload + " recipe here"
}

// Note describes how the workload ran, for the result.
func (b *zkBackend) Note() string {
	return fmt.Sprintf("go-zookeeper/zk %s Lock (ephemeral sequential node, watch on the predecessor), one session per client (timeout %s), ZooKeeper %s",
		zkClientVersion, b.ttl, b.version)
}

// zkClientVersion is the pinned client's version (go.mod), for the notes.
const zkClientVersion = "v1.0.4"

// NewSession opens a ZooKeeper session to the leader and waits until it is established.
func (b *zkBackend) NewSession(ctx context.Context, _ int) (benchkit.Session, error) {
	conn, events, err := zk.Connect([]string{b.leader}, b.ttl, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		return nil, err
	}
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return &zkSession{conn: conn, locks: map[string]*zk.Lock{}}, nil
			}
			if ev.State == zk.StateAuthFailed || ev.State == zk.StateExpired {
				conn.Close()
				return nil, fmt.Errorf("zookeeper session: %s", ev.State)
			}
		case <-deadline.C:
			conn.Close()
			return nil, errors.New("zookeeper session: not established within 15 s")
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
}

// zkSession is one client's ZooKeeper session and the locks it has used.
type zkSession struct {
	conn  *zk.Conn
	locks map[string]*zk.Lock
}

// Lock takes the lock with zk.Lock, which waits without a context: a wait ends when
// granted or when the session fails. Its token is 0 (see Unfenced).
func (s *zkSession) Lock(_ context.Context, name string) (uint64, error) {
	l := s.locks[name]
	if l == nil {
		l = zk.NewLock(s.conn, zkRoot+name, zk.WorldACL(zk.PermAll))
		s.locks[name] = l
	}
	return 0, l.Lock()
}

// Unlock deletes the session's node of the lock.
func (s *zkSession) Unlock(_ context.Context, name string, _ uint64) error {
	l := s.locks[name]
	if l == nil {
		return fmt.Errorf("unlock %s: not locked by this session", name)
	}
	return l.Unlock()
}

// Close ends the session; the server deletes its ephemeral nodes.
func (s *zkSession) Close(context.Context) error {
	s.conn.Close()
	return nil
}

// nopLogger silences the client's connection log lines.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// zkLeader asks each server for its mode with the four-letter word srvr (the client's
// FLWSrvr does not parse the Debian build's version line) and returns the leader's
// address and the version it reports.
func zkLeader(ctx context.Context, servers []string) (string, string, error) {
	deadline := time.Now().Add(15 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		for _, s := range servers {
			out, err := fourLetterWord(s, "srvr")
			if err != nil {
				last = err
				continue
			}
			var mode, version string
			for _, line := range strings.Split(out, "\n") {
				if v, ok := strings.CutPrefix(line, "Mode: "); ok {
					mode = strings.TrimSpace(v)
				}
				if v, ok := strings.CutPrefix(line, "Zookeeper version: "); ok {
					version, _, _ = strings.Cut(v, "-")
				}
			}
			if mode == "leader" {
				return s, version, nil
			}
		}
		benchkit.Sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
	}
	return "", "", fmt.Errorf("no leader among %v within 15 s: %w", servers, errors.Join(last, errors.New("no server says it leads")))
}

func fourLetterWord(server, word string) (string, error) {
	c, err := net.DialTimeout("tcp", server, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}
