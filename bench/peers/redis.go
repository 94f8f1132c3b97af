package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/raftlock/raftlock/bench/benchkit"
)

// redisPrefix starts every lock key, so runs never touch anything else on the server.
const redisPrefix = "raftlock-bench:"

// release deletes the key only if it still holds this grant's value: the compare-and-delete
// every SET NX lock client uses, so that a holder whose lock expired cannot delete the next
// holder's.
var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// redisBackend drives one Redis server with SET key value NX PX ttl and the Lua
// compare-and-delete release, through one go-redis client (a connection pool) shared by
// every client, as an application would have it. A lock that is held is waited for the way
// Redlock clients do: try again after a delay, here doubling from backoffMin to backoffMax,
// each delay drawn uniformly from its upper half (jitter, so waiters do not retry in step).
type redisBackend struct {
	cli        *redis.Client
	addr       string
	ttl        time.Duration
	backoffMin time.Duration
	backoffMax time.Duration
	pids       []int
	version    string
	fsync      string
	refused    atomic.Int64 // SET NX answers "held" (each one is a retry)
}

func newRedisBackend(ctx context.Context, o options) (*redisBackend, error) {
	addr := benchkit.SplitList(o.endpoints)[0]
	b := &redisBackend{addr: addr, ttl: o.ttl, backoffMin: o.backoffMin, backoffMax: o.backoffMax}
	if b.backoffMin <= 0 || b.backoffMax < b.backoffMin {
		return nil, fmt.Errorf("backoff %s..%s: want 0 < min <= max", b.backoffMin, b.backoffMax)
	}
	// A pool at least as large as the clients, so that none waits for a connection.
	b.cli = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128, MinIdleConns: 0})
	info, err := b.cli.Info(ctx, "server").Result()
	if err != nil {
		b.cli.Close()
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			b.version = v
		}
	}
	cfg, err := b.cli.ConfigGet(ctx, "appendfsync").Result()
	if err != nil {
		b.cli.Close()
		return nil, err
	}
	b.fsync = cfg["appendfsync"]
	if aof, err := b.cli.ConfigGet(ctx, "appendonly").Result(); err == nil && aof["appendonly"] != "yes" {
		b.fsync = "none (appendonly no)"
	}
	_, port, _ := strings.Cut(addr, ":")
	if b.pids, err = serverPIDs(o, "", func(args []string) bool {
		return len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "redis-server") && strings.Contains(strings.Join(args, " "), ":"+port)
	}); err != nil {
		b.cli.Close()
		return nil, err
	}
	return b, nil
}

func (b *redisBackend) Name() string      { return "redis" }
func (b *redisBackend) Target() string    { return "the one server at " + b.addr }
func (b *redisBackend) ServerPIDs() []int { return b.pids }

// Unfenced says why Redis's grants carry no token.
func (b *redisBackend) Unfenced() string { return "SET NX has no fencing token" }

// Unsafe says why a Redis lock is not a safe one.
func (b *redisBackend) Unsafe() string {
	why := "no fencing token (a holder that pauses past the TTL writes beside the next holder) and no consensus " +
		"(one server; its replicas are asynchronous, so a failover can hand a held lock out again)"
	if b.fsync != "always" {
		why += "; appendfsync " + b.fsync + " also loses about the last second of granted locks when the machine crashes"
	}
	return why
}

// Unsupported says why a workload cannot run against Redis.
func (b *redisBackend) Unsupported(workload string) string {
	return "Redis has no " + workload + " recipe in go-redis or beside SET NX (only the exclusive lock)"
}

// Note describes how the workload ran, for the result.
func (b *redisBackend) Note() string {
	return fmt.Sprintf("SET key value NX PX %d + Lua compare-and-delete, go-redis %s, one pooled client; a held lock is retried after %s doubling to %s (jitter: each delay uniform in its upper half); Redis %s, appendfsync %s",
		b.ttl.Milliseconds(), redisClientVersion, b.backoffMin, b.backoffMax, b.version, b.fsync)
}

// redisClientVersion is the pinned client's version (go.mod), for the notes.
const redisClientVersion = "v9.23.0"

func (b *redisBackend) close() { b.cli.Close() }

// NewSession returns a client: an identity for its grants' values. Redis has no session.
func (b *redisBackend) NewSession(context.Context, int) (benchkit.Session, error) {
	var id [8]byte
	if _, err := crand(id[:]); err != nil {
		return nil, err
	}
	return &redisSession{b: b, id: hex.EncodeToString(id[:]), held: map[string]string{}}, nil
}

var crand = rand.Read

// redisSession is one client; held maps each lock it holds to its grant's value.
type redisSession struct {
	b    *redisBackend
	id   string
	n    uint64
	held map[string]string
}

// Lock sets the key if it is absent, with the TTL, retrying with backoff while it is held.
// Its token is 0 (see Unfenced).
func (s *redisSession) Lock(ctx context.Context, name string) (uint64, error) {
	s.n++
	val := s.id + ":" + strconv.FormatUint(s.n, 10)
	key := redisPrefix + name
	delay := s.b.backoffMin
	for {
		err := s.b.cli.Do(ctx, "set", key, val, "nx", "px", s.b.ttl.Milliseconds()).Err()
		if err == nil {
			s.held[name] = val
			return 0, nil
		}
		if !errors.Is(err, redis.Nil) {
			return 0, err
		}
		s.b.refused.Add(1)
		benchkit.Sleep(ctx, delay/2+mrand.N(delay/2+1))
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		delay = min(2*delay, s.b.backoffMax)
	}
}

// Unlock deletes the key if it still holds this session's grant.
func (s *redisSession) Unlock(ctx context.Context, name string, _ uint64) error {
	val, ok := s.held[name]
	if !ok {
		return fmt.Errorf("unlock %s: not locked by this client", name)
	}
	n, err := release.Run(ctx, s.b.cli, []string{redisPrefix + name}, val).Int()
	if err != nil {
		return err
	}
	delete(s.held, name)
	if n != 1 {
		return fmt.Errorf("unlock %s: the lock had expired (another client may hold it)", name)
	}
	return nil
}

func (s *redisSession) Close(context.Context) error { return nil }
