package benchkit

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memBackend is an in-memory lock service: a one-slot channel per lock. With broken set,
// Lock grants every request at once with the same token, which the workloads must flag.
type memBackend struct {
	mu     sync.Mutex
	locks  map[string]chan struct{}
	token  atomic.Uint64
	broken bool
	// noTokens makes every grant's token 0, as an unfenced system's are.
	noTokens bool
}

func (b *memBackend) Name() string      { return "mem" }
func (b *memBackend) Target() string    { return "memory" }
func (b *memBackend) ServerPIDs() []int { return []int{os.Getpid()} }
func (b *memBackend) NewSession(context.Context, int) (Session, error) {
	return &memSession{b: b}, nil
}

func (b *memBackend) slot(name string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.locks == nil {
		b.locks = map[string]chan struct{}{}
	}
	if b.locks[name] == nil {
		b.locks[name] = make(chan struct{}, 1)
	}
	return b.locks[name]
}

type memSession struct{ b *memBackend }

func (s *memSession) Lock(ctx context.Context, name string) (uint64, error) {
	if s.b.broken {
		time.Sleep(100 * time.Microsecond)
		return 1, nil
	}
	select {
	case s.b.slot(name) <- struct{}{}:
		if s.b.noTokens {
			return 0, nil
		}
		return s.b.token.Add(1), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (s *memSession) Unlock(_ context.Context, name string, _ uint64) error {
	if !s.b.broken {
		<-s.b.slot(name)
	}
	return nil
}

func (s *memSession) Close(context.Context) error { return nil }

func TestRun_Workloads(t *testing.T) {
	for _, wl := range []string{Uncontended, Parallel, Contended} {
		r, err := Run(context.Background(), &memBackend{}, Config{Workload: wl, Clients: 4, Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops == 0 || r.Errors != 0 || r.Violations != 0 || r.Latency == nil || !r.CPUMeasured {
			t.Errorf("%s: %+v", wl, r)
		}
		if wl == Contended && (r.Gap == nil || len(r.PerClient) != 4) {
			t.Errorf("contended: no gap or per-client counts: %+v", r)
		}
	}
}

func TestRun_ContendedFlagsABrokenLock(t *testing.T) {
	r, err := Run(context.Background(), &memBackend{broken: true}, Config{Workload: Contended, Clients: 4, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violations == 0 {
		t.Fatalf("a lock that grants everyone the same token was not flagged: %+v", r)
	}
}

func TestSummarize(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	l := Summarize(d)
	if l.Count != 100 || l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 {
		t.Fatalf("got %+v", l)
	}
	if Summarize(nil) != nil {
		t.Fatal("no samples should summarize to nil")
	}
}

func TestFlagValue(t *testing.T) {
	args := []string{"raftlock", "serve", "--id", "n1", "--http-addr=127.0.0.1:7001", "-data-dir", "d"}
	for flag, want := range map[string]string{"--id": "n1", "--http-addr": "127.0.0.1:7001", "--data-dir": "d", "--join": ""} {
		if got := FlagValue(args, flag); got != want {
			t.Errorf("FlagValue(%s) = %q, want %q", flag, got, want)
		}
	}
}

func TestProcReadings(t *testing.T) {
	if _, err := ProcCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if rss, _, err := ProcMem(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("rss %d, err %v", rss, err)
	}
	if _, err := MachineBusy(); err != nil {
		t.Fatal(err)
	}
}

func TestCompare(t *testing.T) {
	mk := func(sys string, scale float64) []*Result {
		return []*Result{
			{System: sys, Workload: Uncontended, Clients: 1, OpsPerSec: 100 * scale, Latency: &Latency{P50: 2 / scale}},
			{System: sys, Workload: Parallel, Clients: 64, OpsPerSec: 1000 * scale, Latency: &Latency{P50: 20 / scale}},
			{System: sys, Workload: Contended, Clients: 16, OpsPerSec: 100 * scale, Gap: &Latency{P99: 10 / scale}, PerClient: []int64{5, 5, 6}},
		}
	}
	var buf bytes.Buffer
	checked, met := Compare(&buf, mk("fast", 20), mk("slow", 1), TargetsFor("wal"))
	if checked != 8 || met != 8 {
		t.Errorf("checked %d, met %d:\n%s", checked, met, buf.String())
	}
	// boltdb's targets are looser: 3x etcd's parallel throughput meets them, not wal's.
	buf.Reset()
	if _, met := Compare(&buf, mk("mid", 3), mk("slow", 1), TargetsFor("boltdb")); met != 7 {
		t.Errorf("boltdb targets at 3x: met %d, want 7 (all but the contended rate):\n%s", met, buf.String())
	}
	buf.Reset()
	if _, met := Compare(&buf, mk("mid", 3), mk("slow", 1), TargetsFor("wal")); met != 5 {
		t.Errorf("wal targets at 3x: met %d, want 5 (not parallel, contended rate, gap):\n%s", met, buf.String())
	}
	PrintTable(&buf, mk("fast", 1))
	if !strings.Contains(buf.String(), "FIFO fairness") {
		t.Errorf("table lacks the fairness line:\n%s", buf.String())
	}
}

// unfencedBackend is a memBackend that says its grants carry no token, and that it is unsafe.
type unfencedBackend struct{ *memBackend }

func (unfencedBackend) Unfenced() string { return "no tokens here" }
func (unfencedBackend) Unsafe() string   { return "a test double" }

func TestRun_Unfenced(t *testing.T) {
	for _, wl := range []string{Uncontended, Contended} {
		cfg := Config{Workload: wl, Clients: 4, Duration: 200 * time.Millisecond}
		// Token 0 on every grant is a violation for a fenced system...
		r, err := Run(context.Background(), &memBackend{noTokens: true}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Violations == 0 {
			t.Errorf("%s: a fenced system's repeated token 0 was not flagged: %+v", wl, r)
		}
		// ...and not for one that says it has none, whose results carry why and the mark.
		r, err = Run(context.Background(), unfencedBackend{&memBackend{noTokens: true}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Ops == 0 || r.Violations != 0 || r.Unsafe != "a test double" || !strings.Contains(strings.Join(r.Notes, "\n"), "no tokens here") {
			t.Errorf("%s: unfenced run: %+v", wl, r)
		}
	}
}

func TestPrintSystems(t *testing.T) {
	res := func(sys, wl string, rate, cpu float64) *Result {
		return &Result{System: sys, Workload: wl, Clients: DefaultClients(wl), Op: "cycle", OpsPerSec: rate,
			CPUMeasured: true, ServerCPUPerOp: cpu, Latency: &Latency{P50: 1, P99: 2}}
	}
	results := []*Result{
		res("raftlock", Uncontended, 300, 0.5), res("raftlock", Parallel, 3000, 0.2),
		res("etcd", Uncontended, 200, 1), res("etcd", Parallel, 1000, 0.4),
		res("redis", Uncontended, 2000, 0.05),
		{System: "redis", Workload: Shared, Clients: 16, Unsupported: "no read/write lock recipe"},
	}
	results[4].Unsafe = "no fencing"
	var buf bytes.Buffer
	if rows := PrintSystems(&buf, results, "etcd"); rows != 5 {
		t.Errorf("%d rows with figures, want 5", rows)
	}
	out := buf.String()
	for _, want := range []string{"1.50x", "3.00x", "0.50x", "10.00x", "n/a redis shared: no read/write lock recipe", "UNSAFE redis: no fencing"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Every row of redis is marked, n/a rows included; none of the others is.
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && (f[0] == Uncontended || f[0] == Parallel || f[0] == Contended || f[0] == Shared || f[0] == Semaphore) {
			if (f[2] == "redis") != strings.Contains(line, "UNSAFE") {
				t.Errorf("row marked wrongly: %q", line)
			}
		}
	}
	if n := strings.Count(out, "redis UNSAFE"); n != len(SystemWorkloads) {
		t.Errorf("redis UNSAFE in %d rows, want %d:\n%s", n, len(SystemWorkloads), out)
	}
}

// TestTargetsFor_Names: the target sets are named by round and store, and round one's old
// name, "issue5", still selects it, as "round1" and any other name do.
func TestTargetsFor_Names(t *testing.T) {
	for store, want := range map[string]string{"boltdb": "round two, boltdb", "wal": "round two, wal", "round1": "round one", "issue5": "round one", "": "round one"} {
		if got := TargetsFor(store).Name; got != want {
			t.Errorf("TargetsFor(%q).Name = %q, want %q", store, got, want)
		}
	}
	if TargetsFor("issue5") != TargetsFor("round1") {
		t.Errorf("issue5 selects %+v, round1 %+v: want the same targets", TargetsFor("issue5"), TargetsFor("round1"))
	}
}
