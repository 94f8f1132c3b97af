package checker

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Operation kinds, as the workload records them. A shared lock uses KindAcquire,
// KindRelease and KindStatus with a Mode; a proclaim is a KindCampaign with the leader's
// Token.
const (
	KindCreateLease = "create_lease"
	KindKeepAlive   = "keepalive"
	KindReadLease   = "read_lease"
	KindRevoke      = "revoke"
	KindAcquire     = "acquire"
	KindRelease     = "release"
	KindStatus      = "status"
	KindCharge      = "charge"
	KindReadAccount = "read_account"
	KindPause       = "pause"
	KindSemAcquire  = "sem_acquire"
	KindSemRelease  = "sem_release"
	KindSemStatus   = "sem_status"
	KindCampaign    = "campaign"
	KindProclaim    = "proclaim"
	KindResign      = "resign"
	KindElectStatus = "elect_status"
	// A lockset (POST /v1/locksets) and its release (DELETE /v1/locksets): Names, and
	// Tokens in the same order (the answer's, the release's).
	KindLockSet        = "lockset"
	KindLockSetRelease = "lockset_release"
	// KindExpire is no recorded operation: LinHistory adds one for a lease that held a
	// lock with a lock delay, from the earliest instant its lease can have expired (see
	// expireOps), so that the model may end the grant there with its delay.
	KindExpire = "expire"
)

// Outcomes: how an operation ended. An ambiguous operation may or may not have taken
// effect; the refusals of the primitives are named by their API codes.
const (
	OutOK            = "ok"
	OutHeld          = "lock_held"
	OutWaitTimeout   = "wait_timeout"
	OutNotHolder     = "not_holder"
	OutLeaseNotFound = "lease_not_found"
	OutStale         = "stale_token"
	OutAmbiguous     = "ambiguous"
	OutUnavailable   = "unavailable" // definite: the request was never sent (refused)
	OutFailed        = "failed"      // definite: another 4xx answer
	OutModeConflict  = "mode_conflict"
	OutSemFull       = "semaphore_full"
	OutLimitConflict = "limit_conflict"
	OutElectionHeld  = "election_held"
	OutDeadlock      = "deadlock"
)

// Holder is one grant of a shared lock or one permit of a semaphore in a status read.
type Holder struct {
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
}

// CycleStep is one step of a deadlock answer's cycle: the lease with fingerprint Lease
// waits for Lock, held or asked for ahead of it by the next step's lease.
type CycleStep struct {
	Lease string `json:"lease"`
	Lock  string `json:"lock"`
}

// Never is the return time of an ambiguous operation that might still take effect.
const Never = math.MaxInt64

// Op is one recorded operation: the workload records it (workload.Op is this type) and
// the checkers judge it, so that a field the workload records is one the checkers read.
// Times are nanoseconds on the campaign's one monotonic clock.
type Op struct {
	ID       int    `json:"id"`
	Workload string `json:"workload"` // lin, bank, observer, probe
	Worker   int    `json:"worker"`
	Kind     string `json:"kind"`
	Node     int    `json:"node"`
	Lock     string `json:"lock,omitempty"`
	Lease    string `json:"lease,omitempty"`
	// Owner is the label of the lease (the owner given at acquire time), which a status read
	// shows; the checkers use it as the lease's identity.
	Owner  string `json:"owner,omitempty"`
	TTLMs  int64  `json:"ttl_ms,omitempty"`
	WaitMs int64  `json:"wait_ms,omitempty"`
	// Token is the input token of a release or charge, and the output token of a grant or
	// of a status read.
	Token uint64 `json:"token,omitempty"`
	// Held and StatusOwner are a status read's answer.
	Held        bool   `json:"held,omitempty"`
	StatusOwner string `json:"status_owner,omitempty"`
	// Locks is a lease read's answer.
	Locks []string `json:"locks,omitempty"`
	// Mode is a lock acquire's mode (shared or exclusive; empty means exclusive) and a
	// status read's answer.
	Mode string `json:"mode,omitempty"`
	// Holders are a status read's grants (a shared lock's holders, a semaphore's permits).
	Holders []Holder `json:"holders,omitempty"`
	// Limit is a semaphore acquire's limit and a semaphore status read's answer.
	Limit int64 `json:"limit,omitempty"`
	// Value is a campaign's (proclaim's) value, and a grant's or an election status read's
	// published value; Elected is the status read's answer.
	Value   string `json:"value,omitempty"`
	Elected bool   `json:"elected,omitempty"`

	ChargeID string `json:"charge_id,omitempty"`
	Account  string `json:"account,omitempty"`
	Amount   int64  `json:"amount,omitempty"`
	Balance  int64  `json:"balance,omitempty"`

	// Names and Tokens are a lockset's locks and their tokens (asked for in name order;
	// the answer's, the release's); HeldNames the locks its lock_held or not_holder
	// answer named; MaxHoldMs an acquire's maximum hold, LockDelayMs its lock delay.
	Names       []string `json:"names,omitempty"`
	Tokens      []uint64 `json:"tokens,omitempty"`
	HeldNames   []string `json:"held_names,omitempty"`
	MaxHoldMs   int64    `json:"max_hold_ms,omitempty"`
	LockDelayMs int64    `json:"lock_delay_ms,omitempty"`
	// Fingerprint is a created lease's fingerprint (how history and deadlock answers name
	// it); Cycle is a deadlock answer's cycle.
	Fingerprint string      `json:"fingerprint,omitempty"`
	Cycle       []CycleStep `json:"cycle,omitempty"`
	// named is set on one lock's part of a lockset op (see splitSets): the answer named
	// that lock. The checkers set it; the workload never does.
	named bool

	Call    int64  `json:"call"`
	Return  int64  `json:"return"`
	Outcome string `json:"outcome"`
	Err     string `json:"err,omitempty"`
}

// String renders an op for counterexamples.
func (o Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s w%d %s", o.ID, o.Workload, o.Worker, o.Kind)
	if o.Lock != "" {
		fmt.Fprintf(&b, " lock=%s", o.Lock)
	}
	if len(o.Names) > 0 {
		fmt.Fprintf(&b, " names=%v", o.Names)
	}
	if len(o.Tokens) > 0 {
		fmt.Fprintf(&b, " tokens=%v", o.Tokens)
	}
	if o.MaxHoldMs > 0 {
		fmt.Fprintf(&b, " max_hold=%dms", o.MaxHoldMs)
	}
	if o.LockDelayMs > 0 {
		fmt.Fprintf(&b, " lock_delay=%dms", o.LockDelayMs)
	}
	if o.Owner != "" {
		fmt.Fprintf(&b, " owner=%s", o.Owner)
	}
	if o.ChargeID != "" {
		fmt.Fprintf(&b, " charge=%s", o.ChargeID)
	}
	if o.Token != 0 {
		fmt.Fprintf(&b, " token=%d", o.Token)
	}
	if o.Kind == KindStatus && o.Outcome == OutOK {
		fmt.Fprintf(&b, " held=%v by=%q", o.Held, o.StatusOwner)
	}
	fmt.Fprintf(&b, " [%s, %s] -> %s", ms(o.Call), ms(o.Return), o.Outcome)
	if o.Err != "" && o.Outcome != OutOK {
		e := o.Err
		if len(e) > 120 {
			e = e[:120] + "..."
		}
		fmt.Fprintf(&b, " (%s)", e)
	}
	return b.String()
}

// ms renders a clock reading in milliseconds.
func ms(t int64) string {
	if t == Never {
		return "never"
	}
	return fmt.Sprintf("%.3fms", float64(t)/1e6)
}

// Verdict is one checker's judgement.
type Verdict struct {
	// Checker names the checker.
	Checker string
	// Checked counts what it examined (operations, partitions, grants...).
	Checked int
	// Anomalies counts what it found wrong; zero means the check passed.
	Anomalies int
	// Kinds counts the anomalies by kind (for the negative controls).
	Kinds map[string]int
	// Examples are counterexamples, a few per kind.
	Examples []string
	// Files are artifacts written for a failure (visualizations).
	Files []string
}

func newVerdict(name string) *Verdict { return &Verdict{Checker: name, Kinds: map[string]int{}} }

// add records one anomaly of kind with its counterexample.
func (v *Verdict) add(kind, example string) {
	v.Anomalies++
	v.Kinds[kind]++
	if v.Kinds[kind] <= 3 {
		v.Examples = append(v.Examples, kind+": "+example)
	}
}

// OK reports whether the checker found nothing wrong.
func (v *Verdict) OK() bool { return v.Anomalies == 0 }

// String is the verdict's report: one line, then the counterexamples.
func (v *Verdict) String() string {
	var b strings.Builder
	if v.OK() {
		fmt.Fprintf(&b, "%-13s PASS  (%d checked)", v.Checker, v.Checked)
		return b.String()
	}
	var kinds []string
	for k, n := range v.Kinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "%-13s FAIL  %d anomalies (%s) in %d checked", v.Checker, v.Anomalies, strings.Join(kinds, ", "), v.Checked)
	for _, e := range v.Examples {
		fmt.Fprintf(&b, "\n    %s", e)
	}
	for _, f := range v.Files {
		fmt.Fprintf(&b, "\n    see %s", f)
	}
	return b.String()
}

// Merge adds another run's verdict of the same checker into v.
func (v *Verdict) Merge(o *Verdict) {
	if v.Kinds == nil {
		v.Kinds = map[string]int{}
	}
	v.Checked += o.Checked
	v.Anomalies += o.Anomalies
	for k, n := range o.Kinds {
		v.Kinds[k] += n
	}
	if len(v.Examples) < 12 {
		v.Examples = append(v.Examples, o.Examples...)
	}
	v.Files = append(v.Files, o.Files...)
}

// byLock groups ops by lock name, keeping order.
func byLock(ops []Op, keep func(Op) bool) map[string][]Op {
	out := map[string][]Op{}
	for _, o := range ops {
		if o.Lock != "" && keep(o) {
			out[o.Lock] = append(out[o.Lock], o)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
