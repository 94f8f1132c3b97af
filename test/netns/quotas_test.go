package netns_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// The limits the TLS+ACL attack cluster runs with (tenantFlags): small, so that a tenant
// reaches them in seconds, and the same mechanisms as the defaults (a quota per identity,
// and a lease quota left at its default that is half of the cluster's).
const (
	// clusterLeases is --max-leases; identityLeases is every identity's lease quota that
	// serve derives from it (--max-leases-per-identity left at its default: half).
	clusterLeases  = 400
	identityLeases = clusterLeases / 2
	// identityLocks is --max-locks-per-identity: the grants one identity may hold.
	identityLocks = 3000
	// setSize is the most names one lockset takes (api.MaxLockSetNames).
	setSize = 64
	// sweepBudget is the most units of the sweep one log entry does (fsm.SweepBudget,
	// docs/SAFETY.md §14): a grant ended is one unit, so no entry ends more grants.
	sweepBudget = 256
	// historyBound is how many locks have a history at once (fsm.HistoryLocks).
	historyBound = 100_000
)

// tenantFlags are the serve flags of the attack cluster with ACLs: the limits above.
func tenantFlags() []string {
	return []string{"--max-leases", fmt.Sprint(clusterLeases), "--max-locks-per-identity", fmt.Sprint(identityLocks)}
}

// tenants runs the isolation cases between tenants (protocol versions 5 and 6) as the
// stranger who found them: a token with lock on a/ only, on a cluster shared with a
// tenant with lock on b/ and the admin. Before these versions each was found on a TLS +
// ACL cluster at full size (docs/SECURITY.md, "Isolation between tenants"); here the
// cluster's limits are small (tenantFlags) and the counts with them:
//
//   - 31. a flood of locksets of 64 new 500-byte names on 24 h leases, from four
//     threads, must be refused 429 quota_exceeded naming max_locks_per_identity at the
//     quota (before: never, up to twice the quota, where the case stops), and the b/
//     tenant and the admin still take locks through every node;
//   - 32. the a/ tenant creates leases until refused: at its own quota, half of the
//     cluster's (before: at the cluster's, after which the b/ tenant's POST /v1/leases
//     and PUT /v1/locks/b/job and the admin's acquire were refused too);
//   - 33. its quota of locks, on leases that one batch keepalive gave one deadline, let
//     expire: no log entry ends more than the sweep's budget of grants (before: one entry
//     ended them all), seen in the tenant's own event stream on every node, whose id is
//     the entry index; the leases are dead at once; the leader and terms do not move and
//     a b/ neighbour's acquire and release keep working;
//   - 34. the same for the flood's locks when the admin deletes the flooding token;
//   - 35. the b/ tenant's b/victim keeps its history on every node after the a/ tenant
//     made more than historyBound new histories (before: "events":[]).
//
// It runs after the other cases (it fills the cluster to its quotas) and leaves no lock
// and no lease behind.
func tenants(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, anon *client) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }
	leader := waitReady(t, c, admin, 20*time.Second)
	began, mark := time.Now(), time.Now()
	took := func(what string) {
		t.Logf("%s took %v", what, time.Since(mark).Round(time.Millisecond))
		mark = time.Now()
	}
	defer func() { t.Logf("cases 31 to 35 took %v", time.Since(began).Round(time.Millisecond)) }()
	for name, prefix := range map[string]string{"netns-tenant-a": "a/", "netns-tenant-b": "b/"} {
		if a := admin.do("PUT", at(leader), "/v1/acl/policies/"+name, fmt.Sprintf(`{"rules":[{"prefix":%q,"access":"lock"}]}`, prefix)); a.Status != 200 {
			t.Fatalf("create ACL policy %s: %v", name, a)
		}
	}
	bSecret, _ := newToken(t, c, admin, "netns-tenant-b")
	tb := keepAlive(t, anon.withToken(bSecret))
	neighbours := func(what string) {
		t.Helper()
		for i := range n {
			for _, who := range []struct {
				what, name string
				cl         *client
			}{{"the b/ tenant", "b/after", tb}, {"the admin", "netns/after", admin}} {
				ok, detail := takeAndRelease(who.cl, at(i), fmt.Sprintf("%s-%d", who.name, i))
				ty.check(what+": "+who.what+" takes and releases a lock", c.ID(i), ok && unmoved(t, c, admin, base), detail)
			}
		}
	}

	// 31. The flood.
	a1, a1Accessor := newToken(t, c, admin, "netns-tenant-a")
	ta1 := keepAlive(t, anon.withToken(a1))
	pad := func(prefix string) string { return prefix + strings.Repeat("x", 500-len(prefix)) }
	flood := fill(c, ta1, fillSpec{
		sets:    2*identityLocks/setSize + 1, // a bound of twice the quota: where the case gives up
		threads: 4,
		name:    func(k, j int) string { return pad(fmt.Sprintf("a/flood/%06d/%02d/", k, j)) },
		ttl:     24 * time.Hour,
		until:   time.Now().Add(60 * time.Second),
	})
	var own struct {
		Locks struct {
			Used int `json:"used"`
		} `json:"locks"`
	}
	u := ta1.do("GET", at(leader), "/v1/usage", "")
	_ = json.Unmarshal(u.Raw, &own)
	want := fmt.Sprintf("max_locks_per_identity is %d and identity %q has %d", identityLocks, a1Accessor, flood.taken)
	msg := refusalMessage(flood.refusal)
	ty.check(fmt.Sprintf("flood by the a/ tenant (locksets of 64 new 500-byte names, 24 h leases, 4 threads): 429 quota_exceeded naming max_locks_per_identity before %d locks", 2*identityLocks), "every node",
		flood.refusal.Status == 429 && flood.refusal.Code() == "quota_exceeded" && strings.Contains(msg, want) && !mentionsAny(msg, flood.leases) &&
			flood.taken <= identityLocks && len(flood.failed) == 0 && u.Status == 200 && own.Locks.Used == flood.taken && unmoved(t, c, admin, base),
		fmt.Sprintf("%d locks taken in %d locksets in %v, then %d %q (want %q); its usage %d %s; other failures %v",
			flood.taken, len(flood.leases), flood.took.Round(time.Millisecond), flood.refusal.Status, msg, want, u.Status, u.Raw, first(flood.failed)))
	neighbours("beside the a/ tenant at its lock quota")
	took("case 31 (flood)")

	// 34. The flooding token deleted by the admin, with every lock it took (sent before
	// 32 and 33, which need the a/ tenant's room in the cluster).
	burst(t, ty, c, base, admin, tb, burstSpec{
		what:   fmt.Sprintf("the admin deletes the a/ tenant's token holding %d locks", flood.taken),
		reader: admin, prefix: "a/flood/", kind: "revoked", locks: flood.taken,
		start: func() error {
			if a := admin.do("DELETE", at(leader), "/v1/acl/tokens/"+a1Accessor, ""); a.Status != 200 {
				return fmt.Errorf("delete the token: %v", a)
			}
			return nil
		},
	})
	took("case 34 (token deletion)")

	// 32. The lease quota.
	a2, a2Accessor := newToken(t, c, admin, "netns-tenant-a")
	ta2 := keepAlive(t, anon.withToken(a2))
	made := makeLeases(c, ta2, clusterLeases+identityLeases, 4, time.Now().Add(60*time.Second))
	want = fmt.Sprintf("max_leases_per_identity is %d and identity %q has %d", identityLeases, a2Accessor, len(made.leases))
	msg = refusalMessage(made.refusal)
	ty.check(fmt.Sprintf("leases of the a/ tenant until refused: 429 quota_exceeded naming max_leases_per_identity at %d, half of --max-leases", identityLeases), "every node",
		made.refusal.Status == 429 && made.refusal.Code() == "quota_exceeded" && strings.Contains(msg, want) && len(made.leases) == identityLeases && len(made.failed) == 0 && unmoved(t, c, admin, base),
		fmt.Sprintf("%d leases in %v, then %d %q (want %q); other failures %v", len(made.leases), made.took.Round(time.Millisecond), made.refusal.Status, msg, want, first(made.failed)))
	for i := range n {
		l := tb.do("POST", at(i), "/v1/leases", `{"ttl_ms":10000}`)
		id, _ := l.Body["lease_id"].(string)
		ty.check("beside the a/ tenant at its lease quota: the b/ tenant's POST /v1/leases: 201", c.ID(i), l.Status == 201 && id != "" && unmoved(t, c, admin, base), l.String())
		revokeAs(tb, at(i), id)
	}
	for i := range n {
		for _, who := range []struct {
			what, name string
			cl         *client
		}{{"the b/ tenant's PUT /v1/locks/b/job", "b/job", tb}, {"the admin's acquire", "netns/admin-job", admin}} {
			ok, detail := takeAndRelease(who.cl, at(i), who.name)
			ty.check("beside the a/ tenant at its lease quota: "+who.what+": 200", c.ID(i), ok && unmoved(t, c, admin, base), detail)
		}
	}
	if a := admin.do("DELETE", at(leader), "/v1/acl/tokens/"+a2Accessor, ""); a.Status != 200 {
		t.Fatalf("delete the a/ tenant's lease-quota token: %v", a)
	}
	took("case 32 (lease quota)")

	// 33. Mass expiry: the a/ tenant's quota of locks on leases of a short TTL, renewed
	// while they are taken, then given one deadline by one batch keepalive.
	a3, _ := newToken(t, c, admin, "netns-tenant-a")
	ta3 := keepAlive(t, anon.withToken(a3))
	const ttl = 5 * time.Second
	sets := identityLocks / setSize
	held := fill(c, ta3, fillSpec{
		sets: sets, threads: 4, ttl: ttl, renew: ttl / 5,
		name:  func(k, j int) string { return fmt.Sprintf("a/burst/%03d/%02d", k, j) },
		until: time.Now().Add(60 * time.Second),
	})
	if held.taken != sets*setSize || len(held.failed) > 0 || held.refusal.Status != 0 {
		t.Fatalf("the a/ tenant's %d locks for the expiry: %d taken, refused %v, failures %v", sets*setSize, held.taken, held.refusal, held.failed)
	}
	keepAll := func() rawhttp.Answer {
		ids, _ := json.Marshal(held.leases)
		return ta3.do("POST", at(leader), "/v1/leases/keepalive", fmt.Sprintf(`{"lease_ids":%s}`, ids))
	}
	burst(t, ty, c, base, admin, tb, burstSpec{
		what:   fmt.Sprintf("%d locks of the a/ tenant on %d leases given one deadline by one batch keepalive expire", held.taken, len(held.leases)),
		reader: ta3, prefix: "a/burst/", kind: "expired", locks: held.taken,
		start: func() error {
			a := keepAll()
			var kb struct {
				Leases   []any    `json:"leases"`
				NotFound []string `json:"not_found"`
			}
			if err := a.Decode(&kb); a.Status != 200 || err != nil || len(kb.Leases) != len(held.leases) {
				return fmt.Errorf("the batch keepalive renewed %d of %d leases (%d, %v, %d not found): the machine is too slow for leases of %v", len(kb.Leases), len(held.leases), a.Status, err, len(kb.NotFound), ttl)
			}
			return nil
		},
		after: ttl,
		// Once one grant has ended, every lease is dead to every command: a keepalive of
		// all of them renews none.
		dead: func() (bool, string) {
			a := keepAll()
			var kb struct {
				Leases   []any    `json:"leases"`
				NotFound []string `json:"not_found"`
			}
			err := a.Decode(&kb)
			return a.Status == 200 && err == nil && len(kb.Leases) == 0 && len(kb.NotFound) == len(held.leases),
				fmt.Sprintf("a keepalive of all of them after the first ended: %d, %d renewed, %d not found", a.Status, len(kb.Leases), len(kb.NotFound))
		},
	})

	took("case 33 (expiry)")

	// 35. History shares.
	history(t, ty, c, base, admin, anon, tb)
	took("case 35 (history)")
}

// fillSpec is what fill sends: up to sets locksets of names name(k, 0..63) (k the
// lockset's number), each on a new lease of ttl, from threads at once, through the nodes
// in turn, until one is refused or until passes. With renew set, one batch keepalive of
// every lease taken so far is sent every renew while they are taken.
type fillSpec struct {
	sets, threads int
	name          func(k, j int) string
	ttl, renew    time.Duration
	until         time.Time
}

// filled is what fill got: the locks granted, their leases, the first quota refusal
// (Status 0: none) and any other failure.
type filled struct {
	taken   int
	leases  []string
	refusal rawhttp.Answer
	failed  []string
	took    time.Duration
}

// record counts answer a to a request that makes a lease with n locks (what names the
// request in a failure): a success with status want, the first quota refusal, or a failure. It
// returns false when the fill must stop.
func (out *filled) record(a rawhttp.Answer, want, n int, what string) bool {
	switch id, _ := a.Body["lease_id"].(string); {
	case a.Status == want && id != "":
		out.taken += n
		out.leases = append(out.leases, id)
		return true
	case a.Status == 429 && a.Code() == "quota_exceeded":
		if out.refusal.Status == 0 {
			out.refusal = a
		}
	default:
		out.failed = append(out.failed, fmt.Sprintf("%s: %v", what, a))
	}
	return false
}

// fill sends the locksets of s as cl; the first refusal or failure stops every thread.
func fill(c *testcluster.Processes, cl *client, s fillSpec) filled {
	var (
		mu   sync.Mutex
		out  filled
		next atomic.Int64
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	start := time.Now()
	renewed := make(chan struct{})
	if s.renew > 0 {
		go func() {
			defer close(renewed)
			for !stop.Load() {
				time.Sleep(s.renew)
				mu.Lock()
				ids, _ := json.Marshal(out.leases)
				n := len(out.leases)
				mu.Unlock()
				if n == 0 || stop.Load() {
					continue
				}
				if a := cl.do("POST", c.HTTPAddr(0), "/v1/leases/keepalive", fmt.Sprintf(`{"lease_ids":%s}`, ids)); a.Status != 200 || strings.Contains(string(a.Raw), `"not_found":["`) {
					mu.Lock()
					out.failed = append(out.failed, "renewal: "+a.String())
					mu.Unlock()
					stop.Store(true)
				}
			}
		}()
	} else {
		close(renewed)
	}
	for range s.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && time.Now().Before(s.until) {
				k := int(next.Add(1) - 1)
				if k >= s.sets {
					return
				}
				names := make([]string, setSize)
				for j := range names {
					names[j] = s.name(k, j)
				}
				body, _ := json.Marshal(struct {
					Names []string `json:"names"`
					TTLMs int64    `json:"ttl_ms"`
				}{names, s.ttl.Milliseconds()})
				a := cl.do("POST", c.HTTPAddr(k%c.N()), "/v1/locksets", string(body))
				mu.Lock()
				if !out.record(a, 200, len(names), fmt.Sprintf("lockset %d", k)) {
					stop.Store(true)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-renewed
	out.took = time.Since(start)
	return out
}

// makeLeases creates leases of 24 h as cl, from threads at once through the nodes in
// turn, until one is refused, bound of them are made, or until passes.
func makeLeases(c *testcluster.Processes, cl *client, bound, threads int, until time.Time) filled {
	var (
		mu   sync.Mutex
		out  filled
		next atomic.Int64
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && time.Now().Before(until) {
				k := int(next.Add(1) - 1)
				if k >= bound {
					return
				}
				a := cl.do("POST", c.HTTPAddr(k%c.N()), "/v1/leases", fmt.Sprintf(`{"ttl_ms":%d}`, (24*time.Hour).Milliseconds()))
				mu.Lock()
				if !out.record(a, 201, 0, fmt.Sprintf("lease %d", k)) {
					stop.Store(true)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out.took = time.Since(start)
	return out
}

// burstSpec is one burst of ended grants: start sets it off (after the streams are open
// and the neighbour runs), and after it (the TTL, for an expiry) the cluster must end
// locks grants under prefix, each an event of kind in the event stream that reader
// opens on every node. dead, when set, is asked once the first grant has ended.
type burstSpec struct {
	what   string
	reader *client
	prefix string
	kind   string
	locks  int
	start  func() error
	after  time.Duration
	dead   func() (bool, string)
}

// burst runs a burst case (33, 34) and checks, on every node: that node's stream saw
// exactly the burst's grants end, no entry more than sweepBudget of them; the leader and
// terms did not move; a b/ neighbour's acquire and release through the nodes in turn
// never failed meanwhile and went on after it.
func burst(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, tb *client, s burstSpec) {
	t.Helper()
	n := c.N()
	streams := make([]*entryCounts, n)
	for i := range n {
		streams[i] = countEntries(t, s.reader, c.HTTPAddr(i), "/v1/events?prefix="+s.prefix, s.kind)
		defer streams[i].stop()
	}
	nb := startNeighbour(c, tb, "b/neighbour")
	started := time.Now()
	if err := s.start(); err != nil {
		nb.end(5 * time.Second)
		t.Fatalf("%s: %v", s.what, err)
	}
	deadOK, deadDetail := true, ""
	if s.dead != nil {
		testkit.WaitFor(t, s.after+20*time.Second, "the first grant of the burst to end", func() bool {
			total, _, _ := streams[0].counts()
			return total > 0
		})
		deadOK, deadDetail = s.dead()
	}
	// Every node ends every grant, within the TTL and 20 s: at a budget's worth of
	// units a tick, a few thousand take a few ticks.
	ended := testkit.Poll(s.after+20*time.Second, 20*time.Millisecond, func() bool {
		for _, st := range streams {
			if total, _, _ := st.counts(); total < s.locks {
				return false
			}
		}
		return true
	})
	took := time.Since(started)
	cycles, slowest, errs := nb.end(10 * time.Second)
	for i, st := range streams {
		total, entries, largest := st.counts()
		ty.check(s.what+fmt.Sprintf(": no entry ends more than %d grants; leader, terms and a b/ neighbour unmoved", sweepBudget), c.ID(i),
			ended && total == s.locks && largest <= sweepBudget && deadOK && len(errs) == 0 && cycles > 0 && unmoved(t, c, admin, base),
			fmt.Sprintf("%d of %d grants ended, in %d entries, the largest %d %s events (%s); %s; neighbour: %d cycles, the slowest %v, failures %v; %v",
				total, s.locks, entries, largest, s.kind, st.ended(), deadDetail, cycles, slowest.Round(time.Millisecond), first(errs), took.Round(time.Millisecond)))
	}
	t.Logf("%s: grants ended per entry on %s: %v; the neighbour: %d cycles, the slowest %v (%v)", s.what, c.ID(0), streams[0].sizes(), cycles, slowest.Round(time.Millisecond), took.Round(time.Millisecond))
}

// entryCounts counts the events of one kind per entry of an event stream (the SSE id, and
// the "index" of each message, is the entry's index). Its own reader reads lines of any
// length: one entry's message is as long as the events it carries.
type entryCounts struct {
	mu       sync.Mutex
	perEntry map[uint64]int
	total    int
	why      string // why the stream ended, once it has
	stop     func()
}

// countEntries opens GET path on addr as cl and counts the events of kind.
func countEntries(t *testing.T, cl *client, addr, path, kind string) *entryCounts {
	t.Helper()
	ec := &entryCounts{perEntry: map[uint64]int{}}
	var resp *http.Response
	// A token created a moment ago may not have reached this node yet (401 until then).
	testkit.WaitFor(t, 10*time.Second, "the stream "+path+" on "+addr, func() bool {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", cl.scheme+"://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+cl.Token)
		r, err := (&http.Client{Transport: cl.HTTP.Transport}).Do(req)
		switch {
		case err != nil:
			cancel()
			return false
		case r.StatusCode != 200:
			r.Body.Close()
			cancel()
			return false
		}
		resp, ec.stop = r, cancel
		return true
	})
	go func() {
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 1<<16)
		inError := false
		for {
			line, err := br.ReadString('\n')
			line = strings.TrimSuffix(line, "\n")
			switch data, isData := strings.CutPrefix(line, "data: "); {
			case line == "event: error":
				inError = true
			case isData && inError:
				ec.mu.Lock()
				ec.why = "error event " + data
				ec.mu.Unlock()
			case isData:
				var e struct {
					Index  uint64 `json:"index"`
					Events []struct {
						Kind string `json:"kind"`
					} `json:"events"`
				}
				_ = json.Unmarshal([]byte(data), &e)
				ec.mu.Lock()
				for _, ev := range e.Events {
					if ev.Kind == kind {
						ec.perEntry[e.Index]++
						ec.total++
					}
				}
				ec.mu.Unlock()
			}
			if err != nil {
				ec.mu.Lock()
				if ec.why == "" {
					ec.why = "ended: " + err.Error()
				}
				ec.mu.Unlock()
				return
			}
		}
	}()
	return ec
}

// counts returns the events counted, the entries they came in and the most in one entry.
func (ec *entryCounts) counts() (total, entries, largest int) {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	for _, k := range ec.perEntry {
		largest = max(largest, k)
	}
	return ec.total, len(ec.perEntry), largest
}

// sizes returns how many events each entry carried, in index order.
func (ec *entryCounts) sizes() []int {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	idx := make([]uint64, 0, len(ec.perEntry))
	for k := range ec.perEntry {
		idx = append(idx, k)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	out := make([]int, len(idx))
	for i, k := range idx {
		out[i] = ec.perEntry[k]
	}
	return out
}

// ended says whether and why the stream ended.
func (ec *entryCounts) ended() string {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if ec.why == "" {
		return "stream open"
	}
	return "stream " + ec.why
}

// neighbour is another tenant's client taking and releasing one lock in a loop, through
// the nodes in turn, while a case runs beside it.
type neighbour struct {
	cancel  context.CancelFunc
	done    chan struct{}
	cycles  atomic.Int64
	mu      sync.Mutex
	errs    []string
	slowest time.Duration
}

// startNeighbour starts cl's loop on lock name.
func startNeighbour(c *testcluster.Processes, cl *client, name string) *neighbour {
	ctx, cancel := context.WithCancel(context.Background())
	nb := &neighbour{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(nb.done)
		for k := 0; ctx.Err() == nil; k++ {
			start := time.Now()
			ok, detail := takeAndRelease(cl, c.HTTPAddr(k%c.N()), name)
			nb.mu.Lock()
			if ok {
				nb.slowest = max(nb.slowest, time.Since(start))
				nb.cycles.Add(1)
			} else {
				nb.errs = append(nb.errs, detail)
			}
			nb.mu.Unlock()
		}
	}()
	return nb
}

// end waits (within d) for one more cycle to complete, so that the neighbour is seen
// served after what it ran beside, stops the loop and returns what it saw.
func (nb *neighbour) end(d time.Duration) (cycles int64, slowest time.Duration, errs []string) {
	from := nb.cycles.Load()
	if !testkit.Poll(d, 10*time.Millisecond, func() bool { return nb.cycles.Load() > from }) {
		nb.mu.Lock()
		nb.errs = append(nb.errs, fmt.Sprintf("no cycle completed within %v after the burst", d))
		nb.mu.Unlock()
	}
	nb.cancel()
	<-nb.done
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return nb.cycles.Load(), nb.slowest, nb.errs
}

// takeAndRelease acquires name on a new lease through addr, releases it and revokes the
// lease; it reports whether each step answered 200 and, when not, what it got.
func takeAndRelease(cl *client, addr, name string) (bool, string) {
	g := cl.do("PUT", addr, "/v1/locks/"+name, `{"ttl_ms":10000}`)
	id, _ := g.Body["lease_id"].(string)
	token, _ := g.Body["token"].(float64)
	if g.Status != 200 || id == "" {
		return false, "acquire: " + g.String()
	}
	defer revokeAs(cl, addr, id)
	if r := cl.do("DELETE", addr, "/v1/locks/"+name, fmt.Sprintf(`{"lease_id":%q,"token":%d}`, id, int64(token))); r.Status != 200 {
		return false, "release: " + r.String()
	}
	return true, g.String()
}

// history is case 35: the b/ tenant gives b/victim a history, then the a/ tenant churns
// through more than historyBound new names (locksets of 64 on one lease per thread, each
// lease revoked after 11 locksets, within its lock quota), and b/victim must keep its
// history, read through every node and from every node's own state (?stale).
func history(t *testing.T, ty *tally, c *testcluster.Processes, base view, admin, anon, tb *client) {
	t.Helper()
	n := c.N()
	at := func(i int) string { return c.HTTPAddr(i) }
	if ok, detail := takeAndRelease(tb, at(0), "b/victim"); !ok {
		t.Fatalf("the b/ tenant's b/victim: %s", detail)
	}
	a4, a4Accessor := newToken(t, c, admin, "netns-tenant-a")
	ta4 := keepAlive(t, anon.withToken(a4))
	const threads, perLease = 4, 11 // 4 × 11 × 64 = 2,816 locks at most: within the quota
	sets := (historyBound+setSize-1)/setSize + 1
	churned := churn(c, ta4, sets, threads, perLease, time.Now().Add(150*time.Second))
	t.Logf("case 35: the a/ tenant made %d new names in %v (%d locksets, %d revokes)", churned.names, churned.took.Round(time.Millisecond), churned.sets, churned.revokes)
	if churned.names != sets*setSize || len(churned.failed) > 0 {
		t.Errorf("case 35: the churn made %d of %d names, failures %v", churned.names, sets*setSize, first(churned.failed))
	}
	// A write after the churn, through the leader, read back from each node's own state:
	// then that node has applied the whole churn.
	if ok, detail := takeAndRelease(tb, at(waitReady(t, c, admin, 20*time.Second)), "b/barrier"); !ok {
		t.Fatalf("the b/ tenant's b/barrier: %s", detail)
	}
	for i := range n {
		testkit.WaitFor(t, 20*time.Second, c.ID(i)+" to apply the churn", func() bool {
			h := tb.do("GET", at(i), "/v1/history/b/barrier?stale=true", "")
			return strings.Contains(string(h.Raw), `"released"`)
		})
	}
	// The bound was reached, or the case could not fail: some of the churn's own first
	// histories were evicted. The least recently active of all are those of the first
	// revoke in the log, which is one thread's first; its lowest names go first (a
	// lease's grants end in name order). With shares the a/ tenant loses its own oldest
	// histories, these among them; without, at least the lowest 96 of that revoke's.
	var evicted []string
	for _, k := range churned.firstSets {
		name := fmt.Sprintf("a/churn/%06d/00", k)
		if h := admin.do("GET", at(0), "/v1/history/"+name, ""); h.Status == 200 && strings.Contains(string(h.Raw), `"events":[]`) {
			evicted = append(evicted, name)
		}
	}
	if len(evicted) == 0 {
		t.Errorf("case 35: none of the lowest names of the churn's first leases (locksets %v) lost its history: the bound of %d histories was not reached, and the case could not fail", churned.firstSets, historyBound)
	}
	for i := range n {
		for _, path := range []string{"/v1/history/b/victim", "/v1/history/b/victim?stale=true"} {
			h := tb.do("GET", at(i), path, "")
			ty.check(fmt.Sprintf("GET %s after %d new a/ names: its granted and released events kept", path, churned.names), c.ID(i),
				h.Status == 200 && strings.Contains(string(h.Raw), `"kind":"granted"`) && strings.Contains(string(h.Raw), `"kind":"released"`) && unmoved(t, c, admin, base), h.String())
		}
	}
	if a := admin.do("DELETE", at(0), "/v1/acl/tokens/"+a4Accessor, ""); a.Status != 200 {
		t.Fatalf("delete the churning token: %v", a)
	}
}

// churned is what churn did.
type churned struct {
	names, sets, revokes int
	// firstSets are the first lockset of each thread's first lease, the lowest of that
	// lease's names, in the order those leases were revoked.
	firstSets []int
	failed    []string
	took      time.Duration
}

// churn takes sets locksets of 64 new names as cl (a/churn/K/J), from threads at once
// through the nodes in turn; each thread takes perLease locksets on one lease, then
// revokes it (the revoke ends its 704 grants in its own entry), and goes on with a new
// one. Any answer but 200 stops every thread.
func churn(c *testcluster.Processes, cl *client, sets, threads, perLease int, until time.Time) churned {
	var (
		mu   sync.Mutex
		out  churned
		next atomic.Int64
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	start := time.Now()
	failed := func(what string, a rawhttp.Answer) {
		mu.Lock()
		out.failed = append(out.failed, what+": "+a.String())
		mu.Unlock()
		stop.Store(true)
	}
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, on, firstSet, revoked := "", 0, 0, 0
			revoke := func(addr string) {
				if lease == "" {
					return
				}
				if a := cl.do("DELETE", addr, "/v1/leases/"+lease, ""); a.Status != 200 {
					failed("revoke", a)
				}
				mu.Lock()
				out.revokes++
				if revoked++; revoked == 1 {
					out.firstSets = append(out.firstSets, firstSet)
				}
				mu.Unlock()
				lease, on = "", 0
			}
			defer func() { revoke(c.HTTPAddr(0)) }()
			for !stop.Load() && time.Now().Before(until) {
				k := int(next.Add(1) - 1)
				if k >= sets {
					return
				}
				names := make([]string, setSize)
				for j := range names {
					names[j] = fmt.Sprintf("a/churn/%06d/%02d", k, j)
				}
				req := struct {
					Names   []string `json:"names"`
					LeaseID string   `json:"lease_id,omitempty"`
					TTLMs   int64    `json:"ttl_ms,omitempty"`
				}{Names: names, LeaseID: lease}
				if lease == "" {
					req.TTLMs = 120_000
				}
				body, _ := json.Marshal(req)
				addr := c.HTTPAddr(k % c.N())
				a := cl.do("POST", addr, "/v1/locksets", string(body))
				id, _ := a.Body["lease_id"].(string)
				if a.Status != 200 || id == "" {
					failed(fmt.Sprintf("lockset %d", k), a)
					return
				}
				if lease == "" && revoked == 0 {
					firstSet = k
				}
				lease, on = id, on+1
				mu.Lock()
				out.names += len(names)
				out.sets++
				mu.Unlock()
				if on == perLease {
					revoke(addr)
				}
			}
		}()
	}
	wg.Wait()
	out.took = time.Since(start)
	return out
}

// keepAlive returns cl with a transport of its own that keeps its connections open
// between requests: a tenant sending thousands of requests, as a real client would,
// rather than one TLS handshake each.
func keepAlive(t *testing.T, cl *client) *client {
	t.Helper()
	tr := cl.HTTP.Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = false
	tr.MaxIdleConnsPerHost = 8
	t.Cleanup(tr.CloseIdleConnections)
	cp := *cl
	cp.HTTP = &http.Client{Timeout: cl.HTTP.Timeout, Transport: tr}
	return &cp
}

// refusalMessage returns the API error message of an answer, or "".
func refusalMessage(a rawhttp.Answer) string {
	if e, ok := a.Body["error"].(map[string]any); ok {
		s, _ := e["message"].(string)
		return s
	}
	return ""
}

// mentionsAny reports whether s contains any of subs.
func mentionsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
