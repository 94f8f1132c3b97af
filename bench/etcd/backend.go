package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	recipe "go.etcd.io/etcd/client/v3/experimental/recipes"
	"go.uber.org/zap"

	"github.com/raftlock/raftlock/bench/benchkit"
)

// keyPrefix starts every lock key, so runs never touch anything else in the cluster.
const keyPrefix = "/raftlock-bench/"

// backend drives etcd with concurrency.Mutex. All clients share one clientv3.Client
// (one gRPC connection, as an application would have), each with its own session.
type backend struct {
	cli     *clientv3.Client
	ttl     int
	pids    []int
	target  string
	version string
}

func newBackend(ctx context.Context, o options) (*backend, error) {
	endpoints := benchkit.SplitList(o.endpoints)
	leader, version, err := findLeader(ctx, endpoints)
	if err != nil {
		return nil, err
	}
	b := &backend{ttl: o.ttl, version: version}
	use := endpoints
	switch o.target {
	case "leader":
		use = []string{leader}
		b.target = "all requests to the leader at " + leader
	case "all":
		b.target = "the client balances over " + strings.Join(endpoints, ", ") + " (followers forward to the leader)"
	default:
		return nil, fmt.Errorf("-target %q: want leader or all", o.target)
	}
	if b.cli, err = clientv3.New(clientv3.Config{Endpoints: use, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
		return nil, err
	}
	if b.pids, err = serverPIDs(o, endpoints); err != nil {
		b.cli.Close()
		return nil, err
	}
	return b, nil
}

func (b *backend) Name() string      { return "etcd" }
func (b *backend) Target() string    { return b.target }
func (b *backend) ServerPIDs() []int { return b.pids }

// NewSession opens a concurrency.Session: a lease with the TTL, kept alive by the client.
func (b *backend) NewSession(ctx context.Context, _ int) (benchkit.Session, error) {
	s, err := concurrency.NewSession(b.cli, concurrency.WithTTL(b.ttl), concurrency.WithContext(context.Background()))
	if err != nil {
		return nil, err
	}
	return &session{s: s, mutexes: map[string]*concurrency.Mutex{}, rw: map[string]*recipe.RWMutex{}}, nil
}

// Unsupported says why a workload cannot run against etcd.
func (b *backend) Unsupported(workload string) string {
	if workload == benchkit.Semaphore {
		return noSemaphore
	}
	return "etcd has no " + workload + " primitive"
}

// noSemaphore is what etcd-bench says when asked for the semaphore workload.
const noSemaphore = "etcd has no semaphore: client/v3/concurrency has Mutex and Election only, " +
	"and client/v3/experimental/recipes has none; the semaphore workload runs on raftlock alone"

// session is one client's etcd session and the mutexes it has used.
type session struct {
	s       *concurrency.Session
	mutexes map[string]*concurrency.Mutex
	rw      map[string]*recipe.RWMutex
}

var _ benchkit.SharedLocker = (*session)(nil)

// LockMode takes etcd's nearest recipe to a shared lock, the RWMutex of
// client/v3/experimental/recipes (keys under the name, readers wait for older writers,
// writers for every older key). It exposes no fencing value and takes no context: the
// token is 0, and a wait ends only when granted (or the session ends).
func (s *session) LockMode(_ context.Context, name string, shared bool) (uint64, error) {
	m := s.rw[name]
	if m == nil {
		m = recipe.NewRWMutex(s.s, keyPrefix+"rw/"+name)
		s.rw[name] = m
	}
	if shared {
		return 0, m.RLock()
	}
	return 0, m.Lock()
}

// UnlockMode releases a grant of LockMode.
func (s *session) UnlockMode(_ context.Context, name string, _ uint64, shared bool) error {
	m := s.rw[name]
	if m == nil {
		return fmt.Errorf("unlock %s: not locked by this session", name)
	}
	if shared {
		return m.RUnlock()
	}
	return m.Unlock()
}

// Lock takes the mutex; its fencing value is the revision of the answer that granted it.
func (s *session) Lock(ctx context.Context, name string) (uint64, error) {
	m := s.mutexes[name]
	if m == nil {
		m = concurrency.NewMutex(s.s, keyPrefix+name)
		s.mutexes[name] = m
	}
	if err := m.Lock(ctx); err != nil {
		return 0, err
	}
	return uint64(m.Header().Revision), nil
}

func (s *session) Unlock(ctx context.Context, name string, _ uint64) error {
	m := s.mutexes[name]
	if m == nil {
		return fmt.Errorf("unlock %s: not locked by this session", name)
	}
	return m.Unlock(ctx)
}

func (s *session) Close(context.Context) error { return s.s.Close() }
