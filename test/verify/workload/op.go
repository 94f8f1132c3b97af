package workload

import (
	"sync"
	"time"
)

// Kind is the kind of a recorded operation.
type Kind string

// Operation kinds.
const (
	CreateLease Kind = "create_lease"
	KeepAlive   Kind = "keepalive"
	ReadLease   Kind = "read_lease"
	Revoke      Kind = "revoke"
	Acquire     Kind = "acquire"
	Release     Kind = "release"
	Status      Kind = "status"
	Charge      Kind = "charge"
	// The other primitives. A shared lock uses Acquire, Release and Status with
	// a Mode; a proclaim is a Campaign with the leader's Token.
	// A lockset and its release.
	LockSet        Kind = "lockset"
	LockSetRelease Kind = "lockset_release"
	SemAcquire     Kind = "sem_acquire"
	SemRelease     Kind = "sem_release"
	SemStatus      Kind = "sem_status"
	Campaign       Kind = "campaign"
	Proclaim       Kind = "proclaim"
	Resign         Kind = "resign"
	ElectStatus    Kind = "elect_status"
	ReadAccount    Kind = "read_account"
	Pause          Kind = "pause"
)

// Outcome is how an operation ended.
type Outcome string

// Outcomes. Ambiguous operations may or may not have taken effect.
const (
	OK            Outcome = "ok"
	Held          Outcome = "lock_held"
	WaitTimeout   Outcome = "wait_timeout"
	NotHolder     Outcome = "not_holder"
	LeaseNotFound Outcome = "lease_not_found"
	Stale         Outcome = "stale_token"
	Ambiguous     Outcome = "ambiguous"
	Unavailable   Outcome = "unavailable" // definite: the request was never sent (refused)
	Failed        Outcome = "failed"      // definite: another 4xx answer
	// The refusals of the other primitives, named by their API codes.
	ModeConflict  Outcome = "mode_conflict"
	SemaphoreFull Outcome = "semaphore_full"
	LimitConflict Outcome = "limit_conflict"
	ElectionHeld  Outcome = "election_held"
	Deadlock      Outcome = "deadlock"
)

// Holder is one grant of a shared lock or one permit of a semaphore, as a status read
// shows it.
type Holder struct {
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
}

// Op is one recorded operation. Times are nanoseconds on the campaign's Clock.
type Op struct {
	ID       int    `json:"id"`
	Workload string `json:"workload"` // lin, bank, observer, probe
	Worker   int    `json:"worker"`
	Kind     Kind   `json:"kind"`
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

	ChargeID string `json:"charge_id,omitempty"`
	Account  string `json:"account,omitempty"`
	Amount   int64  `json:"amount,omitempty"`
	Balance  int64  `json:"balance,omitempty"`

	Call    int64   `json:"call"`
	Return  int64   `json:"return"`
	Outcome Outcome `json:"outcome"`
	Err     string  `json:"err,omitempty"`
}

// Clock is the campaign's one monotonic clock. A clock from NewClock counts from its own
// start and serves one process; a clock from NewSharedClock reads the machine's
// CLOCK_MONOTONIC, so that the records of worker processes and of the test share one
// time line.
type Clock struct {
	start  time.Time
	shared bool
	origin int64
}

// NewClock starts a clock at zero.
func NewClock() *Clock { return &Clock{start: time.Now()} }

// NewSharedClock returns a clock that reads MonotonicNow() - origin. Processes on one machine
// given the same origin read the same clock.
func NewSharedClock(origin int64) *Clock { return &Clock{shared: true, origin: origin} }

// Origin is the MonotonicNow reading a shared clock counts from (zero for a NewClock).
func (c *Clock) Origin() int64 { return c.origin }

// Now returns nanoseconds since the clock started (monotonic).
func (c *Clock) Now() int64 {
	if c.shared {
		return MonotonicNow() - c.origin
	}
	return int64(time.Since(c.start))
}

// Recorder collects operations from many goroutines.
type Recorder struct {
	Clock *Clock
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder returns an empty recorder on clock.
func NewRecorder(clock *Clock) *Recorder { return &Recorder{Clock: clock} }

// Add records op and returns its ID.
func (r *Recorder) Add(op Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.ops)
	r.ops = append(r.ops, op)
	return op.ID
}

// Ops returns a copy of everything recorded so far.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Len returns the number of recorded operations.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}
