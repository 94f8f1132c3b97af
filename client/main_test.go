package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/cluster/clustertest"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/transport"
)

// The examples need a cluster but get no *testing.T, so they share a one-node cluster
// started on first use and stopped by TestMain.
var (
	exampleOnce sync.Once
	exampleURL  string
	exampleStop func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if exampleStop != nil {
		exampleStop()
	}
	os.Exit(code)
}

// exampleEndpoints returns the endpoints of the examples' cluster, starting it first.
func exampleEndpoints() []string {
	exampleOnce.Do(startExampleCluster)
	return []string{exampleURL}
}

func startExampleCluster() {
	dir, err := os.MkdirTemp("", "raftlock-example-")
	if err != nil {
		panic(err)
	}
	raftAddr, err := testkit.FreeAddr()
	if err != nil {
		panic(err)
	}
	httpL, err := testkit.ListenLoopback()
	if err != nil {
		panic(err)
	}
	logger := hclog.NewNullLogger()
	node, err := cluster.New(cluster.Config{
		ID: "n1", RaftBind: raftAddr, HTTPAddr: httpL.Addr().String(), DataDir: dir,
		Bootstrap: []cluster.Peer{{ID: "n1", RaftAddr: raftAddr}}, Logger: logger,
	})
	if err != nil {
		panic(err)
	}
	srv, err := transport.NewServer(transport.Config{Services: transport.NodeServices(node), Logger: logger})
	if err != nil {
		panic(err)
	}
	go srv.Serve(httpL)
	exampleURL = "http://" + httpL.Addr().String()
	exampleStop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		node.Shutdown()
		os.RemoveAll(dir)
	}
	var lastErr error
	ready := testkit.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		a := rawhttp.Client{}.Do(http.MethodGet, exampleURL+"/readyz", "")
		lastErr = a.Err
		return a.Status == http.StatusOK
	})
	if !ready {
		panic(fmt.Sprintf("example cluster not ready after 30s: %v", lastErr))
	}
}

// newClient returns a client that logs through t.
func newClient(t testing.TB, endpoints []string, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithLogger(clustertest.Logger(t, "client"))}, opts...)
	c, err := client.New(endpoints, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	return clustertest.Ctx(t, d)
}

// closed reports whether ch is closed, without blocking.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// mustStatus reads a lock's status or fails the test.
func mustStatus(t testing.TB, c *client.Client, name string) api.LockStatus {
	t.Helper()
	st, err := c.Status(ctxFor(t, 10*time.Second), name, client.StatusOptions{})
	if err != nil {
		t.Fatalf("status %q: %v", name, err)
	}
	return st
}

// lockedMutex returns a Mutex of name, with its own lease of 2 s, once it holds the lock.
func lockedMutex(t testing.TB, c *client.Client, name string) *client.Mutex {
	t.Helper()
	m := c.NewMutex(name, client.WithLeaseTTL(2*time.Second))
	if err := m.Lock(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	return m
}

// mustLease creates a kept-alive lease closed at the end of the test.
func mustLease(t testing.TB, c *client.Client, ttl time.Duration, opts ...client.LeaseOption) *client.Lease {
	t.Helper()
	l, err := c.NewLease(ctxFor(t, 10*time.Second), ttl, opts...)
	if err != nil {
		t.Fatalf("new lease: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.Close(ctx)
	})
	return l
}

// serveProxy serves a reverse proxy to target on a loopback port until the test ends, and
// returns its base URL. wrap puts the test's own handling in front of the proxy.
func serveProxy(t testing.TB, target string, wrap func(proxy http.Handler) http.HandlerFunc) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l := testkit.Listen(t)
	srv := &http.Server{Handler: wrap(httputil.NewSingleHostReverseProxy(u)), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// cutProxy is an HTTP proxy to a node that can be cut: while cut, every request fails at
// the connection level, as if the network to the cluster were down.
type cutProxy struct {
	url string
	cut atomic.Bool
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	p := &cutProxy{}
	p.url = serveProxy(t, target, func(proxy http.Handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if p.cut.Load() {
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						conn.Close()
						return
					}
				}
				panic(http.ErrAbortHandler)
			}
			proxy.ServeHTTP(w, r)
		}
	})
	return p
}
