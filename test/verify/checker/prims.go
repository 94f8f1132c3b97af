package checker

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The models of the other primitives: shared locks, semaphores and elections,
// checked like the lock (one porcupine history per name, ambiguous operations closed at
// their lease's next definite revoke). Their workers use wait 0 only, so nobody ever
// queues, and every grant has a token of its own entry: a new grant's token exceeds every
// token granted before it (Floor).

// grantee is one grant in a model's state: its lease's owner label and its token, zero
// when an ambiguous request granted it and no read has shown the token yet; Min is then
// the floor when it was granted, which the token must exceed.
type grantee struct {
	Owner string
	Token uint64
	Min   uint64
}

// grantees is a set of grants in a comparable form (porcupine compares states with ==):
// "owner token min" entries sorted by owner, joined by "|".
type grantees string

func (g grantees) list() []grantee {
	if g == "" {
		return nil
	}
	var out []grantee
	for _, e := range strings.Split(string(g), "|") {
		f := strings.Fields(e)
		tok, _ := strconv.ParseUint(f[1], 10, 64)
		lo, _ := strconv.ParseUint(f[2], 10, 64)
		out = append(out, grantee{Owner: f[0], Token: tok, Min: lo})
	}
	return out
}

func makeGrantees(l []grantee) grantees {
	sort.Slice(l, func(i, j int) bool { return l[i].Owner < l[j].Owner })
	parts := make([]string, len(l))
	for i, g := range l {
		parts[i] = fmt.Sprintf("%s %d %d", g.Owner, g.Token, g.Min)
	}
	return grantees(strings.Join(parts, "|"))
}

func (g grantees) len() int { return len(g.list()) }

// get returns owner's grant.
func (g grantees) get(owner string) (grantee, bool) {
	for _, e := range g.list() {
		if e.Owner == owner {
			return e, true
		}
	}
	return grantee{}, false
}

func (g grantees) with(e grantee) grantees {
	return makeGrantees(append(g.without(e.Owner).list(), e))
}

func (g grantees) without(owner string) grantees {
	var out []grantee
	for _, e := range g.list() {
		if e.Owner != owner {
			out = append(out, e)
		}
	}
	return makeGrantees(out)
}

// matches reports whether a grant presented with token is e: its known token, or, when
// unknown, a token it could have had.
func (e grantee) matches(token uint64) bool {
	return e.Token == token || (e.Token == 0 && token > e.Min)
}

// seen returns g with the grants a status read showed, or false when the read's holders
// are not exactly g's (same owners, known tokens equal, unknown tokens possible). The
// unknown tokens the read revealed are filled in.
func (g grantees) seen(read []Holder) (grantees, bool) {
	have := g.list()
	if len(read) != len(have) {
		return g, false
	}
	byOwner := map[string]uint64{}
	for _, h := range read {
		byOwner[h.Owner] = h.Token
	}
	for i, e := range have {
		tok, ok := byOwner[e.Owner]
		if !ok || !e.matches(tok) {
			return g, false
		}
		have[i].Token = tok
	}
	return makeGrantees(have), true
}

// grantStep is the part every model shares: the outcomes of a release (or resignation)
// and of a revoke on a state whose grants are held, and the refusals of an acquire when
// the lease cannot hold anything: in these the primitives agree. It returns the next
// states, and false when the model must decide itself.
func grantStep(held grantees, in linInput, out linOutput, drop func(owner string, token uint64) interface{}, same interface{}) ([]interface{}, bool) {
	mine, isMine := held.get(in.Owner)
	switch in.Kind {
	case KindRelease, KindSemRelease, KindResign:
		matches := isMine && mine.matches(in.Token)
		switch out.Outcome {
		case OutOK:
			if matches {
				return []interface{}{drop(in.Owner, in.Token)}, true
			}
			return nil, true
		case OutNotHolder, OutLeaseNotFound:
			if isMine && (mine.Token == in.Token || out.Outcome == OutLeaseNotFound) {
				return nil, true
			}
			return []interface{}{same}, true
		case OutAmbiguous:
			if matches {
				return []interface{}{same, drop(in.Owner, in.Token)}, true
			}
			return []interface{}{same}, true
		}
	case KindRevoke:
		switch out.Outcome {
		case OutOK:
			if isMine {
				return []interface{}{drop(in.Owner, mine.Token)}, true
			}
			return []interface{}{same}, true
		case OutLeaseNotFound:
			if isMine {
				return nil, true
			}
			return []interface{}{same}, true
		case OutAmbiguous:
			if isMine {
				return []interface{}{same, drop(in.Owner, mine.Token)}, true
			}
			return []interface{}{same}, true
		}
	}
	if (grants(in.Kind) || in.Kind == KindProclaim) && out.Outcome == OutLeaseNotFound {
		// A lease that does not exist holds nothing.
		if isMine {
			return nil, true
		}
		return []interface{}{same}, true
	}
	return nil, false
}

// ndModel wraps a typed step function into a porcupine model with describers.
func ndModel[S comparable](init S, step func(S, linInput, linOutput) []S, describe func(S) string) porcupine.NondeterministicModel {
	return porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{init} },
		Step: untyped(step),
		Hash: func(state interface{}) uint64 {
			h := fnv.New64a()
			fmt.Fprintf(h, "%v", state)
			return h.Sum64()
		},
		DescribeOperation: describeOp,
		DescribeState:     func(state interface{}) string { return describe(state.(S)) },
	}
}

// untyped wraps a typed step function into porcupine's form.
func untyped[S any](step func(S, linInput, linOutput) []S) func(state, input, output interface{}) []interface{} {
	return func(state, input, output interface{}) []interface{} {
		next := step(state.(S), input.(linInput), output.(linOutput))
		out := make([]interface{}, len(next))
		for i, s := range next {
			out[i] = s
		}
		return out
	}
}

// describeOp renders an operation of any of the models.
func describeOp(input, output interface{}) string {
	in, out := input.(linInput), output.(linOutput)
	arg := in.Owner
	switch {
	case in.Mode != "":
		arg += ", " + in.Mode
	case in.Limit != 0:
		arg += fmt.Sprintf(", limit %d", in.Limit)
	}
	if in.Value != "" {
		arg += ", " + in.Value
	}
	if in.Token != 0 {
		arg += fmt.Sprintf(", %d", in.Token)
	}
	res := out.Outcome
	switch {
	case reads(in.Kind) && out.Held:
		res = fmt.Sprintf("held %s by %s %v (token %d, limit %d) %s", out.Mode, out.Owner, out.Holders, out.Token, out.Limit, out.Value)
	case reads(in.Kind):
		res = fmt.Sprintf("holders %v, limit %d", out.Holders, out.Limit)
	case grants(in.Kind) && out.Outcome == OutOK:
		res = fmt.Sprintf("token %d %s", out.Token, out.Value)
	}
	return fmt.Sprintf("%s(%s) -> %s", in.Kind, arg, res)
}

// rwState is a shared lock: its mode while held, its holders, and the highest token
// granted so far.
type rwState struct {
	Mode    string // "", "shared" or "exclusive"
	Holders grantees
	Floor   uint64
}

// exclusive reports whether an acquire's mode is exclusive (an absent mode is).
func exclusive(mode string) bool { return mode != "shared" }

func rwStep(s rwState, in linInput, out linOutput) []rwState {
	drop := func(owner string, token uint64) interface{} {
		n := rwState{Mode: s.Mode, Holders: s.Holders.without(owner), Floor: max(s.Floor, token)}
		if n.Holders == "" {
			n.Mode = ""
		}
		return n
	}
	if next, ok := grantStep(s.Holders, in, out, drop, s); ok {
		return typed[rwState](next)
	}
	mine, isMine := s.Holders.get(in.Owner)
	mode := "exclusive"
	if !exclusive(in.Mode) {
		mode = "shared"
	}
	switch in.Kind {
	case KindAcquire:
		grantable := s.Holders == "" || (mode == "shared" && s.Mode == "shared")
		switch out.Outcome {
		case OutOK:
			if isMine {
				if s.Mode == mode && mine.matches(out.Token) {
					return []rwState{{Mode: mode, Holders: s.Holders.with(grantee{Owner: in.Owner, Token: out.Token}), Floor: max(s.Floor, out.Token)}}
				}
				return nil
			}
			if grantable && out.Token > s.Floor {
				return []rwState{{Mode: mode, Holders: s.Holders.with(grantee{Owner: in.Owner, Token: out.Token}), Floor: out.Token}}
			}
			return nil
		case OutHeld:
			if !isMine && !grantable {
				return []rwState{s}
			}
			return nil
		case OutModeConflict:
			if isMine && s.Mode != mode {
				return []rwState{s}
			}
			return nil
		case OutAmbiguous:
			if !isMine && grantable {
				return []rwState{s, {Mode: mode, Holders: s.Holders.with(grantee{Owner: in.Owner, Min: s.Floor}), Floor: s.Floor}}
			}
			return []rwState{s}
		}
		return nil
	case KindStatus:
		if !out.Held {
			if s.Holders == "" {
				return []rwState{s}
			}
			return nil
		}
		if out.Mode != s.Mode {
			return nil
		}
		h, ok := s.Holders.seen(out.Holders)
		if !ok {
			return nil
		}
		return []rwState{{Mode: s.Mode, Holders: h, Floor: max(s.Floor, maxToken(out.Holders))}}
	}
	return []rwState{s}
}

func maxToken(hs []Holder) uint64 {
	var m uint64
	for _, h := range hs {
		m = max(m, h.Token)
	}
	return m
}

func typed[S any](in []interface{}) []S {
	out := make([]S, len(in))
	for i, s := range in {
		out[i] = s.(S)
	}
	return out
}

// RWLockModel is the porcupine model of one shared (read/write) lock with fencing tokens.
var RWLockModel = ndModel(rwState{}, rwStep, func(s rwState) string {
	if s.Holders == "" {
		return fmt.Sprintf("free (floor %d)", s.Floor)
	}
	return fmt.Sprintf("%s by %s (floor %d)", s.Mode, s.Holders, s.Floor)
})

// semState is a semaphore: its limit while in use (0 when not), the leases holding a
// permit, and the highest token granted so far.
type semState struct {
	Limit   int64
	Holders grantees
	Floor   uint64
}

func semStep(s semState, in linInput, out linOutput) []semState {
	drop := func(owner string, token uint64) interface{} {
		n := semState{Limit: s.Limit, Holders: s.Holders.without(owner), Floor: max(s.Floor, token)}
		if n.Holders == "" {
			n.Limit = 0 // not in use: the next acquirer sets the limit
		}
		return n
	}
	if next, ok := grantStep(s.Holders, in, out, drop, s); ok {
		return typed[semState](next)
	}
	mine, isMine := s.Holders.get(in.Owner)
	switch in.Kind {
	case KindSemAcquire:
		conflict := s.Limit != 0 && in.Limit != s.Limit
		limit := s.Limit
		if limit == 0 {
			limit = in.Limit
		}
		grantable := !conflict && int64(s.Holders.len()) < limit
		switch out.Outcome {
		case OutOK:
			if isMine {
				if !conflict && mine.matches(out.Token) {
					return []semState{{Limit: s.Limit, Holders: s.Holders.with(grantee{Owner: in.Owner, Token: out.Token}), Floor: max(s.Floor, out.Token)}}
				}
				return nil
			}
			if grantable && out.Token > s.Floor {
				return []semState{{Limit: limit, Holders: s.Holders.with(grantee{Owner: in.Owner, Token: out.Token}), Floor: out.Token}}
			}
			return nil
		case OutSemFull:
			if !isMine && !conflict && !grantable {
				return []semState{s}
			}
			return nil
		case OutLimitConflict:
			if conflict {
				return []semState{s}
			}
			return nil
		case OutAmbiguous:
			if !isMine && grantable {
				return []semState{s, {Limit: limit, Holders: s.Holders.with(grantee{Owner: in.Owner, Min: s.Floor}), Floor: s.Floor}}
			}
			return []semState{s}
		}
		return nil
	case KindSemStatus:
		if out.Limit != s.Limit {
			return nil
		}
		h, ok := s.Holders.seen(out.Holders)
		if !ok {
			return nil
		}
		return []semState{{Limit: s.Limit, Holders: h, Floor: max(s.Floor, maxToken(out.Holders))}}
	}
	return []semState{s}
}

// SemaphoreModel is the porcupine model of one semaphore with a token per permit.
var SemaphoreModel = ndModel(semState{}, semStep, func(s semState) string {
	if s.Holders == "" {
		return fmt.Sprintf("unused (floor %d)", s.Floor)
	}
	return fmt.Sprintf("limit %d, permits %s (floor %d)", s.Limit, s.Holders, s.Floor)
})

// electState is an election: its leader (one grant), the value it published, and the
// highest token granted so far. An ambiguous proclaim leaves two states, one per value.
type electState struct {
	Leader grantees
	Value  string
	Floor  uint64
}

func electStep(s electState, in linInput, out linOutput) []electState {
	drop := func(owner string, token uint64) interface{} {
		return electState{Leader: s.Leader.without(owner), Floor: max(s.Floor, token)}
	}
	if next, ok := grantStep(s.Leader, in, out, drop, s); ok {
		return typed[electState](next)
	}
	mine, isMine := s.Leader.get(in.Owner)
	free := s.Leader == ""
	switch in.Kind {
	case KindCampaign, KindProclaim:
		// A campaign by the leader's lease is a proclaim; a proclaim (with a token) by
		// anyone else, or with another token, is refused and never campaigns.
		leads := isMine && (in.Kind == KindCampaign || mine.matches(in.Token))
		switch out.Outcome {
		case OutOK:
			if out.Value != in.Value {
				return nil
			}
			if leads && mine.matches(out.Token) {
				return []electState{{Leader: s.Leader.with(grantee{Owner: in.Owner, Token: out.Token}), Value: in.Value, Floor: max(s.Floor, out.Token)}}
			}
			if in.Kind == KindCampaign && free && out.Token > s.Floor {
				return []electState{{Leader: makeGrantees([]grantee{{Owner: in.Owner, Token: out.Token}}), Value: in.Value, Floor: out.Token}}
			}
			return nil
		case OutElectionHeld:
			if in.Kind == KindCampaign && !free && !isMine {
				return []electState{s}
			}
			return nil
		case OutNotHolder:
			if in.Kind == KindProclaim && !leads {
				return []electState{s}
			}
			return nil
		case OutAmbiguous:
			switch {
			case leads:
				return []electState{s, {Leader: s.Leader, Value: in.Value, Floor: s.Floor}}
			case in.Kind == KindCampaign && free:
				return []electState{s, {Leader: makeGrantees([]grantee{{Owner: in.Owner, Min: s.Floor}}), Value: in.Value, Floor: s.Floor}}
			}
			return []electState{s}
		}
		return nil
	case KindElectStatus:
		if !out.Held {
			if free {
				return []electState{s}
			}
			return nil
		}
		if free || out.Value != s.Value {
			return nil
		}
		l, ok := s.Leader.seen([]Holder{{Owner: out.Owner, Token: out.Token}})
		if !ok {
			return nil
		}
		return []electState{{Leader: l, Value: s.Value, Floor: max(s.Floor, out.Token)}}
	}
	return []electState{s}
}

// ElectionModel is the porcupine model of one election with a token per leadership.
var ElectionModel = ndModel(electState{}, electStep, func(s electState) string {
	if s.Leader == "" {
		return fmt.Sprintf("no leader (floor %d)", s.Floor)
	}
	return fmt.Sprintf("%s leads with %q (floor %d)", s.Leader, s.Value, s.Floor)
})

// CheckSharedLocks checks every lock of the shared-lock workload ("rw").
func CheckSharedLocks(ops []Op, opt LinOptions) *Verdict {
	return checkModel("shared-locks", "rw", RWLockModel, ops, opt)
}

// CheckSemaphores checks every semaphore of the semaphore workload ("sem").
func CheckSemaphores(ops []Op, opt LinOptions) *Verdict {
	return checkModel("semaphores", "sem", SemaphoreModel, ops, opt)
}

// CheckElections checks every election of the election workload ("elect").
func CheckElections(ops []Op, opt LinOptions) *Verdict {
	return checkModel("elections", "elect", ElectionModel, ops, opt)
}
