package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/bench/benchkit"
)

// The noisy-neighbour workload (docs/PERFORMANCE.md, "Isolation between tenants"): one
// tenant's token misbehaves while another tenant's client takes and releases a lock in a
// loop, and the neighbour's cycle latency in each phase is set beside its quiet figures.
// It needs a cluster with ACLs on and a token with admin on the empty prefix
// (--acl-token-file), which makes the tenants' policies and tokens and deletes them at
// the end. The phases:
//
//   - quiet: the neighbour alone, for --duration;
//   - flood: the tenant floods POST /v1/locksets (64 new 500-byte names each, 24 h
//     leases, 4 threads) until each thread is refused 429 quota_exceeded, with the
//     servers' default quotas; each node's RSS before and after;
//   - expiry: another token of the tenant, with its own quota raised, holds --tenant-locks
//     locks on leases that one batch keepalive gave one deadline, and lets them expire;
//   - token deletion: the same again, then the admin deletes the token.
//
// For expiry and deletion it reports how long the cluster took to end every lock (from
// the deadline, or the deletion) and whether the leader or its term changed.

const (
	nbSetSize      = 64
	nbFloodThreads = 4
	nbFloodName    = 500 // bytes: as long as the attack's names
	nbFloodMax     = 3 * time.Minute
	nbFillers      = 8
	nbExpiryTTL    = 20 * time.Second
	nbDrainMax     = 5 * time.Minute
)

// nbProbe is the neighbour: one client taking and releasing one lock in a loop, each
// cycle's start and latency recorded.
type nbProbe struct {
	mu      sync.Mutex
	at      []time.Time
	lat     []time.Duration
	errs    atomic.Int64
	samples benchkit.Samples
}

// run loops acquire + release of name as token through base until ctx ends.
func (p *nbProbe) run(ctx context.Context, hc *httpClient, base, token, name string) {
	acq, _ := json.Marshal(api.AcquireRequest{TTLMs: 10_000})
	for ctx.Err() == nil {
		start := time.Now()
		var g api.Grant
		err := hc.doAs(ctx, token, "PUT", base+"/v1/locks/"+name, acq, &g)
		if err == nil {
			body, _ := json.Marshal(api.ReleaseRequest{LeaseID: g.LeaseID, Token: g.Token})
			err = hc.doAs(ctx, token, "DELETE", base+"/v1/locks/"+name, body, nil)
			if err == nil {
				_ = hc.doAs(ctx, token, "POST", base+"/v1/leases/revoke", mustJSON(api.LeaseRequest{LeaseID: g.LeaseID}), nil)
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.errs.Add(1)
			p.samples.Add(err.Error())
			benchkit.Sleep(ctx, 10*time.Millisecond)
			continue
		}
		d := time.Since(start)
		p.mu.Lock()
		p.at, p.lat = append(p.at, start), append(p.lat, d)
		p.mu.Unlock()
	}
}

// window returns the latencies of the cycles that started in [from, to).
func (p *nbProbe) window(from, to time.Time) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []time.Duration
	for i, t := range p.at {
		if !t.Before(from) && t.Before(to) {
			out = append(out, p.lat[i])
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// nbTenant is the misbehaving tenant: its policy's prefix and its tokens, made by the
// admin.
type nbTenant struct {
	hc     *httpClient
	base   string
	prefix string
}

// token makes a token of policy with quotas (nil: none of its own); it returns the
// secret and the accessor.
func (t *nbTenant) token(ctx context.Context, policy string, quotas *api.Quotas) (string, string, error) {
	var tok api.ACLToken
	err := t.hc.do(ctx, "POST", t.base+"/v1/acl/tokens", mustJSON(api.ACLTokenRequest{Policies: []string{policy}, Quotas: quotas, Description: "raftlock-bench neighbour"}), &tok)
	return tok.SecretID, tok.AccessorID, err
}

// fill takes n locks as token on leases of ttl, 64 to a lease, with nbFillers clients,
// names of nameBytes, keeping the leases taken alive meanwhile (every ttl/3, in batches);
// it returns the leases and how many locksets were refused by a quota.
func (t *nbTenant) fill(ctx context.Context, token string, n, nameBytes int, ttl time.Duration, stopAtQuota bool, progress io.Writer) ([]string, int64, string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var leases []string
	var refused atomic.Int64
	var quotaMsg atomic.Value
	pad := strings.Repeat("x", max(nameBytes-len(t.prefix)-13, 1)) // a name of about nameBytes
	errc := make(chan error, nbFillers)
	threads := nbFillers
	if stopAtQuota {
		threads = nbFloodThreads
	}
	var wg sync.WaitGroup
	start := time.Now()
	kctx, stopKeep := context.WithCancel(ctx)
	kdone := make(chan struct{})
	go func() { // the leases taken so far, kept alive until the fill ends
		defer close(kdone)
		for {
			benchkit.Sleep(kctx, ttl/3)
			if kctx.Err() != nil {
				return
			}
			mu.Lock()
			taken := append([]string(nil), leases...)
			mu.Unlock()
			if err := t.keepAll(kctx, token, taken); err != nil && kctx.Err() == nil {
				logf(progress, "neighbour: keeping the tenant's leases alive: %v", err)
			}
		}
	}()
	defer func() { stopKeep(); <-kdone }()
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if int(i)*nbSetSize >= n || ctx.Err() != nil {
					return
				}
				names := make([]string, nbSetSize)
				for j := range names {
					names[j] = fmt.Sprintf("%s%08d/%02d/%s", t.prefix, i, j, pad)
				}
				var g api.LockSetGrant
				err := t.hc.doAs(ctx, token, "POST", t.base+"/v1/locksets", mustJSON(api.LockSetRequest{Names: names, TTLMs: ttl.Milliseconds()}), &g)
				var ae *api.Error
				switch {
				case errors.As(err, &ae) && ae.Code == api.CodeQuotaExceeded && stopAtQuota:
					refused.Add(1)
					quotaMsg.Store(ae.Message)
					return
				case err != nil:
					errc <- fmt.Errorf("lockset %d: %w", i, err)
					return
				}
				mu.Lock()
				leases = append(leases, g.LeaseID)
				if len(leases)%500 == 0 {
					logf(progress, "neighbour: %d locks taken in %v", len(leases)*nbSetSize, time.Since(start).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	msg, _ := quotaMsg.Load().(string)
	return leases, refused.Load(), msg, <-errc
}

// keepAll renews every lease of leases in batches as token: one deadline for all.
func (t *nbTenant) keepAll(ctx context.Context, token string, leases []string) error {
	for i := 0; i < len(leases); i += api.MaxKeepAliveBatch {
		batch := leases[i:min(i+api.MaxKeepAliveBatch, len(leases))]
		if err := t.hc.doAs(ctx, token, "POST", t.base+"/v1/leases/keepalive", mustJSON(api.KeepAliveRequest{LeaseIDs: batch}), nil); err != nil {
			return err
		}
	}
	return nil
}

// drained waits until accessor holds no lock in the cluster, as the leader has applied it.
func (t *nbTenant) drained(ctx context.Context, accessor string) (time.Time, error) {
	deadline := time.Now().Add(nbDrainMax)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var all api.UsageList
		if err := t.hc.do(ctx, "GET", t.base+"/v1/usage?all", nil, &all); err == nil {
			left := false
			for _, u := range all.Identities {
				left = left || u.Identity == accessor && u.Locks.Used > 0
			}
			if !left {
				return time.Now(), nil
			}
		}
		benchkit.Sleep(ctx, 20*time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("the tenant's locks were not all ended within %v", nbDrainMax)
}

// leaderTerm reads the leader and the term.
func leaderTerm(ctx context.Context, b *backend) (string, uint64, error) {
	info, err := clusterInfo(ctx, b.hc, b.cv.endpoints, 15*time.Second)
	return info.LeaderID, info.Term, err
}

// runNeighbour runs the phases above and returns one result per phase.
func runNeighbour(ctx context.Context, o options, b *backend, progress io.Writer) ([]*benchkit.Result, error) {
	leader, err := b.cv.leader(ctx, b.hc)
	if err != nil {
		return nil, err
	}
	base := leader.URL()
	var self api.ACLToken
	if err := b.hc.do(ctx, "GET", base+"/v1/acl/token/self", nil, &self); err != nil {
		return nil, fmt.Errorf("the neighbour workload needs ACLs on and --acl-token-file with admin on the empty prefix: %w", err)
	}
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano()%1_000_000_000)
	for _, p := range []string{"tenant", "neighbour"} {
		body := mustJSON(api.ACLPolicyRequest{Rules: []api.ACLRule{{Prefix: run + "/" + p + "/", Access: api.AccessLock}}})
		if err := b.hc.do(ctx, "PUT", base+"/v1/acl/policies/"+run+"-"+p, body, nil); err != nil {
			return nil, fmt.Errorf("making the tenants' policies: %w", err)
		}
	}
	t := &nbTenant{hc: b.hc, base: base, prefix: run + "/tenant/"}
	var cleanup []string // accessors to delete at the end
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, acc := range cleanup {
			_ = b.hc.do(cctx, "DELETE", base+"/v1/acl/tokens/"+acc, nil, nil)
		}
		for _, p := range []string{"tenant", "neighbour"} {
			_ = b.hc.do(cctx, "DELETE", base+"/v1/acl/policies/"+run+"-"+p, nil, nil)
		}
	}()
	nb, nbAcc, err := t.token(ctx, run+"-neighbour", nil)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, nbAcc)
	probe := &nbProbe{}
	pctx, stopProbe := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); probe.run(pctx, b.hc, base, nb, run+"/neighbour/x") }()
	defer func() { stopProbe(); pwg.Wait() }()

	var results []*benchkit.Result
	phase := func(name string, from, to time.Time, metrics ...benchkit.Metric) *benchkit.Result {
		lat := probe.window(from, to)
		r := &benchkit.Result{System: "raftlock", Workload: "neighbour/" + name, Clients: 1, Op: "cycle",
			Target: "the neighbour's acquire + release at the leader " + leader.ID, Seconds: to.Sub(from).Seconds(),
			Ops: int64(len(lat)), Latency: benchkit.Summarize(lat), Metrics: metrics, Errors: probe.errs.Load(), ErrSamples: probe.samples.List()}
		if r.Seconds > 0 {
			r.OpsPerSec = float64(r.Ops) / r.Seconds
		}
		results = append(results, r)
		logf(progress, "neighbour: %s: %d cycles, %s", name, len(lat), latencyLine(r.Latency))
		return r
	}

	// Quiet.
	benchkit.Sleep(ctx, o.Warmup)
	from := time.Now()
	benchkit.Sleep(ctx, o.Duration)
	quiet := phase("quiet", from, time.Now())

	// Flood to the default quotas.
	flooder, flAcc, err := t.token(ctx, run+"-tenant", nil)
	if err != nil {
		return results, err
	}
	cleanup = append(cleanup, flAcc)
	rssBefore := memory(b.cv)
	from = time.Now()
	fctx, cancelFlood := context.WithTimeout(ctx, nbFloodMax)
	leases, refused, msg, err := t.fill(fctx, flooder, 1<<30, nbFloodName, 24*time.Hour, true, progress)
	cancelFlood()
	if err != nil {
		return results, fmt.Errorf("flood: %w", err)
	}
	to := time.Now()
	rssAfter := memory(b.cv)
	var growth float64
	for id, m := range rssAfter {
		growth = max(growth, float64(m.rss-rssBefore[id].rss)/(1<<20))
	}
	fl := phase("flood", from, to,
		benchkit.Metric{Name: "locks taken before the quota refused", Value: float64(len(leases) * nbSetSize), Unit: "locks"},
		benchkit.Metric{Name: "locksets refused 429 quota_exceeded", Value: float64(refused), Unit: "requests"},
		benchkit.Metric{Name: "largest RSS growth of a node", Value: growth, Unit: "MiB"}.Check(true, 256))
	if msg != "" {
		fl.Notes = append(fl.Notes, "the refusal: "+msg)
	}
	if err := b.hc.do(ctx, "DELETE", base+"/v1/acl/tokens/"+flAcc, nil, nil); err != nil {
		return results, fmt.Errorf("deleting the flooding token: %w", err)
	}
	if _, err := t.drained(ctx, flAcc); err != nil {
		return results, err
	}

	// Mass expiry, then a token deletion, each of --tenant-locks locks.
	big := &api.Quotas{MaxLeases: uint64(o.TenantLocks/nbSetSize + 100), MaxLocks: uint64(o.TenantLocks + nbSetSize)}
	for _, kind := range []string{"expiry", "token-deletion"} {
		tok, acc, err := t.token(ctx, run+"-tenant", big)
		if err != nil {
			return results, err
		}
		cleanup = append(cleanup, acc)
		ttl := 10 * time.Minute
		if kind == "expiry" {
			ttl = nbExpiryTTL
		}
		logf(progress, "neighbour: %s: taking %d locks", kind, o.TenantLocks)
		fillStart := time.Now()
		leases, _, _, err := t.fill(ctx, tok, o.TenantLocks, 40, ttl, false, progress)
		if err != nil {
			return results, fmt.Errorf("%s: %w", kind, err)
		}
		logf(progress, "neighbour: %s: %d locks taken in %v", kind, len(leases)*nbSetSize, time.Since(fillStart).Round(time.Second))
		leaderBefore, termBefore, err := leaderTerm(ctx, b)
		if err != nil {
			return results, err
		}
		var start time.Time
		if kind == "expiry" {
			if err := t.keepAll(ctx, tok, leases); err != nil {
				return results, fmt.Errorf("expiry: one keepalive for every lease: %w", err)
			}
			start = time.Now().Add(ttl) // their one deadline, within the keepalive's round trip
			logf(progress, "neighbour: expiry: %d leases renewed at once, expiring in %v", len(leases), ttl)
			benchkit.Sleep(ctx, time.Until(start))
		} else {
			start = time.Now()
			if err := b.hc.do(ctx, "DELETE", base+"/v1/acl/tokens/"+acc, nil, nil); err != nil {
				return results, fmt.Errorf("deleting the token: %w", err)
			}
		}
		end, err := t.drained(ctx, acc)
		if err != nil {
			return results, fmt.Errorf("%s: %w", kind, err)
		}
		benchkit.Sleep(ctx, time.Second)
		leaderAfter, termAfter, err := leaderTerm(ctx, b)
		if err != nil {
			return results, err
		}
		changed := 0.0
		if leaderAfter != leaderBefore || termAfter != termBefore {
			changed = 1
		}
		r := phase(kind, start.Add(-time.Second), end.Add(time.Second),
			benchkit.Metric{Name: "locks ended", Value: float64(len(leases) * nbSetSize), Unit: "locks"},
			benchkit.Metric{Name: "time to end them all", Value: end.Sub(start).Seconds(), Unit: "s"},
			benchkit.Metric{Name: "leader or term changed", Value: changed, Unit: "0/1"}.Check(true, 0))
		if quiet.Latency != nil && r.Latency != nil {
			r.Metrics = append(r.Metrics, benchkit.Metric{Name: "neighbour p99 / quiet p99", Value: r.Latency.P99 / quiet.Latency.P99, Unit: "x"}.Check(true, 2))
		}
	}
	stopProbe()
	pwg.Wait()
	return results, nil
}

// latencyLine is a progress line's latency figures.
func latencyLine(l *benchkit.Latency) string {
	if l == nil {
		return "no cycles"
	}
	return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms", l.P50, l.P99, l.Max)
}
