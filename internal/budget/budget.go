// Package budget records where the time of one commit goes, stage by stage, for the
// latency budget in docs/PERFORMANCE.md: the HTTP request read and decoded, the
// follower-to-leader forward, the proposal, the leader's log write, the replication round
// trip, the follower's log write, the commit, the state machine's apply and the answer.
//
// A Recorder is shared by every node of an in-process cluster (bench/budget): the HTTP
// layer opens a Trace per request, the cluster layer stamps the trace with the log index
// its command was given, and the log store and state machine wrappers record, per node,
// when each range of indexes was written and applied; the replication round trips come
// from hashicorp/raft's own timings. Report joins them after the run. Because one process
// holds all nodes, every timestamp is read from the same monotonic clock.
//
// Everything here is off unless a Recorder is configured: the hooks in cluster and
// transport test a nil pointer and do nothing else, so a server that does not measure pays
// one comparison per request and per log write. The package imports only the standard
// library, so any package may carry a hook.
package budget

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// maxEvents bounds each kind of record a Recorder keeps, so that a Recorder left on by
// mistake cannot grow without end; past it, new records are dropped and counted.
const maxEvents = 1 << 20

// Recorder collects traces and per-node store, apply and replication spans. It is safe for
// concurrent use. The zero value is not usable; call New.
type Recorder struct {
	nextID  atomic.Uint64
	dropped atomic.Uint64

	mu      sync.Mutex
	traces  []*Trace
	stores  []Span
	applies []Span
	rpcs    []RPC
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{} }

// Span is a range of log indexes that one node wrote (or applied) between Start and End.
type Span struct {
	Node        string
	First, Last uint64
	Start, End  time.Time
}

// RPC is one AppendEntries round trip from the leader to Peer, as timed by raft: sent at
// Start, answered at End.
type RPC struct {
	Peer       string
	Start, End time.Time
}

// Trace follows one HTTP request through a node. Its fields are set by the request's own
// goroutine and read only after Finish.
type Trace struct {
	// ID is unique within the Recorder; a forward carries it to the leader (Parent there).
	ID uint64
	// Parent is the ID of the follower's trace whose forward this request is, or 0.
	Parent uint64
	// Tag is a label the client sent with the request, to match its own timing.
	Tag string
	// Node is the ID of the node that served the request; Route its route pattern.
	Node, Route string
	// Start is when the handler began; Decoded when the body was read and decoded; End
	// when the answer had been written.
	Start, Decoded, End time.Time
	// Index is the log index of the entry the request's command became (0: none here,
	// e.g. a follower that forwarded); Returned is when raft answered its future. A
	// request that proposes more than once keeps its last proposal; an acquire that waits
	// keeps its queueing entry, so its answer stage holds the wait.
	Index    uint64
	Returned time.Time

	rec *Recorder
}

// Start opens a trace of a request served by node. It returns nil on a nil Recorder.
func (r *Recorder) Start(node string) *Trace {
	if r == nil {
		return nil
	}
	return &Trace{ID: r.nextID.Add(1), Node: node, Start: time.Now(), rec: r}
}

// MarkDecoded records that the request's body has been read and decoded.
func (t *Trace) MarkDecoded() {
	if t != nil {
		t.Decoded = time.Now()
	}
}

// Proposed records the log index the request's command was committed at, when raft
// answered it.
func (t *Trace) Proposed(index uint64) {
	if t != nil {
		t.Index, t.Returned = index, time.Now()
	}
}

// Finish closes the trace once the answer is written and hands it to its Recorder.
func (t *Trace) Finish(route string) {
	if t == nil {
		return
	}
	t.End, t.Route = time.Now(), route
	r := t.rec
	r.mu.Lock()
	if len(r.traces) < maxEvents {
		r.traces = append(r.traces, t)
	} else {
		r.dropped.Add(1)
	}
	r.mu.Unlock()
}

// Stored records that node wrote log indexes first..last to its log store (fsync
// included) between start and end.
func (r *Recorder) Stored(node string, first, last uint64, start, end time.Time) {
	if r == nil {
		return
	}
	r.add(&r.stores, Span{Node: node, First: first, Last: last, Start: start, End: end})
}

// Applied records that node's state machine applied indexes first..last between start
// and end.
func (r *Recorder) Applied(node string, first, last uint64, start, end time.Time) {
	if r == nil {
		return
	}
	r.add(&r.applies, Span{Node: node, First: first, Last: last, Start: start, End: end})
}

// Replicated records one AppendEntries round trip from the leader to peer.
func (r *Recorder) Replicated(peer string, start, end time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if len(r.rpcs) < maxEvents {
		r.rpcs = append(r.rpcs, RPC{Peer: peer, Start: start, End: end})
	} else {
		r.dropped.Add(1)
	}
	r.mu.Unlock()
}

func (r *Recorder) add(to *[]Span, s Span) {
	r.mu.Lock()
	if len(*to) < maxEvents {
		*to = append(*to, s)
	} else {
		r.dropped.Add(1)
	}
	r.mu.Unlock()
}

// Reset forgets everything recorded so far (a warm-up's records).
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.traces, r.stores, r.applies, r.rpcs = nil, nil, nil, nil
	r.mu.Unlock()
	r.dropped.Store(0)
}

// Dropped returns how many records were dropped because the Recorder was full.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

type ctxKey struct{}

// WithTrace returns ctx carrying t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the trace ctx carries, or nil.
func FromContext(ctx context.Context) *Trace {
	t, _ := ctx.Value(ctxKey{}).(*Trace)
	return t
}

// Traces returns the traces finished so far, in the order they finished.
func (r *Recorder) Traces() []*Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Trace(nil), r.traces...)
}
