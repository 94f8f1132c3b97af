package benchkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Backend is a lock service driven by the workloads.
type Backend interface {
	// Name names the system in reports ("raftlock", "etcd").
	Name() string
	// Target says where the lock traffic goes, for the report ("leader n1 at ...").
	Target() string
	// NewSession opens worker's session: one lease, kept alive in the background until
	// Close, like etcd's concurrency.Session.
	NewSession(ctx context.Context, worker int) (Session, error)
	// ServerPIDs lists the server processes whose CPU is charged to the workload; empty
	// means server CPU is not measured.
	ServerPIDs() []int
}

// BackgroundErrorer is implemented by a Backend whose sessions do work in the background
// (keepalives); the errors it counts during the measured time are added to the result.
type BackgroundErrorer interface {
	BackgroundErrors() int64
}

// Retrier is implemented by a Backend that retries operations the service asked it to
// retry (an election in progress); the retries during the measured time are reported.
// A retried operation that then succeeds is not an error; its latency includes the retry.
type Retrier interface {
	Retries() int64
}

// Unfenced is implemented by a Backend whose grants carry no fencing token (a Redis SET NX
// lock; a ZooKeeper client whose recipe keeps its node's sequence number to itself). Its
// sessions return token 0 and the lock workloads check mutual exclusion with their holder
// counter alone; Unfenced says why, for the result's notes.
type Unfenced interface {
	Unfenced() string
}

// Unsafer is implemented by a Backend that is not a safe lock service (Redis: no fencing,
// no consensus, a lock lost with the one server's unsynced writes). Its results carry the
// reason, and every table marks their rows UNSAFE.
type Unsafer interface {
	Unsafe() string
}

// Session is one client: a lease and the locks it takes with it.
type Session interface {
	// Lock takes lock name, waiting in the lock's queue while another session holds it,
	// and returns the grant's fencing token (raftlock: the token; etcd: the revision of
	// the grant), which must increase from one grant of a lock to the next.
	Lock(ctx context.Context, name string) (uint64, error)
	// Unlock releases lock name, granted with token.
	Unlock(ctx context.Context, name string, token uint64) error
	// Close ends the session and revokes its lease.
	Close(ctx context.Context) error
}

// The lock workloads.
const (
	Uncontended = "uncontended"
	Parallel    = "parallel"
	Contended   = "contended"
)

// DefaultClients returns a workload's default number of clients: 1, 64 and 16, the
// figures the targets are stated for.
func DefaultClients(workload string) int {
	switch workload {
	case Uncontended:
		return 1
	case Parallel:
		return 64
	case Contended, Shared, Semaphore:
		return 16
	}
	return 1
}

// ParseWorkloads parses args with fs and returns the workloads they name, in order, "all"
// standing for every one of known. A workload in unsupported is refused with its message.
// nil names means exit status 2: a bad flag (fs has printed why), no workload (the usage is
// printed), or err, an unknown or unsupported workload.
func ParseWorkloads(fs *flag.FlagSet, args, known []string, unsupported map[string]string) (names []string, err error) {
	if err := fs.Parse(args); err != nil {
		return nil, nil
	}
	for _, a := range fs.Args() {
		switch {
		case a == "all":
			names = append(names, known...)
		case slices.Contains(known, a):
			names = append(names, a)
		case unsupported[a] != "":
			return nil, errors.New(unsupported[a])
		default:
			return nil, fmt.Errorf("unknown workload %q; known: %s, all", a, strings.Join(known, ", "))
		}
	}
	if len(names) == 0 {
		fs.Usage()
	}
	return names, nil
}

// Config configures one run of a lock workload.
type Config struct {
	// Workload is Uncontended, Parallel or Contended.
	Workload string
	// Clients is the number of concurrent clients (sessions); zero means DefaultClients.
	Clients int
	// Duration is the measured time; zero means 10 s.
	Duration time.Duration
	// Warmup runs the workload unmeasured first; zero means none.
	Warmup time.Duration
	// Progress, when non-nil, receives a line every second.
	Progress io.Writer
	// Hold is how long the shared and semaphore workloads keep each grant before giving
	// it back; zero gives it back at once, like the contended workload.
	Hold time.Duration
	// Prefix starts every lock name; empty means "bench/<unix nanoseconds>", so that runs
	// against a long-lived cluster never meet each other's locks.
	Prefix string
}

// Run runs a lock workload against b and reports what it measured. It fails only when
// the workload cannot start (a session cannot be opened); errors of individual operations
// are counted in the result.
func Run(ctx context.Context, b Backend, cfg Config) (*Result, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = DefaultClients(cfg.Workload)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "bench/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	var body func(r *run, i int)
	switch cfg.Workload {
	case Uncontended, Parallel:
		body = (*run).independent
	case Contended:
		body = (*run).contended
	case Shared, Semaphore:
		body = (*run).primitive
	default:
		return nil, fmt.Errorf("benchkit: unknown workload %q", cfg.Workload)
	}

	r := &run{cfg: cfg, workers: make([]worker, cfg.Clients), fenced: true}
	if u, ok := b.(Unfenced); ok {
		r.fenced, r.unfenced = false, u.Unfenced()
	}
	sessions, err := openSessions(ctx, b, cfg.Clients)
	if err != nil {
		return nil, err
	}
	r.sessions = sessions
	defer closeSessions(sessions)
	if err := supports(b, sessions[0], cfg.Workload); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(ctx)
	r.ctx = runCtx
	var wg sync.WaitGroup
	for i := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(r, i)
		}()
	}
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()

	Sleep(ctx, cfg.Warmup)
	meter := NewCPUMeter(b.ServerPIDs())
	meter.Start()
	bgStart, retriesStart := backgroundErrors(b), retries(b)
	r.measuring.Store(true)
	ticker := time.NewTicker(time.Second)
	deadline := time.NewTimer(cfg.Duration)
	start, lastOps, lastT := time.Now(), int64(0), time.Now()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline.C:
			break loop
		case now := <-ticker.C:
			ops := r.ops.Load()
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "%s %-11s %3.0fs  %8d ops  %8.0f/s  errors %d  violations %d\n",
					b.Name(), cfg.Workload, now.Sub(start).Seconds(), ops,
					float64(ops-lastOps)/now.Sub(lastT).Seconds(), r.errors.Load(), r.violations.Load())
			}
			lastOps, lastT = ops, now
		}
	}
	ticker.Stop()
	deadline.Stop()
	r.measuring.Store(false)
	use := meter.Stop()
	r.errors.Add(backgroundErrors(b) - bgStart)
	r.retries = retries(b) - retriesStart
	cancel()
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		r.fail(errors.New("workers did not stop within 15 s of the end of the run"))
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return r.result(b, use), nil
}

// run is the shared state of one workload run.
type run struct {
	cfg       Config
	ctx       context.Context
	sessions  []Session
	workers   []worker
	measuring atomic.Bool
	// fenced is false for an Unfenced backend, whose tokens are not checked; unfenced says why.
	fenced   bool
	unfenced string

	ops        atomic.Int64
	errors     atomic.Int64
	violations atomic.Int64
	retries    int64

	mu          sync.Mutex
	errSamples  Samples
	violSamples Samples
	holders     int // holders of the lock (contended), readers or permits (shared, semaphore)
	writers     int // exclusive holders (shared)
	lastToken   uint64
	releasedAt  time.Time // when the last holder called Unlock (contended)
}

// worker is one client's measurements, touched only by its own goroutine until the end.
type worker struct {
	latency []time.Duration // cycle (independent) or acquire wait (contended)
	gaps    []time.Duration // release called -> next acquire returned (contended)
	count   int64           // acquisitions measured (contended)
}

// failed records the error of a failed operation what, unless the run is stopping, and
// pauses a little before the worker's next try.
func (r *run) failed(what string, err error) {
	if !r.stopping(err) {
		r.fail(fmt.Errorf("%s: %w", what, err))
		Sleep(r.ctx, 10*time.Millisecond)
	}
}

func (r *run) fail(err error) {
	r.errors.Add(1)
	r.errSamples.Add(err.Error())
}

func (r *run) violate(format string, args ...any) {
	r.violations.Add(1)
	r.violSamples.Add(fmt.Sprintf(format, args...))
}

// stopping reports whether err is only the run ending.
func (r *run) stopping(err error) bool {
	return r.ctx.Err() != nil && err != nil
}

// independent is the uncontended and parallel body: each client takes and releases a
// lock of its own, in a loop. One cycle is acquire plus release.
func (r *run) independent(i int) {
	s, w := r.sessions[i], &r.workers[i]
	name := r.cfg.Prefix + "/" + r.cfg.Workload + "/" + strconv.Itoa(i)
	var last uint64
	unsure := false
	for r.ctx.Err() == nil {
		start := time.Now()
		tok, err := s.Lock(r.ctx, name)
		if err != nil {
			r.failed("lock", err)
			continue
		}
		// After a failed unlock the lease may still hold the lock, and acquiring it again
		// returns the same grant: the token may repeat then, never go backwards.
		if r.fenced && (tok < last || (tok == last && !unsure)) {
			r.violate("lock %s: token %d after %d", name, tok, last)
		}
		last, unsure = tok, false
		if err := s.Unlock(r.ctx, name, tok); err != nil {
			if !r.stopping(err) {
				r.fail(fmt.Errorf("unlock: %w", err))
				unsure = true
			}
			continue
		}
		if r.measuring.Load() {
			w.latency = append(w.latency, time.Since(start))
			r.ops.Add(1)
		}
	}
}

// contended is the contended body: every client takes the same lock, waiting in its
// queue, and releases it at once. A holder counter catches any two clients holding the
// lock at the same time, and tokens must strictly increase from one grant to the next.
func (r *run) contended(i int) {
	s, w := r.sessions[i], &r.workers[i]
	name := r.cfg.Prefix + "/contended"
	unsure := false
	for r.ctx.Err() == nil {
		start := time.Now()
		tok, err := s.Lock(r.ctx, name)
		got := time.Now()
		if err != nil {
			r.failed("lock", err)
			continue
		}
		r.mu.Lock()
		r.holders++
		others := r.holders - 1
		prev := r.lastToken
		r.lastToken = max(prev, tok)
		released := r.releasedAt
		r.mu.Unlock()
		if others > 0 {
			r.violate("client %d granted %s (token %d) while %d other client(s) held it", i, name, tok, others)
		}
		if r.fenced && (tok < prev || (tok == prev && !unsure)) {
			r.violate("lock %s: token %d granted after %d", name, tok, prev)
		}
		unsure = false

		if r.measuring.Load() {
			w.latency = append(w.latency, got.Sub(start))
			if !released.IsZero() {
				w.gaps = append(w.gaps, got.Sub(released))
			}
			w.count++
			r.ops.Add(1)
		}

		r.mu.Lock()
		r.holders--
		r.releasedAt = time.Now()
		r.mu.Unlock()
		if err := s.Unlock(r.ctx, name, tok); err != nil && !r.stopping(err) {
			r.fail(fmt.Errorf("unlock: %w", err))
			unsure = true // the lease may still hold the lock: the same grant may come back
		}
	}
}

func (r *run) result(b Backend, use CPUUse) *Result {
	res := &Result{
		System:     b.Name(),
		Workload:   r.cfg.Workload,
		Clients:    r.cfg.Clients,
		Target:     b.Target(),
		Seconds:    use.Wall.Seconds(),
		Ops:        r.ops.Load(),
		Errors:     r.errors.Load(),
		Violations: r.violations.Load(),
		Retries:    r.retries,
		ErrSamples: append(r.errSamples.List(), r.violSamples.List()...),
		Op:         "cycle",
	}
	var lat, gaps []time.Duration
	for i := range r.workers {
		lat = append(lat, r.workers[i].latency...)
		gaps = append(gaps, r.workers[i].gaps...)
	}
	res.Latency = Summarize(lat)
	if !r.fenced {
		res.Notes = append(res.Notes, "tokens not checked (mutual exclusion is, by the holder counter): "+r.unfenced)
	}
	if u, ok := b.(Unsafer); ok {
		res.Unsafe = u.Unsafe()
	}
	switch r.cfg.Workload {
	case Shared, Semaphore:
		res.Op = "grant"
	case Contended:
		res.Op = "handover"
		res.Gap = Summarize(gaps)
	}
	if res.Op != "cycle" {
		for i := range r.workers {
			res.PerClient = append(res.PerClient, r.workers[i].count)
		}
	}
	res.setRates(use)
	return res
}

func openSessions(ctx context.Context, b Backend, n int) ([]Session, error) {
	sessions := make([]Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sessions[i], errs[i] = b.NewSession(ctx, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeSessions(sessions)
		return nil, fmt.Errorf("benchkit: opening %d sessions on %s: %w", n, b.Name(), err)
	}
	return sessions, nil
}

func closeSessions(sessions []Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range sessions {
		if s == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Close(ctx)
		}()
	}
	wg.Wait()
}

func backgroundErrors(b Backend) int64 {
	if be, ok := b.(BackgroundErrorer); ok {
		return be.BackgroundErrors()
	}
	return 0
}

func retries(b Backend) int64 {
	if rb, ok := b.(Retrier); ok {
		return rb.Retries()
	}
	return 0
}

// Sleep waits for d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
