package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
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
	var endpoints []string
	for _, ep := range strings.Split(o.endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			endpoints = append(endpoints, ep)
		}
	}
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
	return &session{s: s, mutexes: map[string]*concurrency.Mutex{}}, nil
}

// session is one client's etcd session and the mutexes it has used.
type session struct {
	s       *concurrency.Session
	mutexes map[string]*concurrency.Mutex
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
