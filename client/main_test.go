package client_test

import (
	"context"
	"fmt"
	"net"
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
	raftL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	raftAddr := raftL.Addr().String()
	raftL.Close()
	httpL, err := net.Listen("tcp", "127.0.0.1:0")
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(exampleURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("example cluster not ready after 30s: %v", err))
		}
		time.Sleep(10 * time.Millisecond)
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

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	clustertest.WaitFor(t, d, what, cond)
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

// cutProxy is an HTTP proxy to a node that can be cut: while cut, every request fails at
// the connection level, as if the network to the cluster were down.
type cutProxy struct {
	srv *http.Server
	url string
	cut atomic.Bool
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{url: "http://" + l.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.cut.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(l)
	t.Cleanup(func() { p.srv.Close() })
	return p
}
