package checker

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// lockState is the model's state of one lock.
type lockState struct {
	// Holder is the owner label of the lease that holds the lock; "" when free.
	Holder string
	// Token is the holder's token; 0 when unknown (granted by an ambiguous acquire).
	Token uint64
	// Floor is the highest token granted so far: a new grant must exceed it.
	Floor uint64
	// EndAfter, for a grant with a maximum hold, is the earliest real time (on the
	// history's clock) at which the hold can end: the grant's call plus max_hold_ms. The
	// grant is made at or after its call, and cluster time never runs faster than real
	// time, so the end comes no earlier; it may come any time later (cluster time stands
	// still without a leader). Zero: no maximum hold.
	EndAfter int64
	// Delay is the holder's lock delay in ns (0: none): a grant that ends with its lease
	// (revoked or expired), not by a release or its maximum hold, leaves the lock to
	// nobody that long on cluster time.
	Delay int64
	// DelayUntil, on a lock freed by such an end, is the earliest real time at which
	// another lease can be granted it: the call of the op that ended the lease plus Delay,
	// less Margin (millisecond rounding). The end was applied at or after that call and
	// cluster time never runs faster than real time, so the delay ends no earlier; it may
	// end later. Zero: no delay ran.
	DelayUntil int64
}

// linInput is an operation on one lock (semaphore, election).
type linInput struct {
	Kind  string
	Owner string
	Token uint64 // release, resign, proclaim
	Mode  string // shared-lock acquire
	Limit int64  // semaphore acquire
	Value string // campaign, proclaim
	// Call and Return bound the operation's linearization point (Return is Never for an
	// ambiguous operation never closed); MaxHoldMs is a grant's maximum hold and
	// LockDelayMs its lock delay.
	Call, Return int64
	MaxHoldMs    int64
	LockDelayMs  int64
	// Named: a lockset's lock_held or not_holder answer named this lock.
	Named bool
}

// linOutput is its answer.
type linOutput struct {
	Outcome string
	Token   uint64   // grant, status
	Held    bool     // status (an election's: elected)
	Owner   string   // status
	Mode    string   // lock status
	Holders []Holder // lock and semaphore status
	Limit   int64    // semaphore status
	Value   string   // campaign grant, election status
}

func free(s lockState, floor uint64) lockState {
	if floor < s.Floor {
		floor = s.Floor
	}
	return lockState{Floor: floor}
}

// leaseEnded is s after its holder's lease ended (a revoke or an expiry called at
// in.Call): free, with the grant's lock delay running when it has one.
func leaseEnded(s lockState, in linInput) lockState {
	n := free(s, s.Token)
	if s.Delay > 0 {
		n.DelayUntil = in.Call + s.Delay - int64(Margin)
	}
	return n
}

// grantable reports whether a grant by in can be made on s, which nobody holds: no lock
// delay keeps it past in's return.
func grantable(s lockState, in linInput) bool { return in.Return >= s.DelayUntil }

// granted is the state after in's grant of token on s, which nobody held.
func granted(in linInput, token, floor uint64) lockState {
	return lockState{Holder: in.Owner, Token: token, Floor: floor, EndAfter: endAfter(in), Delay: in.LockDelayMs * int64(time.Millisecond)}
}

// withToken is s, held by its holder, with its token known to be token.
func withToken(s lockState, token uint64) lockState {
	s.Token, s.Floor = token, max(s.Floor, token)
	return s
}

// lockStep is the model: every state the lock can be in after the operation, given that it
// answered out. None means the answer is impossible from s. A grant with a maximum hold
// may have ended before the operation if the operation returned at or after the hold's
// earliest end; then the operation applies to the free lock (the old holder's release is
// not_holder, another lease may be granted with a higher token).
func lockStep(s lockState, in linInput, out linOutput) []lockState {
	next := lockStep1(s, in, out)
	if s.Holder != "" && s.EndAfter != 0 && in.Return >= s.EndAfter {
		next = append(next, lockStep1(free(s, s.Token), in, out)...)
	}
	return next
}

// endAfter is the earliest end of the maximum hold of a grant made by in (0: none).
func endAfter(in linInput) int64 {
	if in.MaxHoldMs <= 0 {
		return 0
	}
	return in.Call + in.MaxHoldMs*int64(time.Millisecond)
}

// lockStep1 is lockStep without the end of a maximum hold. A lockset is, on each of its
// locks, an exclusive acquire (its token that lock's), and its release a release; their
// refusals differ on the locks the answer did not name (see below).
func lockStep1(s lockState, in linInput, out linOutput) []lockState {
	mine := s.Holder != "" && s.Holder == in.Owner
	switch in.Kind {
	case KindLockSet:
		if out.Outcome == OutHeld {
			// The set took nothing. A lock the answer named was not free for the set:
			// held by another lease, or (free to this model) reserved for another
			// waiting set. A lock it did not name was free for it, and stays so.
			if in.Named {
				if !mine {
					return []lockState{s}
				}
				return nil
			}
			if s.Holder == "" || mine {
				return []lockState{s}
			}
			return nil
		}
		in.Kind = KindAcquire
		return lockStep1(s, in, out)
	case KindLockSetRelease:
		if out.Outcome == OutNotHolder && !in.Named {
			// Released nothing; this lock was held with that token and still is.
			if mine && (s.Token == in.Token || (s.Token == 0 && in.Token > s.Floor)) {
				return []lockState{withToken(s, in.Token)}
			}
			return nil
		}
		in.Kind = KindRelease
		return lockStep1(s, in, out)
	case KindAcquire:
		switch out.Outcome {
		case OutOK:
			if s.Holder == "" && out.Token > s.Floor && grantable(s, in) {
				return []lockState{granted(in, out.Token, out.Token)}
			}
			if mine && (s.Token == out.Token || (s.Token == 0 && out.Token > s.Floor)) {
				return []lockState{withToken(s, out.Token)}
			}
			return nil
		case OutHeld:
			if s.Holder != "" && !mine {
				return []lockState{s}
			}
			return nil
		case OutLeaseNotFound:
			// A lease that does not exist holds nothing.
			if mine {
				return nil
			}
			return []lockState{s}
		case OutAmbiguous:
			if s.Holder == "" && grantable(s, in) {
				return []lockState{s, granted(in, 0, s.Floor)}
			}
			return []lockState{s}
		}
	case KindRelease:
		matches := mine && (s.Token == in.Token || (s.Token == 0 && in.Token > s.Floor))
		switch out.Outcome {
		case OutOK:
			if matches {
				return []lockState{free(s, in.Token)}
			}
			return nil
		case OutNotHolder, OutLeaseNotFound:
			if mine && s.Token == in.Token {
				return nil
			}
			if mine && out.Outcome == OutLeaseNotFound {
				return nil
			}
			return []lockState{s}
		case OutAmbiguous:
			if matches {
				return []lockState{s, free(s, in.Token)}
			}
			return []lockState{s}
		}
	case KindRevoke:
		switch out.Outcome {
		case OutOK:
			if mine {
				return []lockState{leaseEnded(s, in)}
			}
			return []lockState{s}
		case OutLeaseNotFound:
			if mine {
				return nil
			}
			return []lockState{s}
		case OutAmbiguous:
			if mine {
				return []lockState{s, leaseEnded(s, in)}
			}
			return []lockState{s}
		}
	case KindExpire:
		// The lease may expire from in.Call on, or not before the history ends.
		if mine {
			return []lockState{s, leaseEnded(s, in)}
		}
		return []lockState{s}
	case KindStatus:
		if !out.Held {
			if s.Holder == "" {
				return []lockState{s}
			}
			return nil
		}
		if s.Holder == "" || s.Holder != out.Owner {
			return nil
		}
		if s.Token == out.Token {
			return []lockState{s}
		}
		if s.Token == 0 && out.Token > s.Floor {
			return []lockState{withToken(s, out.Token)}
		}
		return nil
	}
	// Anything else has no effect on the lock.
	return []lockState{s}
}

// LockModel is the porcupine model of one lock with fencing tokens.
var LockModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{lockState{}} },
	Step: untyped(lockStep),
	Hash: func(state interface{}) uint64 {
		s := state.(lockState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%s|%d|%d|%d|%d|%d", s.Holder, s.Token, s.Floor, s.EndAfter, s.Delay, s.DelayUntil)
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(linInput), output.(linOutput)
		switch in.Kind {
		case KindAcquire, KindLockSet:
			hold := ""
			if in.MaxHoldMs > 0 {
				hold = fmt.Sprintf(", max hold %dms", in.MaxHoldMs)
			}
			if in.LockDelayMs > 0 {
				hold += fmt.Sprintf(", lock delay %dms", in.LockDelayMs)
			}
			if out.Outcome == OutOK {
				return fmt.Sprintf("%s(%s%s) -> token %d", in.Kind, in.Owner, hold, out.Token)
			}
			return fmt.Sprintf("%s(%s%s) -> %s (named %v)", in.Kind, in.Owner, hold, out.Outcome, in.Named)
		case KindRelease, KindLockSetRelease:
			return fmt.Sprintf("%s(%s, %d) -> %s (named %v)", in.Kind, in.Owner, in.Token, out.Outcome, in.Named)
		case KindRevoke:
			return fmt.Sprintf("revoke(%s) -> %s", in.Owner, out.Outcome)
		case KindExpire:
			return fmt.Sprintf("expire(%s) from %s", in.Owner, ms(in.Call))
		case KindStatus:
			if out.Held {
				return fmt.Sprintf("status -> held by %s, token %d", out.Owner, out.Token)
			}
			return "status -> free"
		}
		return in.Kind
	},
	DescribeState: func(state interface{}) string {
		s := state.(lockState)
		if s.Holder == "" && s.DelayUntil != 0 {
			return fmt.Sprintf("free (floor %d), in a lock delay until %s or later", s.Floor, ms(s.DelayUntil))
		}
		if s.Holder == "" {
			return fmt.Sprintf("free (floor %d)", s.Floor)
		}
		tok := "?"
		if s.Token != 0 {
			tok = fmt.Sprint(s.Token)
		}
		if s.EndAfter != 0 {
			return fmt.Sprintf("%s holds token %s (floor %d, may end from %s)", s.Holder, tok, s.Floor, ms(s.EndAfter))
		}
		return fmt.Sprintf("%s holds token %s (floor %d)", s.Holder, tok, s.Floor)
	},
}

// LinOptions tunes CheckLinearizable.
type LinOptions struct {
	// Dir, when set, receives a porcupine visualization (HTML) of each failing lock.
	Dir string
	// Timeout bounds the check of one lock; zero means 60 s. A timeout fails the run.
	Timeout time.Duration
}

// LinHistory returns the porcupine operations of one lock: its acquire, release and status
// operations, and the revokes of every lease that may have held it, with ambiguous
// operations' return times closed at the next definite revoke of their lease. Status reads
// that failed are dropped (a read has no effect); so are definite failures (nothing was
// applied).
//
// Two reductions keep porcupine's search small without changing the verdict:
//   - Only leases that may have held the lock (an acquire on it answered ok or ambiguous)
//     contribute revokes: a revoke of any other lease is a no-op on this lock in every state
//     and can never be refused by the model.
//   - The ambiguous revokes of one lease before its next definite revoke are one operation
//     from the first call to that definite revoke's return: revoking is idempotent (a lease
//     is not used again once its revoke is in doubt), so "some of them took effect, each
//     within its window" and "the lease was revoked somewhere in the union" allow the same
//     states.
func LinHistory(lockOps []Op, all []Op) []porcupine.Operation {
	owners := map[string]bool{}
	for _, o := range lockOps {
		if o.Owner != "" && grants(o.Kind) && (o.Outcome == OutOK || o.Outcome == OutAmbiguous) {
			owners[o.Owner] = true
		}
	}
	// Definite revokes per owner, by call time.
	revokes := map[string][]Op{}
	var revokeOps []Op
	for _, o := range all {
		if o.Kind == KindRevoke && owners[o.Owner] {
			revokeOps = append(revokeOps, o)
			if o.Outcome == OutOK || o.Outcome == OutLeaseNotFound {
				revokes[o.Owner] = append(revokes[o.Owner], o)
			}
		}
	}
	for _, rs := range revokes {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Call < rs[j].Call })
	}
	closeAt := func(o Op) int64 {
		for _, r := range revokes[o.Owner] {
			if r.Call >= o.Call && r.ID != o.ID {
				return r.Return
			}
		}
		return Never
	}
	var hist []porcupine.Operation
	add := func(o Op) {
		switch o.Outcome {
		case OutUnavailable, OutFailed, OutWaitTimeout, OutDeadlock:
			return // definite, and nothing applied
		}
		if reads(o.Kind) && o.Outcome != OutOK {
			return
		}
		ret := o.Return
		if o.Outcome == OutAmbiguous {
			ret = closeAt(o)
		}
		hist = append(hist, porcupine.Operation{
			ClientId: o.Worker,
			Input: linInput{Kind: o.Kind, Owner: o.Owner, Token: inToken(o), Mode: o.Mode, Limit: o.Limit, Value: o.Value,
				Call: o.Call, Return: ret, MaxHoldMs: o.MaxHoldMs, LockDelayMs: o.LockDelayMs, Named: o.named},
			Call:     o.Call,
			Output:   linOutput{Outcome: o.Outcome, Token: outToken(o), Held: o.Held || o.Elected, Owner: o.StatusOwner, Holders: o.Holders, Limit: o.Limit, Value: o.Value, Mode: o.Mode},
			Return:   ret,
			Metadata: fmt.Sprintf("op #%d on n%d", o.ID, o.Node+1),
		})
	}
	for _, o := range lockOps {
		if o.Kind != KindRevoke {
			add(o)
		}
	}
	sort.Slice(revokeOps, func(i, j int) bool { return revokeOps[i].Call < revokeOps[j].Call })
	merged := map[string]bool{} // owner + close time of an ambiguous group already added
	for _, o := range revokeOps {
		if o.Outcome == OutAmbiguous {
			key := fmt.Sprintf("%s@%d", o.Owner, closeAt(o))
			if merged[key] {
				continue // the group's first revoke, added with the earliest call, covers it
			}
			merged[key] = true
		}
		add(o)
	}
	for _, e := range expireOps(lockOps, all) {
		hist = append(hist, porcupine.Operation{ClientId: -1, Input: linInput{Kind: KindExpire, Owner: e.Owner, Call: e.Call, Return: Never},
			Call: e.Call, Output: linOutput{}, Return: Never, Metadata: "the earliest expiry of " + e.Owner + "'s lease"})
	}
	return hist
}

// expireOps returns one KindExpire op for each lease that may have been granted one of
// lockOps' locks with a lock delay: its call is the earliest real time the lease can have
// expired, the end of its protected time (see CheckTiming), and it may take effect then or
// any time later. Only those leases get one: the workloads' other leases never expire in a
// round (their TTL is longer), so the model has no expiry for them.
func expireOps(lockOps, all []Op) []Op {
	var out []Op
	var ls map[string]*leaseInfo
	seen := map[string]bool{}
	for _, o := range lockOps {
		if o.LockDelayMs <= 0 || !grants(o.Kind) || (o.Outcome != OutOK && o.Outcome != OutAmbiguous) || seen[o.Owner] {
			continue
		}
		seen[o.Owner] = true
		if ls == nil {
			ls = leases(all)
		}
		if l := ls[o.Owner]; l != nil && l.ttl > 0 {
			out = append(out, Op{Kind: KindExpire, Owner: o.Owner, Call: l.protected(Never)})
		}
	}
	return out
}

// grants reports whether an operation of kind may give its lease a grant (a lock, a
// permit, a leadership).
func grants(kind string) bool {
	return kind == KindAcquire || kind == KindSemAcquire || kind == KindCampaign || kind == KindLockSet
}

// reads reports whether kind is a status read, which has no effect.
func reads(kind string) bool {
	return kind == KindStatus || kind == KindSemStatus || kind == KindElectStatus
}

// inToken is the token an operation presents: a release's, a resignation's, a proclaim's.
func inToken(o Op) uint64 {
	switch o.Kind {
	case KindRelease, KindSemRelease, KindResign, KindProclaim, KindLockSetRelease:
		return o.Token
	}
	return 0
}

// outToken is the token an answer carries: a grant's (a proclaim's keeps the
// leadership's), a status read's.
func outToken(o Op) uint64 {
	if grants(o.Kind) || reads(o.Kind) || o.Kind == KindProclaim {
		return o.Token
	}
	return 0
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// CheckLinearizable checks every lock of the lin workload (ops whose Workload is "lin").
func CheckLinearizable(ops []Op, opt LinOptions) *Verdict {
	return checkModel("linearizable", "lin", LockModel, ops, opt)
}

// checkModel checks, with model, every lock (semaphore, election) of the ops of workload,
// one porcupine history each, into a verdict named name.
func checkModel(name, workload string, nd porcupine.NondeterministicModel, ops []Op, opt LinOptions) *Verdict {
	v := newVerdict(name)
	if opt.Timeout == 0 {
		opt.Timeout = 60 * time.Second
	}
	locks := byLock(ops, func(o Op) bool { return o.Workload == workload })
	model := nd.ToModel()
	for _, lock := range sortedKeys(locks) {
		hist := LinHistory(locks[lock], ops)
		v.Checked += len(hist)
		res, info := porcupine.CheckOperationsVerbose(model, hist, opt.Timeout)
		if res == porcupine.Ok {
			continue
		}
		kind := "illegal"
		if res == porcupine.Unknown {
			kind = "timeout"
		}
		example := fmt.Sprintf("%s %s: porcupine says %s over %d operations", workload, lock, res, len(hist))
		if res == porcupine.Illegal {
			example += "; longest partial linearization ends before: " + firstUnlinearized(model, info, hist)
		}
		if opt.Dir != "" {
			path := filepath.Join(opt.Dir, workload+"-"+unsafeName.ReplaceAllString(lock, "_")+".html")
			if err := os.MkdirAll(opt.Dir, 0o755); err == nil {
				if err := porcupine.VisualizePath(model, info, path); err == nil {
					v.Files = append(v.Files, path)
				}
			}
		}
		v.add(kind, example)
	}
	return v
}

// firstUnlinearized describes the operations that the longest partial linearization could
// not place, earliest call first (a hint of where the history breaks).
func firstUnlinearized(model porcupine.Model, info porcupine.LinearizationInfo, hist []porcupine.Operation) string {
	parts := info.PartialLinearizations()
	if len(parts) == 0 {
		return "?"
	}
	best := []int{}
	for _, p := range parts[0] {
		if len(p) > len(best) {
			best = p
		}
	}
	placed := map[int]bool{}
	for _, i := range best {
		placed[i] = true
	}
	var rest []int
	for i := range hist {
		if !placed[i] {
			rest = append(rest, i)
		}
	}
	sort.Slice(rest, func(a, b int) bool { return hist[rest[a]].Call < hist[rest[b]].Call })
	out := ""
	for k, i := range rest {
		if k == 3 {
			break
		}
		o := hist[i]
		out += fmt.Sprintf("[%s %s at %s..%s] ", model.DescribeOperation(o.Input, o.Output), o.Metadata, ms(o.Call), ms(o.Return))
	}
	return out
}
