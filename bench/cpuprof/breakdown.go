package cpuprof

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Groups are the rows a breakdown is summed into: each names one kind of work, so that a
// raftlock profile and an etcd profile can be read side by side although their libraries
// differ. The order is the order of the table.
var Groups = []string{
	GroupConsensus, GroupMessages, GroupLogStore, GroupFSM, GroupServer, GroupAPI, GroupEncoding,
	GroupTLS, GroupObserve, GroupGC, GroupAlloc, GroupSched, GroupFsync, GroupNet, GroupSysOther, GroupOther,
}

// The groups of Groups.
const (
	GroupConsensus = "consensus core (raft library)"
	GroupMessages  = "raft messages (peer transport, encoding)"
	GroupLogStore  = "log store (compute)"
	GroupFSM       = "state machine apply"
	GroupServer    = "server glue (proposals, waits, apply dispatch)"
	GroupAPI       = "client API server (HTTP or gRPC, handlers)"
	GroupEncoding  = "client API encoding (JSON or protobuf)"
	GroupTLS       = "TLS and crypto"
	GroupObserve   = "metrics and logging"
	GroupGC        = "runtime: GC (mark workers, sweep, barriers)"
	GroupAlloc     = "runtime: allocation (mallocgc, GC assist)"
	GroupSched     = "runtime: scheduler (switches, wake-ups, netpoll)"
	GroupFsync     = "syscalls: fsync, fdatasync"
	GroupNet       = "syscalls: network read, write"
	GroupSysOther  = "syscalls: file I/O and other"
	GroupOther     = "other"
)

// rule charges a function whose name starts with prefix to a component of a group.
type rule struct {
	prefix, group, component string
}

// raftlockRules name the libraries of a raftlock server; etcdRules those of etcd 3.4. The
// first rule whose prefix fits a frame wins, so narrower prefixes come first.
var raftlockRules = []rule{
	{"github.com/hashicorp/go-msgpack", GroupMessages, "raft: msgpack encoding (go-msgpack)"},
	{"github.com/hashicorp/raft.(*NetworkTransport)", GroupMessages, "raft: network transport"},
	{"github.com/hashicorp/raft.(*netPipeline)", GroupMessages, "raft: network transport"},
	{"github.com/hashicorp/raft.(*netConn)", GroupMessages, "raft: network transport"},
	{"github.com/hashicorp/raft.(*TCPStreamLayer)", GroupMessages, "raft: network transport"},
	{"github.com/hashicorp/raft.sendRPC", GroupMessages, "raft: network transport"},
	{"github.com/hashicorp/raft.decodeResponse", GroupMessages, "raft: network transport"},
	{"github.com/hashicorp/raft-boltdb", GroupLogStore, "log store: raft-boltdb + bbolt"},
	{"go.etcd.io/bbolt", GroupLogStore, "log store: raft-boltdb + bbolt"},
	{"github.com/boltdb/bolt", GroupLogStore, "log store: raft-boltdb + bbolt"},
	{"github.com/hashicorp/raft-wal", GroupLogStore, "log store: raft-wal"},
	{"github.com/benbjohnson/immutable", GroupLogStore, "log store: raft-wal"},
	{"github.com/hashicorp/raft.", GroupConsensus, "raft: hashicorp/raft (replication, commit, FSM dispatch)"},
	{"github.com/raftlock/raftlock/fsm.", GroupFSM, "fsm: raftlock/fsm"},
	{"github.com/raftlock/raftlock/leases.", GroupFSM, "fsm: raftlock/fsm"},
	{"github.com/raftlock/raftlock/fencing.", GroupFSM, "fsm: raftlock/fsm"},
	{"github.com/google/btree", GroupFSM, "fsm: raftlock/fsm"},
	{"github.com/raftlock/raftlock/cluster.", GroupServer, "raftlock/cluster (proposer, waits, leader)"},
	{"github.com/raftlock/raftlock/transport.", GroupAPI, "raftlock/transport (handlers, routing, checks)"},
	{"github.com/raftlock/raftlock/api.", GroupAPI, "raftlock/transport (handlers, routing, checks)"},
	{"net/http.", GroupAPI, "net/http (server, forward client)"},
	{"net/textproto.", GroupAPI, "net/http (server, forward client)"},
	{"mime.", GroupAPI, "net/http (server, forward client)"},
	{"net/url.", GroupAPI, "net/http (server, forward client)"},
	{"encoding/json.", GroupEncoding, "encoding/json"},
	{"github.com/hashicorp/go-hclog", GroupObserve, "logging (hclog)"},
	{"github.com/prometheus/", GroupObserve, "metrics (prometheus, go-metrics)"},
	{"github.com/hashicorp/go-metrics", GroupObserve, "metrics (prometheus, go-metrics)"},
	{"github.com/armon/go-metrics", GroupObserve, "metrics (prometheus, go-metrics)"},
}

var etcdRules = []rule{
	{"go.etcd.io/etcd/raft/raftpb", GroupMessages, "etcd: raftpb encoding"},
	{"go.etcd.io/etcd/etcdserver/api/rafthttp", GroupMessages, "etcd: rafthttp (peer transport)"},
	{"go.etcd.io/etcd/etcdserver/api/snap", GroupMessages, "etcd: rafthttp (peer transport)"},
	{"go.etcd.io/etcd/raft", GroupConsensus, "etcd: raft"},
	{"go.etcd.io/etcd/wal", GroupLogStore, "etcd: wal"},
	{"go.etcd.io/etcd/pkg/fileutil", GroupLogStore, "etcd: wal"},
	{"go.etcd.io/etcd/pkg/ioutil", GroupLogStore, "etcd: wal"},
	{"go.etcd.io/etcd/pkg/pbutil", GroupLogStore, "etcd: wal"},
	{"go.etcd.io/etcd/pkg/crc", GroupLogStore, "etcd: wal"},
	{"go.etcd.io/etcd/mvcc/mvccpb", GroupEncoding, "etcd: protobuf"},
	{"go.etcd.io/etcd/lease/leasepb", GroupEncoding, "etcd: protobuf"},
	{"go.etcd.io/etcd/etcdserver/etcdserverpb", GroupEncoding, "etcd: protobuf"},
	{"github.com/gogo/protobuf", GroupEncoding, "etcd: protobuf"},
	{"github.com/golang/protobuf", GroupEncoding, "etcd: protobuf"},
	{"google.golang.org/protobuf", GroupEncoding, "etcd: protobuf"},
	{"go.etcd.io/bbolt", GroupFSM, "etcd: mvcc, lease, bbolt backend"},
	{"go.etcd.io/etcd/mvcc", GroupFSM, "etcd: mvcc, lease, bbolt backend"},
	{"go.etcd.io/etcd/lease", GroupFSM, "etcd: mvcc, lease, bbolt backend"},
	{"go.etcd.io/etcd/auth", GroupFSM, "etcd: mvcc, lease, bbolt backend"},
	{"github.com/google/btree", GroupFSM, "etcd: mvcc, lease, bbolt backend"},
	{"go.etcd.io/etcd/etcdserver/api/v3rpc", GroupAPI, "etcd: v3rpc handlers"},
	{"go.etcd.io/etcd/etcdserver", GroupServer, "etcd: etcdserver (proposals, waits, apply)"},
	{"go.etcd.io/etcd/pkg/", GroupServer, "etcd: etcdserver (proposals, waits, apply)"},
	{"google.golang.org/grpc", GroupAPI, "gRPC"},
	{"github.com/grpc-ecosystem", GroupAPI, "gRPC"},
	{"golang.org/x/net/http2", GroupAPI, "HTTP/2 (x/net)"},
	{"net/http.", GroupAPI, "net/http"},
	{"go.uber.org/zap", GroupObserve, "logging (zap, capnslog)"},
	{"github.com/coreos/pkg/capnslog", GroupObserve, "logging (zap, capnslog)"},
	{"github.com/prometheus/", GroupObserve, "metrics (prometheus)"},
}

// sharedRules apply to both systems after their own.
var sharedRules = []rule{
	{"crypto/", GroupTLS, "crypto/tls"},
	{"vendor/golang.org/x/crypto", GroupTLS, "crypto/tls"},
}

// Frames of the runtime that say what kind of work a stack is, whatever called it.
var (
	gcRoots    = []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}
	allocFuncs = []string{"runtime.mallocgc"}
	gcFuncs    = []string{"runtime.wbBufFlush", "runtime.gcWriteBarrier", "runtime.bulkBarrierPreWrite", "runtime.gcStart", "runtime.gcMarkDone", "runtime.gcMarkTermination", "runtime.markroot", "runtime.gcDrain", "runtime.scanobject", "runtime.sweepone", "runtime.(*sweepLocked).sweep", "runtime.gcAssistAlloc", "runtime.stopTheWorld", "runtime.startTheWorld"}
	schedFuncs = []string{"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goexit0", "runtime.gosched_m", "runtime.wakep", "runtime.startm", "runtime.stopm", "runtime.ready", "runtime.goready", "runtime.futex", "runtime.notesleep", "runtime.notewakeup", "runtime.netpoll", "runtime.sysmon", "runtime.newproc", "runtime.mstart", "runtime.usleep", "runtime.osyield", "runtime.exitsyscall0", "runtime.handoffp", "runtime.retake", "runtime.resetspinning", "runtime.execute", "runtime.injectglist"}
	sysPrefix  = []string{"syscall.", "internal/runtime/syscall.", "runtime/internal/syscall.", "golang.org/x/sys/unix.", "runtime.entersyscall", "runtime.exitsyscall"}
	fsyncFuncs = []string{"os.(*File).Sync", "syscall.Fsync", "syscall.Fdatasync", "golang.org/x/sys/unix.Fdatasync", "golang.org/x/sys/unix.Fsync", "go.etcd.io/etcd/pkg/fileutil.Fdatasync", "go.etcd.io/etcd/pkg/fileutil.Fsync", "go.etcd.io/bbolt.fdatasync"}
)

// Breakdown is a profile's CPU summed by group and by component.
type Breakdown struct {
	// System is "raftlock" or "etcd": whose rules were applied.
	System string
	// Total is the CPU of every sample; Duration the profile's wall time.
	Total, Duration time.Duration
	// ByGroup and ByComponent hold CPU nanoseconds.
	ByGroup, ByComponent map[string]int64
	// Unmatched sums the samples of GroupOther by their leaf function's package, to show
	// what the rules miss.
	Unmatched map[string]int64
}

// Classify sums p by group and component with the rules of the system whose libraries it
// holds (etcd's when any frame is etcd's, raftlock's otherwise).
func Classify(p *Profile) *Breakdown {
	b := &Breakdown{System: "raftlock", Duration: p.Duration, ByGroup: map[string]int64{}, ByComponent: map[string]int64{}, Unmatched: map[string]int64{}}
	rules := raftlockRules
	if isEtcd(p) {
		b.System, rules = "etcd", etcdRules
	}
	rules = append(append([]rule{}, rules...), sharedRules...)
	for _, s := range p.Samples {
		g, c := classify(s.Stack, rules)
		b.ByGroup[g] += s.CPU
		b.ByComponent[c] += s.CPU
		b.Total += time.Duration(s.CPU)
		if g == GroupOther && len(s.Stack) > 0 {
			b.Unmatched[pkgOf(s.Stack[0])] += s.CPU
		}
	}
	return b
}

func isEtcd(p *Profile) bool {
	for _, s := range p.Samples {
		for _, f := range s.Stack {
			if strings.HasPrefix(trimVendor(f), "go.etcd.io/etcd/") {
				return true
			}
		}
	}
	return false
}

// classify charges one stack (leaf first): first to what the runtime or the kernel did
// (collection, allocation, scheduling, a system call), whoever asked for it; otherwise to
// the library of the innermost frame that a rule names.
func classify(stack []string, rules []rule) (group, component string) {
	switch {
	case anyFrame(stack, gcRoots, true):
		return GroupGC, GroupGC
	case anyFrame(stack, allocFuncs, true):
		return GroupAlloc, GroupAlloc
	case anyFrame(stack, gcFuncs, false):
		return GroupGC, GroupGC
	case anyFrame(stack, schedFuncs, true):
		return GroupSched, GroupSched
	case anyFrame(stack, sysPrefix, false):
		switch {
		case anyFrame(stack, fsyncFuncs, true):
			return GroupFsync, GroupFsync
		case anyFrame(stack, []string{"net.", "internal/poll.(*FD).Accept"}, false):
			return GroupNet, GroupNet
		}
		return GroupSysOther, GroupSysOther
	}
	for _, f := range stack {
		f = trimVendor(f)
		for _, r := range rules {
			if strings.HasPrefix(f, r.prefix) {
				return r.group, r.component
			}
		}
	}
	return GroupOther, GroupOther
}

// anyFrame reports whether a frame of stack is one of names (exact, or with a suffix such
// as ".func1" or a generic's brackets when exact is true) or starts with one (exact false).
func anyFrame(stack, names []string, exact bool) bool {
	for _, f := range stack {
		for _, n := range names {
			if !strings.HasPrefix(f, n) {
				continue
			}
			if !exact || len(f) == len(n) || f[len(n)] == '.' || f[len(n)] == '[' {
				return true
			}
		}
	}
	return false
}

// trimVendor drops a vendor directory's path from a function name, as a distribution's
// build of etcd may carry one.
func trimVendor(f string) string {
	if i := strings.LastIndex(f, "/vendor/"); i >= 0 {
		return f[i+len("/vendor/"):]
	}
	return f
}

// pkgOf is a function name's package path.
func pkgOf(f string) string {
	slash := strings.LastIndex(f, "/")
	if i := strings.Index(f[slash+1:], "."); i >= 0 {
		return f[:slash+1+i]
	}
	return f
}

// Column is one system's breakdown in a table, with the operations it served while
// profiled, from which the CPU per operation follows.
type Column struct {
	Label string
	B     *Breakdown
	// Rate is the workload's operations per second over the profiled window; 0 leaves
	// the per-operation figures out.
	Rate float64
}

// perOp is CPU nanoseconds in µs per operation over the profiled window.
func (c Column) perOp(ns int64) float64 {
	ops := c.Rate * c.B.Duration.Seconds()
	if ops <= 0 {
		return 0
	}
	return float64(ns) / 1e3 / ops
}

// Print writes the groups of every column side by side (share of the CPU and µs per
// operation), then each column's components.
func Print(w io.Writer, cols []Column) {
	// tabwriter aligns every column right; the names are padded here to read left-aligned.
	width := len("group")
	for _, g := range Groups {
		width = max(width, len(g))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "group")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s %%\t%s µs/op\t", c.Label, c.Label)
	}
	fmt.Fprintln(tw)
	row := func(name string, get func(Column) int64) {
		fmt.Fprintf(tw, "%-*s\t", width, name)
		for _, c := range cols {
			ns := get(c)
			fmt.Fprintf(tw, "%.1f\t%s\t", pct(ns, c.B.Total), usOp(c, ns))
		}
		fmt.Fprintln(tw)
	}
	for _, g := range Groups {
		seen := false
		for _, c := range cols {
			seen = seen || c.B.ByGroup[g] > 0
		}
		if seen {
			row(g, func(c Column) int64 { return c.B.ByGroup[g] })
		}
	}
	row("total", func(c Column) int64 { return int64(c.B.Total) })
	tw.Flush()
	for _, c := range cols {
		fmt.Fprintf(w, "\n%s (%s rules): %.2f s of CPU in %.1f s profiled (%.2f cores)", c.Label, c.B.System, c.B.Total.Seconds(), c.B.Duration.Seconds(), c.B.Total.Seconds()/max(c.B.Duration.Seconds(), 1e-9))
		if c.Rate > 0 {
			fmt.Fprintf(w, " at %.0f ops/s: %s µs of CPU per op", c.Rate, usOp(c, int64(c.B.Total)))
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		cw := 0
		for k := range c.B.ByComponent {
			cw = max(cw, len(k))
		}
		for _, kv := range sorted(c.B.ByComponent) {
			fmt.Fprintf(tw, "  %-*s\t%.1f%%\t%s µs/op\t\n", cw, kv.k, pct(kv.v, c.B.Total), usOp(c, kv.v))
		}
		tw.Flush()
		if len(c.B.Unmatched) > 0 {
			var parts []string
			for i, kv := range sorted(c.B.Unmatched) {
				if i == 6 {
					break
				}
				parts = append(parts, fmt.Sprintf("%s %.1f%%", kv.k, pct(kv.v, c.B.Total)))
			}
			fmt.Fprintf(w, "  other, by leaf package: %s\n", strings.Join(parts, ", "))
		}
	}
}

func pct(ns int64, total time.Duration) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * float64(ns) / float64(total)
}

func usOp(c Column, ns int64) string {
	if c.Rate <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", c.perOp(ns))
}

type kv struct {
	k string
	v int64
}

func sorted(m map[string]int64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].v > out[j].v || out[i].v == out[j].v && out[i].k < out[j].k })
	return out
}
