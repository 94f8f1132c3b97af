package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testkit"
	"github.com/raftlock/raftlock/test/verify/checker"
	"github.com/raftlock/raftlock/test/verify/harness"
	"github.com/raftlock/raftlock/test/verify/workload"
)

// bankConfig configures a run of the multi-process bank workload: worker processes
// (test/verify/bankworker) that take locks with short leases, charge the ledger with each
// lock's token, and are stopped with SIGSTOP for longer than their TTL right before the
// write of one hold in PauseEvery. The cluster runs without faults: the fault campaign
// (TestShortCampaign, TestCampaign) covers those; this run is about holders that pause.
type bankConfig struct {
	Name  string
	Seed  int64
	Nodes int
	// Workers processes compete for Locks locks (one account each), each running Threads
	// workers at once (0 means 1): a pause stops all of a process's workers.
	Workers, Locks int
	Threads        int
	TTLMs, WaitMs  int64
	// PauseEvery: one hold in PauseEvery is paused; PauseFactor: a pause is PauseFactor
	// times the TTL.
	PauseEvery  int
	PauseFactor float64
	// Round is how long each round's workers run; rounds go on until Target bank
	// competitions have been counted (the goal); a run that reaches Max first has failed, and
	// bankResult.Goal says at what rate it ran and what to change (Knobs).
	Round  time.Duration
	Target int
	Max    time.Duration
	Knobs  string
	// Fenced false switches the ledger's fence check off (the negative control).
	Fenced bool
	// DSN is a PostgreSQL URL for the ledger; empty means SQLite.
	DSN string
	// Artifacts is where a round with an anomaly leaves its merged history and accounts;
	// empty: $TMPDIR/raftlock-bank-<name>-<backend>-<seed>.
	Artifacts string
}

// bankResult is what a bank run measured and found.
type bankResult struct {
	Backend      string
	Rounds       int
	Elapsed      time.Duration
	Workers      int
	Ops          int
	Grants       int
	Competitions int // the bank workers' competitions, counted by stats
	Pauses       int // pauses in the workers' histories
	// SIGSTOPs are the harness's record of the same pauses: how many, the shortest time a
	// worker was seen stopped, and how many of those times exceeded the TTL.
	SIGSTOPs, StopsOverTTL int
	MinStop, MaxStop       time.Duration
	Fencing                checker.FencingStats
	Verdicts               map[string]*checker.Verdict
	WorkerErrors           []string
	LoadAvg                string
	// Goal is why the run stopped short of its target (nil when it reached it, or a failed
	// round stopped it).
	Goal error
}

var bankCheckers = []string{"fencing", "tokens", "acknowledged", "timing"}

// bankOpening is every account's opening balance: room for 10^6 jobs of JobUnitCents.
const bankOpening = 1_000_000_000_000

// runBank runs rounds of the bank workload on a fresh cluster and ledger.
func runBank(t *testing.T, cfg bankConfig) *bankResult {
	t.Helper()
	res := &bankResult{Backend: "sqlite", Workers: cfg.Workers, Verdicts: map[string]*checker.Verdict{}}
	if cfg.DSN != "" {
		res.Backend = "postgres"
	}
	for _, name := range bankCheckers {
		res.Verdicts[name] = &checker.Verdict{Checker: name, Kinds: map[string]int{}}
	}
	pause := time.Duration(cfg.PauseFactor * float64(cfg.TTLMs) * float64(time.Millisecond))
	t.Logf("bank %s: seed %d, %s ledger (fenced %v), %d nodes, %d worker processes on %d locks, TTL %dms, wait %dms, SIGSTOP one hold in %d for %v (%.1fx TTL), target %d competitions",
		cfg.Name, cfg.Seed, res.Backend, cfg.Fenced, cfg.Nodes, cfg.Workers, cfg.Locks, cfg.TTLMs, cfg.WaitMs, cfg.PauseEvery, pause, cfg.PauseFactor, cfg.Target)
	bin := harness.WorkerBinary(t)
	cl, err := harness.NewCluster(t, harness.ClusterConfig{N: cfg.Nodes})
	if err != nil {
		t.Fatal(err)
	}
	led, err := harness.StartLedgerDB(t, cfg.Fenced, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, cl)
	clock := workload.NewSharedClock(workload.MonotonicNow())
	rng := rand.New(rand.NewSource(cfg.Seed))
	// Account ids unique to this run: a PostgreSQL database outlives it.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	dir := t.TempDir()
	start := time.Now()
	g := goal{Name: "bank " + cfg.Name + " " + res.Backend, Target: cfg.Target, Max: cfg.Max, Knobs: cfg.Knobs}
	if g.Knobs == "" {
		g.Knobs = "RAFTLOCK_BANK_MAX"
	}
	p := drive(g, func() time.Duration { return time.Since(start) }, func() int { return res.Competitions }, func(r int) bool {
		bankRound(t, cfg, res, r, run, dir, bin, cl.Endpoints(), led, clock, rng, pause)
		res.Rounds++
		return !t.Failed()
	})
	res.Goal = p.Err
	res.Elapsed = time.Since(start)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return res
}

// bankRound runs one round: fresh locks and accounts, the worker processes for cfg.Round,
// then the checkers over the merged history and the ledger's accounts.
func bankRound(t *testing.T, cfg bankConfig, res *bankResult, r int, run, dir, bin string, eps []string,
	led *harness.Ledger, clock *workload.Clock, rng *rand.Rand, pause time.Duration) {
	t.Helper()
	var locks, accounts []string
	for i := 0; i < cfg.Locks; i++ {
		locks = append(locks, fmt.Sprintf("bank/r%d/%d", r, i))
		accounts = append(accounts, fmt.Sprintf("%s-%s-r%d-a%d", cfg.Name, run, r, i))
	}
	bg := context.Background()
	setup := workload.NewClient(eps, led.URL, workload.NewRecorder(clock), "setup", 0, 0)
	defer setup.Close()
	for _, a := range accounts {
		if err := setup.SetupAccount(bg, a, bankOpening); err != nil {
			t.Fatal(err)
		}
	}
	roundStart := time.Now()
	var workers []*harness.Worker
	var histories []string
	for w := 0; w < cfg.Workers; w++ {
		hist := filepath.Join(dir, fmt.Sprintf("r%d-w%d.json", r, w))
		histories = append(histories, hist)
		args := []string{
			"--endpoints", strings.Join(eps, ","), "--ledger", led.URL,
			"--locks", strings.Join(locks, ","), "--accounts", strings.Join(accounts, ","),
			"--opening", strconv.Itoa(bankOpening), "--ttl-ms", strconv.FormatInt(cfg.TTLMs, 10),
			"--wait-ms", strconv.FormatInt(cfg.WaitMs, 10), "--duration", cfg.Round.String(),
			"--worker", strconv.Itoa(w), "--threads", strconv.Itoa(max(cfg.Threads, 1)), "--seed", strconv.FormatInt(rng.Int63(), 10),
			"--clock-origin", strconv.FormatInt(clock.Origin(), 10), "--history", hist,
		}
		if cfg.PauseEvery > 0 {
			args = append(args, "--pause-every", strconv.Itoa(cfg.PauseEvery), "--pause-offset", strconv.Itoa(rng.Intn(cfg.PauseEvery)))
		}
		wk, err := harness.StartWorker(bin, args, pause, filepath.Join(dir, fmt.Sprintf("r%d-w%d.log", r, w)))
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, wk)
	}
	var stops []harness.PauseRecord
	for w, wk := range workers {
		if err := wk.Wait(cfg.Round + 2*time.Minute); err != nil {
			res.WorkerErrors = append(res.WorkerErrors, fmt.Sprintf("round %d worker %d: %v (log %s)", r, w, err, filepath.Join(dir, fmt.Sprintf("r%d-w%d.log", r, w))))
			t.Errorf("round %d worker %d: %v", r, w, err)
		}
		stops = append(stops, wk.Pauses()...)
	}
	ran := time.Since(roundStart)

	// Merge the workers' histories on the shared clock.
	var ops []checker.Op
	for _, h := range histories {
		b, err := os.ReadFile(h)
		if err != nil {
			t.Errorf("round %d: %v", r, err)
			continue
		}
		var part []checker.Op
		if err := json.Unmarshal(b, &part); err != nil {
			t.Fatalf("round %d: %s: %v", r, h, err)
		}
		ops = append(ops, part...)
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Return < ops[j].Return })
	for i := range ops {
		ops[i].ID = i
	}
	accts := readAccounts(t, led, accounts, locks, bankOpening)
	checkStart := time.Now()
	fv, fst := checker.CheckFencing(ops, accts)
	verdicts := []*checker.Verdict{fv, checker.CheckTokens(ops), checker.CheckAcknowledged(ops), checker.CheckTiming(ops)}
	anomalies := 0
	for _, v := range verdicts {
		res.Verdicts[v.Checker].Merge(v)
		anomalies += v.Anomalies
	}
	if anomalies > 0 {
		saveBankRound(t, cfg, res.Backend, r, ops, accts)
	}
	res.Fencing.Applied += fst.Applied
	res.Fencing.RefusedStale += fst.RefusedStale
	res.Fencing.StaleAccepted += fst.StaleAccepted
	res.Fencing.DoubleJobs += fst.DoubleJobs
	st := stats(ops)
	res.Ops += len(ops)
	res.Grants += st.grants
	res.Competitions += st.bankCompetitions
	res.Pauses += st.pauses
	t.Logf("round %d: median latency %s", r, medianLatencies(ops))
	ttl := time.Duration(cfg.TTLMs) * time.Millisecond
	for _, s := range stops {
		res.SIGSTOPs++
		if s.Stopped > ttl {
			res.StopsOverTTL++
		}
		if res.MinStop == 0 || s.Stopped < res.MinStop {
			res.MinStop = s.Stopped
		}
		if s.Stopped > res.MaxStop {
			res.MaxStop = s.Stopped
		}
	}
	t.Logf("round %d: %v, %d ops, %d grants, %d competitions (%.0f/s), %d SIGSTOP pauses, %d stale writes refused, %d accepted, %d jobs applied twice, checked in %v, anomalies %d",
		r, ran.Round(time.Millisecond), len(ops), st.grants, st.bankCompetitions, float64(st.bankCompetitions)/ran.Seconds(), len(stops),
		fst.RefusedStale, fst.StaleAccepted, fst.DoubleJobs, time.Since(checkStart).Round(time.Millisecond), anomalies)
}

// saveBankRound keeps the merged history and the accounts of round r, which had an anomaly:
// the workers' own files are in the test's temporary directory, removed when it ends.
func saveBankRound(t *testing.T, cfg bankConfig, backend string, r int, ops []checker.Op, accts []checker.Account) {
	dir := cfg.Artifacts
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("raftlock-bank-%s-%s-%d", cfg.Name, backend, cfg.Seed))
	}
	dir = filepath.Join(dir, fmt.Sprintf("round-%03d", r))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("artifacts: %v", err)
		return
	}
	for name, v := range map[string]any{"history.json": ops, "accounts.json": accts} {
		b, err := json.MarshalIndent(v, "", " ")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Logf("artifacts: %v", err)
		}
	}
	t.Logf("round %d: history and accounts of the round with an anomaly are in %s", r, dir)
}

// table renders a bank run's figures.
func (res *bankResult) table(cfg bankConfig) string {
	var b strings.Builder
	pct := 0.0
	frozen := res.SIGSTOPs * max(cfg.Threads, 1)
	if res.Grants > 0 {
		pct = 100 * float64(frozen) / float64(res.Grants)
	}
	fmt.Fprintf(&b, "bank workload, %s ledger (fenced %v), seed %d: %d rounds in %v, load average %s\n", res.Backend, cfg.Fenced, cfg.Seed, res.Rounds, res.Elapsed.Round(time.Second), res.LoadAvg)
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| worker processes x workers each, locks (= accounts) | %d x %d, %d |\n", cfg.Workers, max(cfg.Threads, 1), cfg.Locks)
	fmt.Fprintf(&b, "| lease TTL, SIGSTOP pause (ratio) | %dms, %v (%.1fx TTL) |\n",
		cfg.TTLMs, time.Duration(cfg.PauseFactor*float64(cfg.TTLMs))*time.Millisecond, cfg.PauseFactor)
	fmt.Fprintf(&b, "| operations | %d |\n| holds (grants) | %d |\n", res.Ops, res.Grants)
	fmt.Fprintf(&b, "| **bank lock competitions** | **%d** (%.0f/s, %.0f per minute) |\n", res.Competitions, float64(res.Competitions)/res.Elapsed.Seconds(), perMinute(res.Competitions, res.Elapsed))
	fmt.Fprintf(&b, "| SIGSTOP pauses, workers frozen by them (per hold) | %d, %d (%.2f%%), recorded by the workers: %d |\n", res.SIGSTOPs, frozen, pct, res.Pauses)
	fmt.Fprintf(&b, "| pauses longer than TTL | %d of %d (stopped %v to %v) |\n", res.StopsOverTTL, res.SIGSTOPs, res.MinStop.Round(time.Millisecond), res.MaxStop.Round(time.Millisecond))
	fmt.Fprintf(&b, "| charges applied | %d |\n| stale writes refused | %d |\n", res.Fencing.Applied, res.Fencing.RefusedStale)
	fmt.Fprintf(&b, "| **stale writes accepted** | **%d** |\n| **duplicate charges (jobs applied twice)** | **%d** |\n", res.Fencing.StaleAccepted, res.Fencing.DoubleJobs)
	fmt.Fprintf(&b, "\n| checker | checked | anomalies |\n|---|---|---|\n")
	for _, name := range bankCheckers {
		v := res.Verdicts[name]
		fmt.Fprintf(&b, "| %s | %d | %d |\n", name, v.Checked, v.Anomalies)
	}
	for _, e := range res.WorkerErrors {
		fmt.Fprintf(&b, "worker error: %s\n", e)
	}
	return b.String()
}

// checkBank fails t unless a fenced bank run met the claim: at least cfg.Target bank
// competitions, SIGSTOP pauses longer than the TTL freezing workers at least once per 100
// holds (a pause freezes every worker of its process), zero stale writes accepted and zero
// duplicate charges, and every checker passing.
func checkBank(t *testing.T, cfg bankConfig, res *bankResult) {
	t.Helper()
	t.Logf("\n%s", res.table(cfg))
	for _, name := range bankCheckers {
		if v := res.Verdicts[name]; !v.OK() {
			t.Errorf("%s (replay with RAFTLOCK_VERIFY_SEED=%d)", v, cfg.Seed)
		}
	}
	if res.Goal != nil {
		t.Error(res.Goal)
	} else if res.Competitions < cfg.Target {
		t.Errorf("the bank workload made %d lock competitions, want at least %d", res.Competitions, cfg.Target)
	}
	if frozen := res.SIGSTOPs * max(cfg.Threads, 1); frozen*100 < res.Grants {
		t.Errorf("%d SIGSTOP pauses of %d workers each for %d holds: fewer than 1%%", res.SIGSTOPs, max(cfg.Threads, 1), res.Grants)
	}
	if res.StopsOverTTL != res.SIGSTOPs || res.SIGSTOPs != res.Pauses {
		t.Errorf("%d SIGSTOP pauses (the workers recorded %d), of which only %d were longer than the TTL", res.SIGSTOPs, res.Pauses, res.StopsOverTTL)
	}
	if res.Fencing.StaleAccepted != 0 || res.Fencing.DoubleJobs != 0 {
		t.Errorf("%d stale writes accepted and %d duplicate charges, want 0 and 0", res.Fencing.StaleAccepted, res.Fencing.DoubleJobs)
	}
	if res.Fencing.RefusedStale == 0 {
		t.Errorf("no stale write was refused: the pauses did not make any holder stale")
	}
}

// shortBankConfig is the bank run of `make test`: 2,000 competitions with SIGSTOP pauses on
// one hold in 40, every property checked. RAFTLOCK_BANK_WORKERS, RAFTLOCK_BANK_LOCKS and
// RAFTLOCK_BANK_TARGET change its size.
func shortBankConfig(t *testing.T, name string) bankConfig {
	return bankConfig{
		Name: name, Seed: envSeed(t), Nodes: 3,
		Workers: envInt(t, "RAFTLOCK_BANK_WORKERS", 24), Locks: envInt(t, "RAFTLOCK_BANK_LOCKS", 6),
		TTLMs: 1000, WaitMs: 2000, PauseEvery: 40, PauseFactor: 1.5,
		Round: 8 * time.Second, Target: envInt(t, "RAFTLOCK_BANK_TARGET", 2000), Max: envDuration(t, "RAFTLOCK_BANK_MAX", 100*time.Second), Fenced: true,
	}
}

// postgresDSN returns RAFTLOCK_TEST_POSTGRES_DSN, or skips t saying plainly what was not
// checked.
func postgresDSN(t *testing.T) string {
	dsn := os.Getenv("RAFTLOCK_TEST_POSTGRES_DSN")
	if dsn == "" {
		testkit.Unavailable(t, "RAFTLOCK_TEST_POSTGRES_DSN is not set: the bank workload is NOT checked on PostgreSQL (see scripts/ci-postgres.sh)")
	}
	return dsn
}

// TestBankShort runs the multi-process bank workload to 2,000 lock competitions with
// SIGSTOP pauses on SQLite and on PostgreSQL, and fails on any duplicate charge, any stale
// write accepted, or any checker's anomaly.
func TestBankShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server and worker processes; skipped with -short")
	}
	onLedgers(t, "", func(t *testing.T) bankConfig { return shortBankConfig(t, "short") }, runAndCheck)
}

// onLedgers runs check on the configuration mk makes, once over SQLite and once over
// PostgreSQL (RAFTLOCK_TEST_POSTGRES_DSN; see postgresDSN), in subtests named prefix+"sqlite"
// and prefix+"postgres".
func onLedgers(t *testing.T, prefix string, mk func(*testing.T) bankConfig, check func(*testing.T, bankConfig)) {
	t.Run(prefix+"sqlite", func(t *testing.T) { check(t, mk(t)) })
	t.Run(prefix+"postgres", func(t *testing.T) {
		cfg := mk(t)
		cfg.DSN = postgresDSN(t)
		check(t, cfg)
	})
}

// runAndCheck runs cfg's bank rounds and fails t on what checkBank finds.
func runAndCheck(t *testing.T, cfg bankConfig) { checkBank(t, cfg, runBank(t, cfg)) }

// TestBankNegativeControlFencingOff runs the same bank workload against a ledger whose fence
// check is off: the SIGSTOPped holders' stale writes must then be accepted and duplicate
// charges appear, or the checks above prove nothing.
func TestBankNegativeControlFencingOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server and worker processes; skipped with -short")
	}
	onLedgers(t, "", func(t *testing.T) bankConfig {
		cfg := shortBankConfig(t, "nofence")
		cfg.PauseEvery, cfg.Round = 10, 6*time.Second
		return cfg
	}, checkBankUnfenced)
}

// checkBankUnfenced runs one round of cfg against a ledger whose fence check is off and
// fails t unless the SIGSTOPped holders' stale writes were accepted and charged twice: the
// negative control of a fenced run of the same shape.
func checkBankUnfenced(t *testing.T, cfg bankConfig) {
	t.Helper()
	cfg.Fenced = false
	cfg.Artifacts = t.TempDir() // this run fails on purpose; keep nothing
	cfg.Target = 1
	res := runBank(t, cfg)
	t.Logf("\n%s", res.table(cfg))
	if res.Fencing.StaleAccepted == 0 || res.Fencing.DoubleJobs == 0 {
		t.Fatalf("with fencing off the checker found %d stale writes accepted and %d duplicate charges; it must find both",
			res.Fencing.StaleAccepted, res.Fencing.DoubleJobs)
	}
	if res.Verdicts["fencing"].OK() {
		t.Fatal("the fencing verdict passed a ledger without fencing")
	}
}

// medianLatencies renders the median latency of each kind of definite operation.
func medianLatencies(ops []checker.Op) string {
	by := map[string][]int64{}
	for _, o := range ops {
		if o.Outcome != checker.OutAmbiguous && o.Kind != checker.KindPause {
			by[o.Kind] = append(by[o.Kind], o.Return-o.Call)
		}
	}
	var parts []string
	for _, k := range sortedKinds(by) {
		d := by[k]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		parts = append(parts, fmt.Sprintf("%s %v", k, time.Duration(d[len(d)/2]).Round(100*time.Microsecond)))
	}
	return strings.Join(parts, ", ")
}

func sortedKinds(m map[string][]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
