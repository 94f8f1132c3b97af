package gorunner_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// scenario is one file of clients/conformance/scenarios.
type scenario struct {
	Name        string                    `json:"name"`
	Description string                    `json:"description"`
	Clients     map[string]map[string]any `json:"clients"`
	Skip        []string                  `json:"skip"`
	Steps       []map[string]any          `json:"steps"`
}

func loadScenarios(t *testing.T) []scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files (%v)", err)
	}
	sort.Strings(files)
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("RAFTLOCK_CONFORMANCE_ONLY"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			only[n] = true
		}
	}
	var out []scenario
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s scenario
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(only) > 0 && !only[s.Name] {
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestConformance runs every scenario, in file order, against one cluster that is
// restored (nodes continued, restarted, a leader waited for) after each.
func TestConformance(t *testing.T) {
	scenarios := loadScenarios(t)
	cs := &clusters{a: startCluster(t, 3)}
	p := cs.a
	for _, sc := range scenarios {
		if sc.names("b1") && cs.b == nil {
			cs.b = startCluster(t, 1, "--snapshot-threshold", "1", "--snapshot-interval", "100ms")
		}
		t.Run(sc.Name, func(t *testing.T) {
			for _, s := range sc.Skip {
				if s == "go" {
					if testkit.InCI() {
						t.Fatalf("scenario %s skips the go runner, and nothing may skip under CI=true", sc.Name)
					}
					t.Skip("the scenario file skips the go runner")
				}
			}
			r := newRun(t, cs, sc)
			defer r.cleanup()
			for i, st := range sc.Steps {
				if err := r.step(st); err != nil {
					p.DumpLogs()
					t.Fatalf("step %d (%v): %v", i+1, st["op"], err)
				}
			}
		})
		restore(t, p)
		if cs.b != nil {
			restore(t, cs.b)
		}
	}
}

func restore(t *testing.T, p *testcluster.Processes) {
	t.Helper()
	for i := 0; i < p.N(); i++ {
		if p.Paused(i) {
			if err := p.Signal(i, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
		if !p.Running(i) {
			if err := p.TryStart(i); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.WaitLeader(20 * time.Second)
}

// outcome is a step's result: fields on success, or an error code.
type outcome struct {
	res  map[string]any
	code string
}

// hold is what an acquire-like step (or a lease step) leaves behind.
type hold struct {
	c        *client.Client // the client of the cluster the hold lives on
	name     string
	token    uint64
	lost     func() <-chan struct{}
	safe     func() time.Time
	leaseID  func() string
	release  func(ctx context.Context) error
	proclaim func(ctx context.Context, value string) error
	lease    *client.Lease // set for a lease step's hold
}

type run struct {
	t       *testing.T
	cs      *clusters
	p       *testcluster.Processes // cluster A
	sc      scenario
	clients map[string]*client.Client
	routers map[string]*client.Router
	proxies map[string]*proxyState
	servers []*http.Server
	mu      sync.Mutex
	results map[string]map[string]any
	holds   map[string]*hold
	stores  map[string]*store
	streams map[string]*stream
	bg      map[string]chan outcome
	dir     string
}

func newRun(t *testing.T, cs *clusters, sc scenario) *run {
	p := cs.a
	r := &run{t: t, cs: cs, p: p, sc: sc, clients: map[string]*client.Client{}, routers: map[string]*client.Router{},
		proxies: map[string]*proxyState{}, results: map[string]map[string]any{}, holds: map[string]*hold{},
		stores: map[string]*store{}, streams: map[string]*stream{}, bg: map[string]chan outcome{}, dir: t.TempDir()}
	specs := sc.Clients
	if specs == nil {
		specs = map[string]map[string]any{"a": {}, "b": {}, "c": {}}
	}
	for label, o := range specs {
		if routes, ok := o["routes"].([]any); ok {
			rt, err := r.newRouter(routes)
			if err != nil {
				t.Fatalf("client %s: %v", label, err)
			}
			r.routers[label] = rt
			continue
		}
		eps := p.Endpoints()
		if nodes, ok := o["nodes"].([]any); ok {
			var err error
			if eps, err = cs.endpoints(nodes); err != nil {
				t.Fatalf("client %s: %v", label, err)
			}
		}
		if o["proxy"] == true {
			ps := &proxyState{}
			r.proxies[label] = ps
			targets := eps
			eps = nil
			for _, u := range targets {
				eps = append(eps, r.startProxy(ps, u))
			}
		}
		c, err := client.New(eps)
		if err != nil {
			t.Fatal(err)
		}
		r.clients[label] = c
	}
	return r
}

// newRouter makes the Router of a client's routes (FORMAT.md, "Clients").
func (r *run) newRouter(routes []any) (*client.Router, error) {
	var rs []client.Route
	for _, x := range routes {
		m, _ := x.(map[string]any)
		nodes, _ := m["nodes"].([]any)
		eps, err := r.cs.endpoints(nodes)
		if err != nil {
			return nil, err
		}
		var prefixes []string
		for _, p := range m["prefixes"].([]any) {
			prefixes = append(prefixes, p.(string))
		}
		name, _ := m["name"].(string)
		rs = append(rs, client.Route{Name: name, Prefixes: prefixes, Endpoints: eps})
	}
	return client.NewRouter(rs)
}

func (r *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.mu.Lock()
	holds, streams := r.holds, r.streams
	r.mu.Unlock()
	for _, s := range streams {
		s.stop()
	}
	for _, h := range holds {
		if h.lease == nil {
			_ = h.release(ctx)
		}
	}
	for _, h := range holds {
		if h.lease != nil {
			_ = h.release(ctx)
		}
	}
	for _, s := range r.servers {
		_ = s.Close()
	}
	for _, s := range r.stores {
		_ = s.db.Close()
	}
}

// --- references and matchers ---------------------------------------------------------------

func (r *run) ref(v any) (any, error) {
	s, ok := v.(string)
	if !ok || !strings.HasPrefix(s, "$") {
		return v, nil
	}
	label, field, _ := strings.Cut(s[1:], ".")
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[label]
	if !ok {
		return nil, fmt.Errorf("reference %s: no such result", s)
	}
	f, ok := res[field]
	if !ok {
		return nil, fmt.Errorf("reference %s: no such field", s)
	}
	return f, nil
}

// token resolves the step's "token" (a number, or a reference to an earlier result's).
func (r *run) token(st map[string]any) (uint64, error) {
	tok, err := r.ref(st["token"])
	if err != nil {
		return 0, failure{err}
	}
	t, _ := num(tok)
	return uint64(t), nil
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

func equal(a, b any) bool {
	if x, ok := num(a); ok {
		y, ok := num(b)
		return ok && x == y
	}
	return a == b
}

func (r *run) match(res, want map[string]any) error {
	for k, w := range want {
		got, ok := res[k]
		if !ok {
			return fmt.Errorf("result has no field %q (%v)", k, res)
		}
		if m, ok := w.(map[string]any); ok {
			if len(m) != 1 {
				return fmt.Errorf("matcher %v must have one key", m)
			}
			for op, rv := range m {
				v, err := r.ref(rv)
				if err != nil {
					return err
				}
				g, ok1 := num(got)
				x, ok2 := num(v)
				if !ok1 || !ok2 {
					return fmt.Errorf("%s: matcher %s needs numbers, have %v and %v", k, op, got, v)
				}
				var pass bool
				switch op {
				case "eq":
					pass = g == x
				case "ne":
					pass = g != x
				case "gt":
					pass = g > x
				case "ge":
					pass = g >= x
				case "lt":
					pass = g < x
				case "le":
					pass = g <= x
				default:
					return fmt.Errorf("unknown matcher %q", op)
				}
				if !pass {
					return fmt.Errorf("%s = %v, want %s %v", k, got, op, v)
				}
			}
			continue
		}
		v, err := r.ref(w)
		if err != nil {
			return err
		}
		if !equal(got, v) {
			return fmt.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	return nil
}

func (r *run) check(st map[string]any, o outcome) error {
	exp, _ := st["expect"].(map[string]any)
	if exp == nil {
		exp = map[string]any{"ok": true}
	}
	if one, ok := exp["one_of"].([]any); ok {
		got := o.code
		if got == "" {
			got = "ok"
		}
		for _, x := range one {
			if x == got {
				return nil
			}
		}
		return fmt.Errorf("outcome %q, want one of %v", got, one)
	}
	if e, ok := exp["error"].(string); ok {
		if o.code == "" {
			return fmt.Errorf("succeeded with %v, want error %q", o.res, e)
		}
		if o.code != e {
			return fmt.Errorf("error %q, want %q", o.code, e)
		}
		return nil
	}
	if o.code != "" {
		return fmt.Errorf("error %q, want success", o.code)
	}
	want, _ := exp["result"].(map[string]any)
	return r.match(o.res, want)
}

// --- steps -------------------------------------------------------------------------------

// failure is a step that failed as a step (a wait that ran out), not with an API code.
type failure struct{ error }

func (r *run) step(st map[string]any) error {
	if st["background"] == true {
		label, _ := st["as"].(string)
		ch := make(chan outcome, 1)
		r.bg[label] = ch
		go func() {
			o, err := r.outcome(st)
			if err != nil {
				o = outcome{code: "runner-failure: " + err.Error()}
			}
			ch <- o
		}()
		return nil
	}
	if st["op"] == "await" {
		label, _ := st["step"].(string)
		ch, ok := r.bg[label]
		if !ok {
			return fmt.Errorf("no background step %q", label)
		}
		select {
		case o := <-ch:
			if err := r.check(st, o); err != nil {
				return err
			}
			if o.code == "" {
				r.setResult(label, o.res)
			}
			return nil
		case <-time.After(msOf(st, "timeout_ms", 30000)):
			return fmt.Errorf("background step %q did not end in time", label)
		}
	}
	o, err := r.outcome(st)
	if err != nil {
		return err
	}
	if err := r.check(st, o); err != nil {
		return err
	}
	if label, ok := st["as"].(string); ok && o.code == "" {
		r.setResult(label, o.res)
	}
	return nil
}

func (r *run) setResult(label string, res map[string]any) {
	r.mu.Lock()
	r.results[label] = res
	r.mu.Unlock()
}

func msOf(st map[string]any, k string, def float64) time.Duration {
	v, ok := st[k].(float64)
	if !ok {
		v = def
	}
	return time.Duration(v * float64(time.Millisecond))
}

func str(st map[string]any, k string) string { s, _ := st[k].(string); return s }

// code is the outcome code of err: the API's code, or what the Go client says instead.
func code(err error) string {
	var ae *api.Error
	switch {
	case errors.Is(err, client.ErrCrossCluster):
		return "cross_cluster"
	case errors.Is(err, client.ErrNoRoute):
		return "no_route"
	case errors.Is(err, client.ErrIndexCompacted):
		return api.CodeIndexCompacted
	case errors.Is(err, fencing.ErrStaleToken):
		return "stale_token"
	case errors.As(err, &ae):
		return ae.Code
	case errors.Is(err, context.DeadlineExceeded):
		return api.CodeWaitTimeout // a waiting Lock whose context ended
	case errors.Is(err, client.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, client.ErrNotLocked):
		return "not_locked"
	}
	return "client-error: " + err.Error()
}

// outcome runs st; an error return is a failure of the step itself.
func (r *run) outcome(st map[string]any) (outcome, error) {
	res, err := r.op(st)
	if err != nil {
		var f failure
		if errors.As(err, &f) {
			return outcome{}, f.error
		}
		return outcome{code: code(err)}, nil
	}
	if res == nil {
		res = map[string]any{}
	}
	return outcome{res: res}, nil
}

func (r *run) cl(st map[string]any) *client.Client {
	l := str(st, "client")
	if l == "" {
		l = "a"
	}
	return r.clients[l]
}

func (r *run) hold(st map[string]any) (*hold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.holds[str(st, "hold")]
	if !ok {
		return nil, failure{fmt.Errorf("no hold %q", str(st, "hold"))}
	}
	return h, nil
}

func (r *run) setHold(st map[string]any, h *hold) {
	if label := str(st, "as"); label != "" {
		r.mu.Lock()
		r.holds[label] = h
		r.mu.Unlock()
	}
}

func ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// taken is what the client's mutex, semaphore and election share once they are held.
type taken interface {
	Token() uint64
	Lost() <-chan struct{}
	SafeUntil() time.Time
	Lease() *client.Lease
}

// took records p, just taken (unless err), as the hold of step st and answers its token.
// proclaim is nil but for an election.
func (r *run) took(st map[string]any, c *client.Client, name string, p taken, release func(context.Context) error,
	proclaim func(ctx context.Context, value string) error, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	h := &hold{c: c, name: name, token: p.Token(), lost: p.Lost, safe: p.SafeUntil,
		leaseID: func() string { return leaseID(p.Lease()) }, release: release, proclaim: proclaim}
	r.setHold(st, h)
	return map[string]any{"token": h.token}, nil
}

func (r *run) op(st map[string]any) (map[string]any, error) {
	if rt := r.routers[str(st, "client")]; rt != nil {
		return r.routerOp(st, rt)
	}
	c := r.cl(st)
	name := str(st, "name")
	ttl := msOf(st, "ttl_ms", 10000)
	wait := msOf(st, "wait_ms", 0)
	opts := holdOpts(st)
	// A waiting take is bounded by its wait; one that does not wait by the client's retries.
	takeCtx := func() (context.Context, context.CancelFunc) {
		if wait > 0 {
			return ctxFor(wait)
		}
		return ctxFor(30 * time.Second)
	}
	switch op := str(st, "op"); op {
	case "lock":
		ctx, cancel := takeCtx()
		defer cancel()
		m := c.NewRWMutex(name, opts...)
		if l := str(st, "lease"); l != "" {
			lh, err := r.holdNamed(l)
			if err != nil || lh.lease == nil {
				return nil, failure{fmt.Errorf("no lease %q", l)}
			}
			m = client.NewRWMutex(lh.lease, name, opts...)
		}
		var err error
		switch {
		case str(st, "mode") == "shared" && wait > 0:
			err = m.RLock(ctx)
		case str(st, "mode") == "shared":
			err = m.TryRLock(ctx)
		case wait > 0:
			err = m.Lock(ctx)
		default:
			err = m.TryLock(ctx)
		}
		return r.took(st, c, name, m, m.Unlock, nil, err)
	case "lockset":
		ctx, cancel := takeCtx()
		defer cancel()
		var names []string
		for _, n := range st["names"].([]any) {
			names = append(names, n.(string))
		}
		s := c.NewLockSet(names, opts...)
		var err error
		if wait > 0 {
			err = s.Lock(ctx)
		} else {
			err = s.TryLock(ctx)
		}
		if err != nil {
			return nil, err
		}
		h := &hold{c: c, name: names[0], token: s.Token(names[0]), lost: s.Lost, safe: s.SafeUntil,
			leaseID: func() string { return leaseID(s.Lease()) }, release: s.Unlock}
		r.setHold(st, h)
		return map[string]any{"token": h.token, "locks": len(s.Tokens())}, nil
	case "lease":
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		l, err := c.NewLease(ctx, ttl)
		return r.tookLease(st, c, l, err)
	case "revoke":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		_, err = h.c.Revoke(ctx, h.leaseID())
		return nil, err
	case "watch", "observe", "wait_seen", "stop_stream":
		return r.streamOp(st, c)
	case "stop_node":
		p, i, err := r.cs.node(str(st, "node"))
		if err != nil {
			return nil, failure{err}
		}
		return nil, p.Signal(i, syscall.SIGSTOP)
	case "kill_node":
		p, i, err := r.cs.node(str(st, "node"))
		if err != nil {
			return nil, failure{err}
		}
		p.Kill(i)
		return nil, nil
	case "snapshot_restart":
		return nil, r.cs.snapshotRestart(str(st, "node"))
	case "semaphore":
		ctx, cancel := takeCtx()
		defer cancel()
		limit, _ := st["limit"].(float64)
		s := c.NewSemaphore(name, int(limit), opts...)
		var err error
		if wait > 0 {
			err = s.Acquire(ctx)
		} else {
			err = s.TryAcquire(ctx)
		}
		return r.took(st, c, name, s, s.Release, nil, err)
	case "campaign":
		ctx, cancel := takeCtx()
		defer cancel()
		e := c.NewElection(name, opts...)
		var err error
		if wait > 0 {
			err = e.Campaign(ctx, str(st, "value"))
		} else {
			err = e.TryCampaign(ctx, str(st, "value"))
		}
		return r.took(st, c, name, e, e.Resign, e.Proclaim, err)
	case "acquire":
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		g, err := c.Acquire(ctx, name, client.AcquireOptions{TTL: ttl, Owner: str(st, "owner")})
		if err != nil {
			return nil, err
		}
		never := make(chan struct{})
		r.setHold(st, &hold{c: c, name: name, token: g.Token, lost: func() <-chan struct{} { return never },
			safe: func() time.Time { return time.Time{} }, leaseID: func() string { return g.LeaseID },
			release: func(ctx context.Context) error { return c.Release(ctx, name, g.LeaseID, g.Token) }})
		return map[string]any{"token": g.Token}, nil
	case "release":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		return nil, h.release(ctx)
	case "release_token":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		t, err := r.token(st)
		if err != nil {
			return nil, err
		}
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		return nil, c.Release(ctx, name, h.leaseID(), t)
	case "proclaim":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		if h.proclaim == nil {
			return nil, failure{errors.New("proclaim on a hold that is not an election")}
		}
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		if err := h.proclaim(ctx, str(st, "value")); err != nil {
			return nil, err
		}
		return map[string]any{"token": h.token}, nil
	case "check_hold":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		lost := false
		select {
		case <-h.lost():
			lost = true
		default:
		}
		return map[string]any{"lost": lost, "token": h.token, "safe_ms": safeMs(h)}, nil
	case "wait_lost":
		h, err := r.hold(st)
		if err != nil {
			return nil, err
		}
		timeout := msOf(st, "timeout_ms", 0)
		select {
		case <-h.lost():
			return map[string]any{"lost": true, "safe_ms": safeMs(h)}, nil
		case <-time.After(timeout):
			return nil, failure{fmt.Errorf("the loss signal was not set within %v (safe-until in %d ms)", timeout, safeMs(h))}
		}
	case "status", "wait_status":
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		if op == "status" {
			return lockStatus(ctx, c, name)
		}
		until, _ := st["until"].(map[string]any)
		deadline := time.Now().Add(msOf(st, "timeout_ms", 10000))
		for {
			res, err := lockStatus(ctx, c, name)
			if err != nil {
				return nil, err
			}
			if r.match(res, until) == nil {
				return res, nil
			}
			if time.Now().After(deadline) {
				return nil, failure{fmt.Errorf("status never matched %v; last %v", until, res)}
			}
			time.Sleep(50 * time.Millisecond)
		}
	case "semaphore_status":
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		s, err := c.SemaphoreStatus(ctx, name, client.StatusOptions{})
		if err != nil {
			return nil, err
		}
		return map[string]any{"limit": s.Limit, "permits": len(s.Permits), "waiters": s.Waiters}, nil
	case "election_status":
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		e, err := c.ElectionStatus(ctx, name, client.StatusOptions{})
		if err != nil {
			return nil, err
		}
		return map[string]any{"elected": e.Elected, "owner": e.Owner, "value": e.Value, "token": e.Token, "candidates": e.Candidates}, nil
	case "history":
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		hist, err := c.History(ctx, name, false)
		if err != nil {
			return nil, err
		}
		grants, last := 0, ""
		for _, e := range hist.Events {
			if e.Kind == "granted" {
				grants++
			}
			last = e.Kind
		}
		return map[string]any{"grants": grants, "events": len(hist.Events), "last_kind": last}, nil
	case "fenced_write":
		s, err := r.store(str(st, "store"))
		if err != nil {
			return nil, failure{err}
		}
		t, err := r.token(st)
		if err != nil {
			return nil, err
		}
		ctx, cancel := ctxFor(30 * time.Second)
		defer cancel()
		return nil, s.g.Do(ctx, str(st, "resource"), fencing.Token(t), func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv (resource, value) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET value = excluded.value`,
				str(st, "resource"), str(st, "value"))
			return err
		})
	case "read_store":
		s, err := r.store(str(st, "store"))
		if err != nil {
			return nil, failure{err}
		}
		var v string
		err = s.db.QueryRow(`SELECT value FROM kv WHERE resource = ?`, str(st, "resource")).Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, failure{err}
		}
		return map[string]any{"value": v}, nil
	case "fault":
		ps := r.proxies[str(st, "client")]
		if ps == nil {
			return nil, failure{fmt.Errorf("client %q has no proxy", str(st, "client"))}
		}
		count := 1
		if n, ok := st["count"].(float64); ok {
			count = int(n)
		}
		ps.mu.Lock()
		ps.faults = append(ps.faults, &fault{kind: str(st, "kind"), method: str(st, "method"), prefix: str(st, "path_prefix"), count: count})
		ps.mu.Unlock()
		return nil, nil
	case "proxy_log":
		ps := r.proxies[str(st, "client")]
		if ps == nil {
			return nil, failure{fmt.Errorf("client %q has no proxy", str(st, "client"))}
		}
		ps.mu.Lock()
		defer ps.mu.Unlock()
		n, without := 0, 0
		ids := map[string]bool{}
		for _, e := range ps.log {
			if e.method != str(st, "method") || !strings.HasPrefix(e.path, str(st, "path_prefix")) {
				continue
			}
			n++
			if e.requestID == "" {
				without++
			} else {
				ids[e.requestID] = true
			}
		}
		return map[string]any{"requests": n, "distinct_request_ids": len(ids), "without_request_id": without}, nil
	case "stop_all":
		for i := 0; i < r.p.N(); i++ {
			if r.p.Running(i) && !r.p.Paused(i) {
				if err := r.p.Signal(i, syscall.SIGSTOP); err != nil {
					return nil, failure{err}
				}
			}
		}
		return nil, nil
	case "cont_all":
		for i := 0; i < r.p.N(); i++ {
			if r.p.Paused(i) {
				if err := r.p.Signal(i, syscall.SIGCONT); err != nil {
					return nil, failure{err}
				}
			}
		}
		return nil, nil
	case "kill_leader":
		i := r.p.WaitLeader(20 * time.Second)
		r.p.Kill(i)
		return map[string]any{"node": r.p.ID(i)}, nil
	case "restart":
		for _, p := range r.cs.all() {
			for i := 0; i < p.N(); i++ {
				if !p.Running(i) {
					if err := p.TryStart(i); err != nil {
						return nil, failure{err}
					}
				}
			}
		}
		return nil, nil
	case "wait_leader":
		r.p.WaitLeader(msOf(st, "timeout_ms", 20000))
		return nil, nil
	case "pause":
		time.Sleep(msOf(st, "ms", 0))
		return nil, nil
	default:
		return nil, failure{fmt.Errorf("unknown op %q (this runner is out of date with FORMAT.md)", op)}
	}
}

func safeMs(h *hold) int64 {
	return int64(math.Floor(float64(time.Until(h.safe())) / float64(time.Millisecond)))
}

func lockStatus(ctx context.Context, c *client.Client, name string) (map[string]any, error) {
	s, err := c.Status(ctx, name, client.StatusOptions{})
	if err != nil {
		return nil, err
	}
	return statusResult(s), nil
}

// statusResult is the status step's result of s (FORMAT.md).
func statusResult(s api.LockStatus) map[string]any {
	return map[string]any{"held": s.Held, "token": s.Token, "holder_count": s.HolderCount, "waiters": s.Waiters,
		"owner": s.Owner, "mode": s.Mode, "delay_ms": s.LockDelayRemainingMs}
}

// --- fencing store ----------------------------------------------------------------------

type store struct {
	db *sql.DB
	g  *fencing.SQLGuard
}

func (r *run) store(label string) (*store, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.stores[label]; ok {
		return s, nil
	}
	db, err := fencing.OpenSQLite(filepath.Join(r.dir, label+".db"))
	if err != nil {
		return nil, err
	}
	g, err := fencing.NewSQLGuard(db, fencing.SQLite)
	if err != nil {
		return nil, err
	}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	if err := g.CreateTable(ctx); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS kv (resource TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return nil, err
	}
	s := &store{db: db, g: g}
	r.stores[label] = s
	return s, nil
}

// --- fault proxy ------------------------------------------------------------------------

type logEntry struct{ method, path, requestID string }

type fault struct {
	kind, method, prefix string
	count                int
}

// proxyState is the request log and the fault list of one client's proxies (FORMAT.md).
type proxyState struct {
	mu     sync.Mutex
	log    []logEntry
	faults []*fault
}

func (ps *proxyState) take(method, path string) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, f := range ps.faults {
		if f.count > 0 && f.method == method && strings.HasPrefix(path, f.prefix) {
			f.count--
			return f.kind
		}
	}
	return ""
}

// startProxy serves a fault proxy in front of the node at target and returns its URL.
func (r *run) startProxy(ps *proxyState, target string) string {
	ln := testkit.Listen(r.t)
	hc := &http.Client{Timeout: 60 * time.Second}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var b struct {
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(body, &b)
		ps.mu.Lock()
		ps.log = append(ps.log, logEntry{req.Method, req.URL.Path, b.RequestID})
		ps.mu.Unlock()
		kind := ps.take(req.Method, req.URL.Path)
		out, err := http.NewRequest(req.Method, target+req.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out.Header = req.Header.Clone()
		resp, err := hc.Do(out)
		if err != nil {
			abort(w)
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch kind {
		case "drop":
			abort(w)
			return
		case "unknown_outcome":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unknown_outcome","message":"conformance fault: the answer was dropped"}}`))
			return
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(data)
	})}
	go func() { _ = srv.Serve(ln) }()
	r.servers = append(r.servers, srv)
	return "http://" + ln.Addr().String()
}

// abort closes the client's connection without an answer.
func abort(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
