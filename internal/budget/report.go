package budget

import (
	"math"
	"slices"
	"time"
)

// Stage is one step of a commit's path, in the order a request meets them.
type Stage int

// The stages of a commit. Each one's duration is measured between two timestamps, and
// consecutive stages share their boundaries, so that a commit's stages add up to the time
// the entry node spent on the request.
const (
	// HTTPIn: the handler began until the request body was read and decoded.
	HTTPIn Stage = iota
	// Forward: on a follower, from the decoded request to the relayed answer written,
	// minus the leader's own part (decoded to answered): the hop to the leader and back,
	// the leader reading the request, and the relay. Zero when the leader was asked.
	Forward
	// Propose: on the leader, from the decoded request to the start of its log write
	// (checks, command encoding, raft.Apply, raft's queue and leader loop).
	Propose
	// LeaderWrite: the leader's log store writing the entry, fsync included. The
	// followers receive the entry meanwhile (raftlock's raft sends a batch while the
	// leader writes it: third_party/raft/RAFTLOCK.md).
	LeaderWrite
	// QuorumWait: how long after the end of the leader's write the first follower's
	// AppendEntries answer arrived (zero when it arrived first): what the follower's path
	// (waking the replicator, the request on the wire, the follower's log write, the
	// answer) added to the commit beyond the leader's write. Its parts are in Budget.
	QuorumWait
	// Commit: from the quorum (the later of the leader's write ending and the first
	// follower's answer) to the leader's state machine starting to apply the entry
	// (commit index update, raft's leader loop and FSM goroutine).
	Commit
	// Apply: the leader's state machine applying the batch that holds the entry.
	Apply
	// Answer: from the end of the apply to the answer written (raft's future, the
	// proposer's wake-up, the HTTP handler encoding the JSON answer).
	Answer
	// NumStages counts the stages.
	NumStages
)

var stageNames = [NumStages]string{"HTTP in", "forward", "propose", "leader log write", "quorum wait",
	"commit", "apply", "answer"}

// String returns the stage's name as the budget table prints it.
func (s Stage) String() string {
	if s < 0 || s >= NumStages {
		return "unknown"
	}
	return stageNames[s]
}

// Budget is the stage-by-stage time of one request that became one commit.
type Budget struct {
	// Tag is the client's label of the request (header X-Raftlock-Budget-Tag).
	Tag string
	// Route is the request's route pattern on the node that received it.
	Route string
	// Forwarded says the request reached a follower, which forwarded it to the leader.
	Forwarded bool
	// Index is the entry's log index.
	Index uint64
	// Stages holds each stage's duration.
	Stages [NumStages]time.Duration
	// Total is the entry node's time on the request, handler start to answer written.
	Total time.Duration
	// Parts of Forward (zero unless Forwarded): ForwardOut from the follower's decoded
	// request to the leader's handler starting (the follower's checks, its HTTP client
	// sending, the leader's net/http reading the headers); LeaderIn, the leader reading and
	// decoding the body; ForwardBack from the leader's answer written to the follower's
	// relay written.
	ForwardOut, LeaderIn, ForwardBack time.Duration
	// The follower's path, which runs beside the leader's write: FollowerSend from the
	// leader's write starting to raft's replicator starting the AppendEntries request
	// that carried the entry; FollowerOut from there to the follower's write starting
	// (encoding and sending the request, the follower reading it and reaching its log
	// store); FollowerWrite, the follower's log write, fsync included; FollowerBack from
	// its end to the answer processed on the leader. They add up to the follower's path,
	// of which QuorumWait is the part that outlasted the leader's write.
	FollowerSend, FollowerOut, FollowerWrite, FollowerBack time.Duration
	// Parts of Answer: AnswerWake from the end of the apply to the proposer getting raft's
	// answer (raft's future, the node's waiting goroutine, the handler's goroutine);
	// AnswerWrite from there to the answer written (the result turned into JSON and
	// written). AnswerWake is zero when the trace has no Returned time.
	AnswerWake, AnswerWrite time.Duration
}

// key names one node's record of one log index.
type key struct {
	node  string
	index uint64
}

// Budgets joins the traces with the store, apply and replication records into one budget
// per request that committed an entry (the leader's trace holding an index, with the
// follower's trace in front of it when the request was forwarded). A request whose
// records are incomplete (a Recorder reset in the middle of it, a dropped record) is left
// out.
func (r *Recorder) Budgets() []Budget {
	r.mu.Lock()
	traces := slices.Clone(r.traces)
	stores := spanIndex(r.stores)
	applies := spanIndex(r.applies)
	var nodes []string
	for _, s := range r.stores {
		if !slices.Contains(nodes, s.Node) {
			nodes = append(nodes, s.Node)
		}
	}
	rpcs := map[string][]RPC{}
	for _, c := range r.rpcs {
		rpcs[c.Peer] = append(rpcs[c.Peer], c)
	}
	r.mu.Unlock()

	children := map[uint64]*Trace{}
	for _, t := range traces {
		if t.Parent != 0 {
			children[t.Parent] = t
		}
	}
	var out []Budget
	for _, e := range traces {
		if e.Parent != 0 {
			continue
		}
		l := e
		if e.Index == 0 {
			if l = children[e.ID]; l == nil || l.Index == 0 {
				continue
			}
		}
		c, ok := commitOf(e, l, nodes, stores, applies, rpcs)
		if ok {
			out = append(out, c)
		}
	}
	return out
}

// spanIndex maps every (node, index) to the latest span that holds it.
func spanIndex(spans []Span) map[key]Span {
	m := make(map[key]Span, len(spans))
	for _, s := range spans {
		for i := s.First; i <= s.Last && i >= s.First; i++ {
			m[key{s.Node, i}] = s
		}
	}
	return m
}

// commitOf computes the stages of the request e received, whose command the leader l
// (e itself when e is the leader's trace) committed.
func commitOf(e, l *Trace, nodes []string, stores, applies map[key]Span, rpcs map[string][]RPC) (Budget, bool) {
	c := Budget{Tag: e.Tag, Route: e.Route, Forwarded: e != l, Index: l.Index, Total: e.End.Sub(e.Start)}
	if e.Decoded.IsZero() || l.Decoded.IsZero() {
		return c, false
	}
	lw, ok := stores[key{l.Node, l.Index}]
	if !ok {
		return c, false
	}
	ap, ok := applies[key{l.Node, l.Index}]
	if !ok {
		return c, false
	}
	// The quorum: the follower whose answer to the AppendEntries that carried the entry
	// came back first. That request is the round trip that bracketed its write.
	var fw Span
	var ack, sent time.Time
	for _, n := range nodes {
		s, ok := stores[key{n, l.Index}]
		if n == l.Node || !ok {
			continue
		}
		for _, rpc := range rpcs[n] {
			if !rpc.Start.After(s.Start) && !rpc.End.Before(s.End) && (ack.IsZero() || rpc.End.Before(ack)) {
				ack, sent, fw = rpc.End, rpc.Start, s
			}
		}
	}
	if ack.IsZero() {
		return c, false
	}
	c.Stages[HTTPIn] = e.Decoded.Sub(e.Start)
	if c.Forwarded {
		c.Stages[Forward] = e.End.Sub(e.Decoded) - l.End.Sub(l.Decoded)
	}
	quorum := lw.End
	if ack.After(quorum) {
		quorum = ack
	}
	c.Stages[Propose] = lw.Start.Sub(l.Decoded)
	c.Stages[LeaderWrite] = lw.End.Sub(lw.Start)
	c.Stages[QuorumWait] = quorum.Sub(lw.End)
	c.Stages[Commit] = ap.Start.Sub(quorum)
	c.Stages[Apply] = ap.End.Sub(ap.Start)
	c.Stages[Answer] = l.End.Sub(ap.End)
	if !l.Returned.IsZero() {
		c.AnswerWake, c.AnswerWrite = l.Returned.Sub(ap.End), l.End.Sub(l.Returned)
	}
	if c.Forwarded {
		c.ForwardOut, c.LeaderIn, c.ForwardBack = l.Start.Sub(e.Decoded), l.Decoded.Sub(l.Start), e.End.Sub(l.End)
	}
	c.FollowerSend, c.FollowerOut, c.FollowerWrite, c.FollowerBack = sent.Sub(lw.Start), fw.Start.Sub(sent), fw.End.Sub(fw.Start), ack.Sub(fw.End)
	return c, true
}

// Summary is a set of durations' size and nearest-rank percentiles.
type Summary struct {
	N             int
	P50, P90, P99 time.Duration
}

// Summarize returns the percentiles of samples (sorted in place).
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	rank := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(samples)))) - 1
		return samples[max(0, min(i, len(samples)-1))]
	}
	return Summary{N: len(samples), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99)}
}
