package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/test/verify/checker"
	"github.com/raftlock/raftlock/test/verify/harness"
	"github.com/raftlock/raftlock/test/verify/nemesis"
	"github.com/raftlock/raftlock/test/verify/workload"
)

// campaignConfig configures a campaign: a sequence of rounds, each running the workloads on
// fresh locks while one fault is injected and healed, then checking the round's history.
type campaignConfig struct {
	Name  string
	Seed  int64
	Nodes int
	// The stop rule (goal): rounds go on until Target competitions have been counted (0: run
	// all Rounds rounds); a run that reaches its Rounds or Max first has failed and says so
	// in campaignResult.Goal. Knobs names what to change then (for the message).
	Rounds int
	Max    time.Duration
	Target int
	Knobs  string
	Kinds  []nemesis.Kind
	// Fault hold times.
	MinHold, MaxHold, SnapshotHold time.Duration
	// Warmup runs the workload before the fault; After runs it after the liveness probe.
	Warmup, After time.Duration

	LinWorkers, LinLocks   int
	BankWorkers, BankLocks int
	// Workers and names of the other primitives, each checked with its own
	// porcupine model: shared locks (RW), semaphores of SemLimit permits (Sem), elections.
	RWWorkers, RWLocks      int
	SemWorkers, Semaphores  int
	SemLimit                int64
	ElectWorkers, Elections int
	// The lockset workload: SetWorkers leases taking sets of SetSize locks of
	// a pool of SetLocks, waiting SetWaitMs, some with a maximum hold of SetMaxHoldMs.
	SetWorkers, SetLocks, SetSize int
	SetWaitMs, SetMaxHoldMs       int64
	// EdgePairs pairs of edge workers (workload.RunEdges, recorded as the lockset
	// workload) build a wait-for cycle, wait out a lock delay and outlast a maximum hold
	// on fresh locks, over and over, so that each mechanism is judged in every round.
	EdgePairs             int
	Edges                 workload.EdgesConfig
	BankTTLMs, BankWaitMs int64
	PauseProb             float64
	ElectionTimeout       time.Duration
	Extra                 []string // serve flags
	Binary                string   // the raftlock binary; empty: testcluster.Binary
	Env                   []string // more environment for every node (RAFTLOCK_MUTANT)
	Fenced                bool
	// LivenessSlack is added to TTL + 2 election timeouts for the liveness bound.
	LivenessSlack time.Duration
	// Artifacts is where a failing round leaves its history; empty: a temp dir.
	Artifacts string
	// StopOnAnomaly ends the campaign after the first round with an anomaly.
	StopOnAnomaly bool
}

// campaignResult is what a campaign measured and found.
type campaignResult struct {
	Name         string // the campaign's name: "three", "five", "short"
	Seed         int64
	Rounds       int
	Asked        []nemesis.Kind // the fault kinds the campaign was configured with
	Elapsed      time.Duration
	Faults       map[nemesis.Kind]int
	FaultErrors  []string
	Ops          int
	Grants       int
	Competitions int
	BankCompet   int
	Pauses       int
	Ambiguous    int
	Fencing      checker.FencingStats
	// Prims counts the other primitives' operations by workload (rw, sem, elect).
	Prims         map[string]*primStats
	Sets          setStats
	Verdicts      map[string]*checker.Verdict
	MaxRecovery   time.Duration
	LivenessBound time.Duration
	Net           nemesis.NetStats
	Snapshots     int
	Artifacts     string
	// Goal is why the campaign stopped short of its target (or its rounds): its rate and
	// what to change. nil when the goal was met or an anomaly stopped it (StopOnAnomaly).
	Goal error
}

// PerMinute is the campaign's rate in lock competitions per minute of its rounds.
func (res *campaignResult) PerMinute() float64 { return perMinute(res.Competitions, res.Elapsed) }

var checkerOrder = []string{"linearizable", "fencing", "tokens", "acknowledged", "timing", "liveness", "shared-locks", "semaphores", "elections", "locksets", "deadlocks"}

// primWorkloads are the workloads of the other primitives, in table order.
var primWorkloads = []string{"rw", "sem", "elect", "set"}

// setStats counts what the lockset workload met: sets granted whole, single grants,
// deadlock answers, waits that timed out, grants a maximum hold ended (a release
// answered not_holder), and grants that waited out a lock delay
// (checker.LockDelayWaits).
type setStats struct{ Sets, Singles, Deadlocks, Timeouts, MaxHoldEnded, DelayWaits int }

// primStats counts one primitive's operations in a campaign: all of them, the grants
// (acquires, campaigns, proclaims answered ok) and the refusals (held, full, election
// held, mode or limit conflicts: each a competition the model judged).
type primStats struct{ Ops, Grants, Refusals, SharedGrants, LeaderChanges int }

// envSeed returns RAFTLOCK_VERIFY_SEED if set, else a fresh seed.
func envSeed(t testing.TB) int64 {
	if s := os.Getenv("RAFTLOCK_VERIFY_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("RAFTLOCK_VERIFY_SEED=%q: %v", s, err)
		}
		return n
	}
	return time.Now().UnixNano() % 1_000_000_000
}

// envInt returns the integer in environment variable name, or def.
func envInt(t testing.TB, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		return n
	}
	return def
}

// campaign is a running campaign.
type campaign struct {
	t      testing.TB
	cfg    campaignConfig
	net    *nemesis.Net
	cl     *harness.Cluster
	ledger *harness.Ledger
	clock  *workload.Clock
	res    *campaignResult
}

func runCampaign(t *testing.T, cfg campaignConfig) *campaignResult {
	t.Helper()
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = 500 * time.Millisecond
	}
	if cfg.Artifacts == "" {
		cfg.Artifacts = filepath.Join(os.TempDir(), fmt.Sprintf("raftlock-verify-%s-%d", cfg.Name, cfg.Seed))
	}
	t.Logf("campaign %s: seed %d (replay: RAFTLOCK_VERIFY_SEED=%d), %d nodes, faults %v", cfg.Name, cfg.Seed, cfg.Seed, cfg.Nodes, cfg.Kinds)
	c := &campaign{t: t, cfg: cfg, clock: workload.NewClock(), res: &campaignResult{
		Name: cfg.Name, Seed: cfg.Seed, Asked: cfg.Kinds, Faults: map[nemesis.Kind]int{}, Verdicts: map[string]*checker.Verdict{}, Artifacts: cfg.Artifacts,
		Prims:         map[string]*primStats{"rw": {}, "sem": {}, "elect": {}, "set": {}},
		LivenessBound: time.Duration(cfg.BankTTLMs)*time.Millisecond + 2*cfg.ElectionTimeout + cfg.LivenessSlack,
	}}
	for _, name := range checkerOrder {
		c.res.Verdicts[name] = &checker.Verdict{Checker: name, Kinds: map[string]int{}}
	}
	// The proxies serve connections while NewCluster still starts the nodes (the race
	// detector saw the cluster read there as it was written), so they read it atomically:
	// nil until then, which leaves those connections' sources unidentified.
	var started atomic.Pointer[harness.Cluster]
	c.net = nemesis.NewNet(cfg.Nodes, nemesis.ProcSource(func() map[int]int {
		if cl := started.Load(); cl != nil {
			return cl.Pids()
		}
		return nil
	}))
	t.Cleanup(c.net.Close)
	cl, err := harness.NewCluster(t, harness.ClusterConfig{
		N: cfg.Nodes, ElectionTimeout: cfg.ElectionTimeout, Extra: cfg.Extra, Binary: cfg.Binary, Env: cfg.Env,
		Advertise: func(i int, bind string) (string, error) { return c.net.Listen(i, bind) },
	})
	if err != nil {
		t.Fatal(err)
	}
	started.Store(cl)
	c.cl = cl
	if c.ledger, err = harness.StartLedger(t, cfg.Fenced); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, cl)
	if cfg.RWWorkers+cfg.SemWorkers+cfg.ElectWorkers+cfg.SetWorkers > 0 {
		c.waitPrimitives()
	}
	plan := nemesis.Plan(cfg.Seed, cfg.Rounds, cfg.Kinds, cfg.MinHold, cfg.MaxHold, cfg.SnapshotHold)
	start := time.Now()
	g := goal{Name: "campaign " + cfg.Name, Target: cfg.Target, Rounds: len(plan), Max: cfg.Max, Knobs: cfg.Knobs}
	if g.Knobs == "" {
		g.Knobs = "the campaign's Max"
	}
	p := drive(g, func() time.Duration { return time.Since(start) }, func() int { return c.res.Competitions }, func(r int) bool {
		anomalies := c.round(r, plan[r])
		c.res.Rounds++
		return anomalies == 0 || !cfg.StopOnAnomaly
	})
	c.res.Goal = p.Err
	c.res.Elapsed = time.Since(start)
	c.res.Net = c.net.Stats()
	for i := 0; i < cfg.Nodes; i++ {
		c.res.Snapshots += strings.Count(cl.Log(i), "Installed remote snapshot")
	}
	if c.anomalies() > 0 {
		c.saveLogs()
	}
	return c.res
}

func (c *campaign) anomalies() int {
	n := 0
	for _, v := range c.res.Verdicts {
		n += v.Anomalies
	}
	return n
}

// round runs one round with fault f and returns the anomalies it found.
func (c *campaign) round(r int, f nemesis.Fault) int {
	t, cfg := c.t, c.cfg
	rec := workload.NewRecorder(c.clock)
	eps := c.cl.Endpoints()
	var linLocks, bankLocks, accounts []string
	for i := 0; i < cfg.LinLocks; i++ {
		linLocks = append(linLocks, fmt.Sprintf("lin/r%d/%d", r, i))
	}
	for i := 0; i < cfg.BankLocks; i++ {
		bankLocks = append(bankLocks, fmt.Sprintf("bank/r%d/%d", r, i))
		accounts = append(accounts, fmt.Sprintf("r%d-a%d", r, i))
	}
	const opening = 1_000_000_000_000
	setup := workload.NewClient(eps, c.ledger.URL, rec, "setup", 0, cfg.Seed+int64(r))
	defer setup.Close()
	bg := context.Background()
	for _, a := range accounts {
		if err := setup.SetupAccount(bg, a, opening); err != nil {
			t.Fatal(err)
		}
	}
	// The liveness probe's lock, held by a lease that is abandoned when the fault heals.
	live := fmt.Sprintf("live/r%d", r)
	probe := workload.NewClient(eps, c.ledger.URL, rec, "probe", 0, cfg.Seed*31+int64(r))
	defer probe.Close()
	hctx, hcancel := context.WithTimeout(bg, 30*time.Second)
	abandon, err := workload.Hold(hctx, probe, live, cfg.BankTTLMs)
	hcancel()
	if err != nil {
		c.res.FaultErrors = append(c.res.FaultErrors, fmt.Sprintf("round %d: probe could not take %s before the fault: %v", r, live, err))
		abandon = func() {}
	}

	wctx, stop := context.WithCancel(bg)
	var wg sync.WaitGroup
	c.startWorkers(wctx, &wg, rec, r, "lin", cfg.LinWorkers, cfg.Seed*1000, func(ctx context.Context, cli *workload.Client) {
		workload.RunLin(ctx, cli, workload.LinConfig{Locks: linLocks}, 20*time.Second)
	})
	c.startWorkers(wctx, &wg, rec, r, "bank", cfg.BankWorkers, cfg.Seed*2000, func(ctx context.Context, cli *workload.Client) {
		workload.RunBank(ctx, cli, workload.BankConfig{Locks: bankLocks, Accounts: accounts, TTLMs: cfg.BankTTLMs,
			WaitMs: cfg.BankWaitMs, PauseProb: cfg.PauseProb, PauseMin: 1.2, PauseMax: 2.5})
	})
	c.startPrims(wctx, &wg, rec, r)
	obs := workload.NewClient(eps, c.ledger.URL, rec, "observer", 0, cfg.Seed*3000+int64(r))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer obs.Close()
		workload.RunObserver(wctx, obs, bankLocks, 20*time.Millisecond)
	}()

	time.Sleep(cfg.Warmup)
	lctx, lcancel := context.WithTimeout(bg, 20*time.Second)
	_, lerr := c.cl.WaitLeader(lctx)
	lcancel()
	if lerr != nil {
		c.res.FaultErrors = append(c.res.FaultErrors, fmt.Sprintf("round %d: no leader before the fault: %v", r, lerr))
	}
	in, ierr := nemesis.Inject(c.cl, c.net, f)
	if ierr != nil {
		// The round runs on without its fault, but the campaign has failed: it did not
		// test what it was asked to.
		msg := fmt.Sprintf("round %d: inject %s: %v", r, f, ierr)
		c.res.FaultErrors = append(c.res.FaultErrors, msg)
		t.Errorf("fault injection failed: %s", msg)
	} else {
		c.res.Faults[f.Kind]++
		if f.Kind != nemesis.TransferLoop {
			time.Sleep(f.Hold)
		}
		if herr := in.Heal(); herr != nil {
			msg := fmt.Sprintf("round %d: heal %s: %v", r, f, herr)
			c.res.FaultErrors = append(c.res.FaultErrors, msg)
			t.Errorf("healing a fault failed: %s", msg)
		}
	}
	abandon()
	// Liveness: the probe's lock must be free for another lease within the bound.
	pctx, pcancel := context.WithTimeout(bg, 3*c.res.LivenessBound+10*time.Second)
	took, ok := workload.Probe(pctx, probe, live, cfg.BankTTLMs)
	pcancel()
	lv := c.res.Verdicts["liveness"]
	lv.Checked++
	if took > c.res.MaxRecovery {
		c.res.MaxRecovery = took
	}
	if !ok || took > c.res.LivenessBound {
		lv.Anomalies++
		lv.Kinds["slow_recovery"]++
		lv.Examples = append(lv.Examples, fmt.Sprintf("round %d (%s): lock %s acquired after %v (ok=%v), bound %v", r, f, live, took.Round(time.Millisecond), ok, c.res.LivenessBound))
	}
	time.Sleep(cfg.After)
	stop()
	wg.Wait()
	// Leave a healthy cluster for the next round.
	for i := 0; i < cfg.Nodes; i++ {
		if !c.cl.Running(i) {
			if err := c.cl.Start(i); err != nil {
				c.res.FaultErrors = append(c.res.FaultErrors, fmt.Sprintf("round %d: restart n%d: %v", r, i+1, err))
			}
		}
	}
	cctx, ccancel := context.WithTimeout(bg, 60*time.Second)
	if err := c.cl.WaitAllCaughtUp(cctx); err != nil {
		c.res.FaultErrors = append(c.res.FaultErrors, fmt.Sprintf("round %d: after %s: %v", r, f, err))
	}
	ccancel()

	// Judge the round.
	ops := rec.Ops()
	accts := readAccounts(t, c.ledger, accounts, bankLocks, opening)
	dir := filepath.Join(cfg.Artifacts, fmt.Sprintf("round-%03d-%s", r, f.Kind))
	lopt := checker.LinOptions{Dir: dir}
	verdicts := []*checker.Verdict{checker.CheckLinearizable(ops, lopt)}
	// The lock checkers judge exclusive locks; the other primitives have their models.
	lockOps, primOps := splitPrims(ops)
	fv, fst := checker.CheckFencing(lockOps, accts)
	verdicts = append(verdicts, fv, checker.CheckTokens(lockOps), checker.CheckAcknowledged(lockOps), checker.CheckTiming(lockOps),
		checker.CheckSharedLocks(primOps, lopt), checker.CheckSemaphores(primOps, lopt), checker.CheckElections(primOps, lopt),
		checker.CheckLockSets(primOps, lopt), checker.CheckDeadlocks(primOps))
	n := 0
	for _, v := range verdicts {
		c.res.Verdicts[v.Checker].Merge(v)
		n += v.Anomalies
	}
	c.res.Fencing.Applied += fst.Applied
	c.res.Fencing.RefusedStale += fst.RefusedStale
	c.res.Fencing.StaleAccepted += fst.StaleAccepted
	c.res.Fencing.DoubleJobs += fst.DoubleJobs
	st := stats(lockOps)
	c.countPrims(primOps)
	c.res.Sets.DelayWaits += checker.LockDelayWaits(primOps)
	c.res.Ops += len(ops)
	c.res.Grants += st.grants
	c.res.Competitions += st.competitions
	c.res.BankCompet += st.bankCompetitions
	c.res.Pauses += st.pauses
	c.res.Ambiguous += st.ambiguous
	t.Logf("round %d: %s: %d ops, %d grants, %d competitions, %d pauses, %d stale refused, recovery %v, anomalies %d",
		r, f, len(ops), st.grants, st.competitions, st.pauses, fst.RefusedStale, took.Round(time.Millisecond), n)
	if n > 0 || !ok {
		for _, v := range verdicts {
			if !v.OK() {
				t.Logf("round %d: %s", r, v)
			}
		}
		c.save(dir, ops, accts)
	}
	return n
}

// waitLeader fails t unless cl has a leader within 30 s.
func waitLeader(t testing.TB, cl *harness.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
}

// readAccounts reads the ledger's accounts, each opened with opening cents and guarded by
// the lock of the same position in locks, as the fencing checker takes them.
func readAccounts(t testing.TB, led *harness.Ledger, accounts, locks []string, opening int64) []checker.Account {
	t.Helper()
	var out []checker.Account
	for i, a := range accounts {
		acct, err := led.Ledger.Account(context.Background(), a)
		if err != nil {
			t.Fatalf("reading account %s: %v", a, err)
		}
		ca := checker.Account{ID: a, BalanceCents: acct.BalanceCents, Opening: opening, Lock: locks[i]}
		for _, ch := range acct.Charges {
			ca.Charges = append(ca.Charges, checker.AppliedCharge{ChargeID: ch.ChargeID, AmountCents: ch.AmountCents, Token: uint64(ch.Token)})
		}
		out = append(out, ca)
	}
	return out
}

func (c *campaign) save(dir string, ops []checker.Op, accts []checker.Account) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Logf("artifacts: %v", err)
		return
	}
	write := func(name string, v any) {
		b, _ := json.MarshalIndent(v, "", " ")
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			c.t.Logf("artifacts: %v", err)
		}
	}
	write("history.json", ops)
	write("accounts.json", accts)
	c.t.Logf("history and visualizations of the failing round are in %s", dir)
}

func (c *campaign) saveLogs() {
	for i := 0; i < c.cfg.Nodes; i++ {
		_ = os.MkdirAll(c.cfg.Artifacts, 0o755)
		_ = os.WriteFile(filepath.Join(c.cfg.Artifacts, c.cl.IDs[i]+".log"), []byte(c.cl.Log(i)), 0o644)
	}
}

type roundStats struct{ grants, competitions, bankCompetitions, pauses, ambiguous int }

// stats counts grants, pauses, ambiguous operations and competitions: acquire attempts
// that met contention (answered lock_held or wait_timeout, or granted after queueing behind
// another lease, i.e. the lock's previous grant, to another lease, had not been released
// when they were called: it was held, or being granted, or held by a lease left to expire).
func stats(ops []checker.Op) roundStats {
	var st roundStats
	released := map[string]map[uint64]int64{} // lock -> token -> return of its release
	prevGrants := map[string][]checker.Op{}
	for _, o := range ops {
		switch {
		case o.Kind == checker.KindPause:
			st.pauses++
		case o.Outcome == checker.OutAmbiguous:
			st.ambiguous++
		}
		if o.Kind == checker.KindRelease && o.Outcome == checker.OutOK {
			if released[o.Lock] == nil {
				released[o.Lock] = map[uint64]int64{}
			}
			released[o.Lock][o.Token] = o.Return
		}
		if o.Kind == checker.KindAcquire {
			switch o.Outcome {
			case checker.OutHeld, checker.OutWaitTimeout:
				st.competitions++
				if o.Workload == "bank" {
					st.bankCompetitions++
				}
			case checker.OutOK:
				st.grants++
				prevGrants[o.Lock] = append(prevGrants[o.Lock], o)
			}
		}
	}
	for lock, gs := range prevGrants {
		sort.Slice(gs, func(i, j int) bool { return gs[i].Token < gs[j].Token })
		for i := 1; i < len(gs); i++ {
			g, p := gs[i], gs[i-1]
			if g.WaitMs == 0 || p.Owner == g.Owner {
				continue
			}
			if r, ok := released[lock][p.Token]; !ok || r > g.Call {
				st.competitions++
				if g.Workload == "bank" {
					st.bankCompetitions++
				}
			}
		}
	}
	return st
}

// table renders the campaign's figures.
func (res *campaignResult) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d rounds in %v, %d lock competitions (%.0f per minute)\n", res.Seed, res.Rounds, res.Elapsed.Round(time.Second), res.Competitions, res.PerMinute())
	fmt.Fprintf(&b, "| fault | injected |\n|---|---|\n")
	for _, k := range nemesis.AllKinds() {
		if n := res.Faults[k]; n > 0 || asked(res.Asked, k) {
			fmt.Fprintf(&b, "| %s | %d |\n", k, n)
		}
	}
	fmt.Fprintf(&b, "\n| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| operations | %d |\n| ambiguous operations | %d |\n| grants | %d |\n| lock competitions (of which bank workers, with pauses) | %d (%d) |\n| client pauses > TTL | %d |\n",
		res.Ops, res.Ambiguous, res.Grants, res.Competitions, res.BankCompet, res.Pauses)
	fmt.Fprintf(&b, "| charges applied | %d |\n| stale writes refused | %d |\n| stale writes accepted | %d |\n| jobs applied twice | %d |\n",
		res.Fencing.Applied, res.Fencing.RefusedStale, res.Fencing.StaleAccepted, res.Fencing.DoubleJobs)
	fmt.Fprintf(&b, "| slowest recovery (bound) | %v (%v) |\n| snapshots installed | %d |\n| proxy connections (unidentified) | %d (%d) |\n",
		res.MaxRecovery.Round(time.Millisecond), res.LivenessBound, res.Snapshots, res.Net.Accepted, res.Net.Unknown)
	fmt.Fprintf(&b, "\n| primitive | operations | grants | refusals | shared grants | leader changes |\n|---|---|---|---|---|---|\n")
	for _, w := range primWorkloads {
		if p := res.Prims[w]; p != nil {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", primNames[w], p.Ops, p.Grants, p.Refusals, p.SharedGrants, p.LeaderChanges)
		}
	}
	fmt.Fprintf(&b, "\n| lockset workload | sets granted whole | single grants | deadlock answers | waits timed out | grants ended by their maximum hold | grants that waited out a lock delay |\n|---|---|---|---|---|---|---|\n| | %d | %d | %d | %d | %d | %d |\n",
		res.Sets.Sets, res.Sets.Singles, res.Sets.Deadlocks, res.Sets.Timeouts, res.Sets.MaxHoldEnded, res.Sets.DelayWaits)
	fmt.Fprintf(&b, "\n| checker | checked | anomalies |\n|---|---|---|\n")
	for _, name := range checkerOrder {
		v := res.Verdicts[name]
		fmt.Fprintf(&b, "| %s | %d | %d |\n", name, v.Checked, v.Anomalies)
	}
	if len(res.FaultErrors) > 0 {
		fmt.Fprintf(&b, "\nharness errors:\n")
		for _, e := range res.FaultErrors {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	return b.String()
}

// verdictReport renders each checker's verdict line with its counterexamples.
func (res *campaignResult) verdictReport() string {
	var lines []string
	for _, name := range checkerOrder {
		lines = append(lines, res.Verdicts[name].String())
	}
	return strings.Join(lines, "\n")
}

func asked(kinds []nemesis.Kind, k nemesis.Kind) bool {
	for _, a := range kinds {
		if a == k {
			return true
		}
	}
	return false
}

// faultCounts renders how many times each fault kind the campaign was asked for was
// injected successfully, in table order: "kill-leader=1 pause-leader=0 ...".
func (res *campaignResult) faultCounts() string {
	var parts []string
	for _, k := range nemesis.AllKinds() {
		if asked(res.Asked, k) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, res.Faults[k]))
		}
	}
	return strings.Join(parts, " ")
}

// campaignServeFlags are the serve flags of every campaign's nodes: snapshots every 1,024
// entries with 256 kept behind, so that the campaigns take snapshots and install them, and
// WAL segments small enough to be sealed and deleted within a snapshot-install fault's hold
// (faultProblems says why a campaign needs that).
var campaignServeFlags = []string{"--snapshot-threshold", "1024", "--trailing-logs", "256", "--raft-wal-segment-size", "256KiB"}

// faultProblems lists why the campaign did not test what it was asked to: every harness
// error (a fault that could not be injected or healed, a node that would not restart, a
// round without a leader), every fault kind asked for that never ran, and a
// snapshot-install fault after which no node installed a snapshot.
func (res *campaignResult) faultProblems() []string {
	out := append([]string(nil), res.FaultErrors...)
	seen := map[nemesis.Kind]bool{}
	for _, k := range res.Asked {
		if res.Faults[k] == 0 && !seen[k] {
			seen[k] = true
			out = append(out, fmt.Sprintf("fault kind %s was asked for but never ran", k))
		}
	}
	if n := res.Faults[nemesis.SnapshotInstall]; n > 0 && res.Snapshots == 0 {
		// raft-wal serves a compacted entry while its segment is on disk, so a leader sends
		// a snapshot only once the follower's next entry is in a deleted segment: the
		// campaign's nodes need segments small enough to be sealed and deleted meanwhile.
		out = append(out, fmt.Sprintf("snapshot-install ran %d times but no node installed a snapshot (segments too large for the hold? --raft-wal-segment-size)", n))
	}
	return out
}

// checkFaults fails t when the campaign did not test what it was asked to, and logs the
// count per fault kind that actually ran.
func checkFaults(t testing.TB, res *campaignResult) {
	t.Helper()
	t.Logf("faults injected: %s", res.faultCounts())
	for _, p := range res.faultProblems() {
		t.Errorf("fault campaign: %s", p)
	}
}

// primNames names the primitives' workloads in the table.
var primNames = map[string]string{"rw": "shared locks (90% shared)", "sem": "semaphores", "elect": "elections", "set": "locksets and their locks"}

// startPrims starts the workers of the other primitives for round r, on fresh names.
func (c *campaign) startPrims(ctx context.Context, wg *sync.WaitGroup, rec *workload.Recorder, r int) {
	cfg, eps := c.cfg, c.cl.Endpoints()
	names := func(prefix string, n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf("%s/r%d/%d", prefix, r, i))
		}
		return out
	}
	rw, sems, elections := names("rw", cfg.RWLocks), names("sem", cfg.Semaphores), names("elect", cfg.Elections)
	start := func(kind string, workers int, seed int64, run func(context.Context, *workload.Client)) {
		c.startWorkers(ctx, wg, rec, r, kind, workers, seed, run)
	}
	start("rw", cfg.RWWorkers, cfg.Seed*4000, func(ctx context.Context, cli *workload.Client) {
		workload.RunShared(ctx, cli, workload.LinConfig{Locks: rw}, 20*time.Second)
	})
	start("sem", cfg.SemWorkers, cfg.Seed*5000, func(ctx context.Context, cli *workload.Client) {
		workload.RunSemaphore(ctx, cli, workload.LinConfig{Locks: sems}, cfg.SemLimit, 20*time.Second)
	})
	start("elect", cfg.ElectWorkers, cfg.Seed*6000, func(ctx context.Context, cli *workload.Client) {
		workload.RunElection(ctx, cli, workload.LinConfig{Locks: elections}, 20*time.Second)
	})
	pool := names("set", cfg.SetLocks)
	start("set", cfg.SetWorkers, cfg.Seed*7000, func(ctx context.Context, cli *workload.Client) {
		workload.RunSets(ctx, cli, workload.SetsConfig{Locks: pool, Size: cfg.SetSize, WaitMs: cfg.SetWaitMs, SetProb: 0.3,
			MaxHoldProb: 0.3, MaxHoldMs: cfg.SetMaxHoldMs, Hold: 50 * time.Millisecond}, 20*time.Second)
	})
	for p := 0; p < cfg.EdgePairs; p++ {
		// Recorded as the lockset workload, whose checkers judge them; workers 100 and up.
		a := workload.NewClient(eps, c.ledger.URL, rec, "set", 100+2*p, cfg.Seed*8000+int64(r*100+2*p))
		b := workload.NewClient(eps, c.ledger.URL, rec, "set", 101+2*p, cfg.Seed*8000+int64(r*100+2*p+1))
		ecfg := cfg.Edges
		ecfg.Prefix = fmt.Sprintf("edge/r%d/p%d", r, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.Close()
			defer b.Close()
			workload.RunEdges(ctx, a, b, ecfg, 20*time.Second)
		}()
	}
}

// startWorkers starts n workers of workload kind for round r, each running run with a
// client of its own (worker w's random source seeded with seed + r*100 + w) until ctx ends.
func (c *campaign) startWorkers(ctx context.Context, wg *sync.WaitGroup, rec *workload.Recorder, r int, kind string, n int, seed int64,
	run func(context.Context, *workload.Client)) {
	for w := 0; w < n; w++ {
		cli := workload.NewClient(c.cl.Endpoints(), c.ledger.URL, rec, kind, w, seed+int64(r*100+w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cli.Close()
			run(ctx, cli)
		}()
	}
}

// splitPrims separates the operations of the other primitives' workloads (and their
// leases) from those the lock checkers judge.
func splitPrims(ops []checker.Op) (locks, prims []checker.Op) {
	for _, o := range ops {
		if _, ok := primNames[o.Workload]; ok {
			prims = append(prims, o)
		} else {
			locks = append(locks, o)
		}
	}
	return locks, prims
}

// countPrims adds a round's operations of the other primitives to the campaign's counts.
// An election's leader changes are the campaigns won by another lease than the one that
// won before it (in the order of their returns; every round uses fresh names).
func (c *campaign) countPrims(ops []checker.Op) {
	sorted := append([]checker.Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Return < sorted[j].Return })
	lastWinner := map[string]string{}
	for _, o := range sorted {
		p := c.res.Prims[o.Workload]
		if p == nil {
			continue
		}
		p.Ops++
		switch o.Outcome {
		case checker.OutOK:
			if o.Kind == checker.KindAcquire || o.Kind == checker.KindSemAcquire || o.Kind == checker.KindCampaign || o.Kind == checker.KindProclaim || o.Kind == checker.KindLockSet {
				p.Grants++
			}
			if o.Kind == checker.KindAcquire && o.Mode == "shared" {
				p.SharedGrants++
			}
			if o.Kind == checker.KindCampaign {
				if prev, ok := lastWinner[o.Lock]; ok && prev != o.Lease {
					p.LeaderChanges++
				}
				lastWinner[o.Lock] = o.Lease
			}
		case checker.OutHeld, checker.OutSemFull, checker.OutElectionHeld, checker.OutModeConflict, checker.OutLimitConflict, checker.OutDeadlock, checker.OutWaitTimeout:
			p.Refusals++
		}
		if o.Workload == "set" {
			c.res.Sets.add(o)
		}
	}
}

// waitPrimitives waits until the cluster serves the other primitives: a fresh cluster
// activates protocol version 2, which they need, a moment after every node has reported
// its version, and answers 503 no_leader until then. Those answers would enter the first
// round's history as ambiguous operations, each one a branch for the checkers to explore.
func (c *campaign) waitPrimitives() {
	cli := workload.NewClient(c.cl.Endpoints(), c.ledger.URL, workload.NewRecorder(c.clock), "setup", 0, c.cfg.Seed)
	defer cli.Close()
	var op workload.Op
	if !testkit.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		// A permit of a semaphore no round uses, on an implicit lease that expires at once;
		// with the lockset workload, a lockset too (protocol version 3).
		op = cli.AcquirePermit(context.Background(), "verify/ready", "", "setup", 1)
		if c.cfg.SetWorkers > 0 && (op.Outcome == checker.OutOK || op.Outcome == checker.OutSemFull) {
			op = cli.AcquireSet(context.Background(), []string{"verify/ready-set"}, "", "setup", 0, 0, 0)
			return op.Outcome == checker.OutOK || op.Outcome == checker.OutHeld
		}
		return op.Outcome == checker.OutOK || op.Outcome == checker.OutSemFull
	}) {
		c.t.Fatalf("the cluster does not serve semaphores 30 s after it started: %s %s", op.Outcome, op.Err)
	}
}

// add counts one operation of the lockset workload.
func (st *setStats) add(o checker.Op) {
	switch {
	case o.Outcome == checker.OutOK && o.Kind == checker.KindLockSet:
		st.Sets++
	case o.Outcome == checker.OutOK && o.Kind == checker.KindAcquire:
		st.Singles++
	case o.Outcome == checker.OutDeadlock:
		st.Deadlocks++
	case o.Outcome == checker.OutWaitTimeout:
		st.Timeouts++
	case o.Outcome == checker.OutNotHolder && (o.Kind == checker.KindRelease || o.Kind == checker.KindLockSetRelease):
		st.MaxHoldEnded++
	}
}
