// Command inproc runs a three-node raftlock cluster inside one process (real raft, BoltDB
// files, TCP and HTTP on loopback, exactly the cluster and transport packages that
// `raftlock serve` runs) and writes a CPU profile of all three servers while a load
// generator in another process, raftlock-bench, drives it:
//
//	go run ./bench/inproc --duration 20s --cpuprofile /tmp/cpu.pprof &
//	bin/raftlock-bench --endpoints http://127.0.0.1:17001,http://127.0.0.1:17002,http://127.0.0.1:17003 parallel
//	go tool pprof -top /tmp/cpu.pprof
//
// The servers do not expose /debug/pprof; this is how the benchmark suite profiles them
// without changing them. The profile holds server work only: the load comes from outside.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/bench/benchkit"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/transport"
)

func main() { benchkit.MainErr("inproc", run) }

func run(ctx context.Context) error {
	httpBase := flag.Int("http-base", 17000, "node i serves HTTP on 127.0.0.1:http-base+i")
	raftBase := flag.Int("raft-base", 18000, "node i serves Raft on 127.0.0.1:raft-base+i")
	dir := flag.String("data-dir", "", "data directory (default: a new temporary directory, removed at exit)")
	duration := flag.Duration("duration", 20*time.Second, "how long to profile once the cluster is ready")
	delay := flag.Duration("delay", 0, "wait this long after the cluster is ready before profiling (the load generator's warm-up)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the servers here")
	mutexprofile := flag.String("mutexprofile", "", "write a mutex contention profile here")
	allocprofile := flag.String("allocprofile", "", "write the allocations made while profiling here, and those before it to FILE.base (go tool pprof -sample_index=alloc_space -base FILE.base FILE)")
	linger := flag.Duration("linger", 10*time.Second, "keep serving this long after the profile is written, so the load generator can finish cleanly")
	logLevel := flag.String("log-level", "warn", "server log level")
	flag.Parse()

	if *dir == "" {
		d, err := os.MkdirTemp("", "raftlock-inproc-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "inproc", Level: hclog.LevelFromString(*logLevel), Output: os.Stderr})
	var peers []cluster.Peer
	for i := 1; i <= 3; i++ {
		peers = append(peers, cluster.Peer{ID: fmt.Sprintf("n%d", i), RaftAddr: fmt.Sprintf("127.0.0.1:%d", *raftBase+i)})
	}
	type member struct {
		node *cluster.Node
		srv  *transport.Server
	}
	var members []member
	defer func() {
		for _, m := range members {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = m.srv.Shutdown(sctx)
			cancel()
			_ = m.node.Shutdown()
		}
	}()
	for i, p := range peers {
		addr := fmt.Sprintf("127.0.0.1:%d", *httpBase+i+1)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		node, err := cluster.New(cluster.Config{ID: p.ID, RaftBind: p.RaftAddr, HTTPAddr: addr,
			DataDir: filepath.Join(*dir, p.ID), Bootstrap: peers, Logger: logger.Named(p.ID)})
		if err != nil {
			l.Close()
			return err
		}
		srv, err := transport.NewServer(transport.Config{Services: transport.NodeServices(node), Logger: logger.Named(p.ID)})
		if err != nil {
			l.Close()
			node.Shutdown()
			return err
		}
		go srv.Serve(l)
		members = append(members, member{node, srv})
	}
	deadline := time.Now().Add(30 * time.Second)
	for ready := false; !ready; {
		for _, m := range members {
			ready = ready || (m.node.IsLeader() && m.node.Ready())
		}
		for _, m := range members {
			ready = ready && m.node.LeaderHTTPAddr() != ""
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no ready leader within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "inproc: cluster ready, HTTP on 127.0.0.1:%d-%d\n", *httpBase+1, *httpBase+3)

	select {
	case <-time.After(*delay):
	case <-ctx.Done():
		return nil
	}
	if *mutexprofile != "" {
		runtime.SetMutexProfileFraction(5)
	}
	// The allocation profile counts from the start of the process; a delta needs the
	// counts at the start of the window, which a profile written now and subtracted with
	// pprof -base gives.
	if *allocprofile != "" {
		if err := writeProfile("allocs", *allocprofile+".base"); err != nil {
			return err
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "inproc: profiling for %v\n", *duration)
	}
	select {
	case <-time.After(*duration):
	case <-ctx.Done():
	}
	pprof.StopCPUProfile()
	if *mutexprofile != "" {
		f, err := os.Create(*mutexprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("mutex").WriteTo(f, 0); err != nil {
			return err
		}
	}
	if *allocprofile != "" {
		if err := writeProfile("allocs", *allocprofile); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "inproc: profile written; serving %v more\n", *linger)
	select {
	case <-time.After(*linger):
	case <-ctx.Done():
	}
	return nil
}

// writeProfile writes the runtime profile name to path.
func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("writing the %s profile: %w", name, err)
	}
	return f.Close()
}
