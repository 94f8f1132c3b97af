package cpuprof

import (
	"bytes"
	"compress/gzip"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// encode builds a gzipped CPU profile whose samples are stacks (leaf first) charged cpu
// nanoseconds each, with inlined frames when a location holds several functions, the way
// runtime/pprof writes them.
func encode(t *testing.T, duration time.Duration, stacks [][][]string, cpu []int64) []byte {
	t.Helper()
	strs := []string{""}
	str := func(s string) uint64 {
		for i, x := range strs {
			if x == s {
				return uint64(i)
			}
		}
		strs = append(strs, s)
		return uint64(len(strs) - 1)
	}
	msg := func(fields ...func([]byte) []byte) []byte {
		var b []byte
		for _, f := range fields {
			b = f(b)
		}
		return b
	}
	varint := func(n protowire.Number, v uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
		}
	}
	bytesField := func(n protowire.Number, v []byte) func([]byte) []byte {
		return func(b []byte) []byte {
			return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
		}
	}
	packed := func(n protowire.Number, vs ...uint64) func([]byte) []byte {
		var p []byte
		for _, v := range vs {
			p = protowire.AppendVarint(p, v)
		}
		return bytesField(n, p)
	}
	var out []byte
	out = append(out, bytesField(fProfileSampleType, msg(varint(fValueTypeType, str("samples"))))(nil)...)
	out = append(out, bytesField(fProfileSampleType, msg(varint(fValueTypeType, str("cpu"))))(nil)...)
	funcs := map[string]uint64{}
	nextLoc := uint64(1)
	for i, st := range stacks {
		var locIDs []uint64
		for _, loc := range st {
			var lines []func([]byte) []byte
			for _, fn := range loc {
				id, ok := funcs[fn]
				if !ok {
					id = uint64(len(funcs) + 1)
					funcs[fn] = id
					out = append(out, bytesField(fProfileFunction, msg(varint(fFunctionID, id), varint(fFunctionName, str(fn))))(nil)...)
				}
				lines = append(lines, bytesField(fLocationLine, msg(varint(fLineFunctionID, id))))
			}
			out = append(out, bytesField(fProfileLocation, msg(append([]func([]byte) []byte{varint(fLocationID, nextLoc)}, lines...)...))(nil)...)
			locIDs = append(locIDs, nextLoc)
			nextLoc++
		}
		// the first sample unpacked, the others packed: profile.proto allows both
		if i == 0 {
			var fs []func([]byte) []byte
			for _, id := range locIDs {
				fs = append(fs, varint(fSampleLocationID, id))
			}
			fs = append(fs, varint(fSampleValue, 1), varint(fSampleValue, uint64(cpu[i])))
			out = append(out, bytesField(fProfileSample, msg(fs...))(nil)...)
		} else {
			out = append(out, bytesField(fProfileSample, msg(packed(fSampleLocationID, locIDs...), packed(fSampleValue, 1, uint64(cpu[i]))))(nil)...)
		}
	}
	for _, s := range strs {
		out = append(out, bytesField(fProfileStringTable, []byte(s))(nil)...)
	}
	out = append(out, varint(fProfileDurationNanos, uint64(duration))(nil)...)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(out)
	zw.Close()
	return z.Bytes()
}

func frames(fs ...string) [][]string {
	out := make([][]string, len(fs))
	for i, f := range fs {
		out[i] = []string{f}
	}
	return out
}

func TestClassifyRaftlockStacks(t *testing.T) {
	stacks := [][][]string{
		frames("runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"),
		frames("runtime.memclrNoHeapPointers", "runtime.mallocgc", "encoding/json.Unmarshal", "github.com/raftlock/raftlock/transport.decodeStrict"),
		frames("internal/runtime/syscall.Syscall6", "syscall.Syscall", "syscall.Fdatasync", "os.(*File).Sync", "go.etcd.io/bbolt.(*DB).Update", "github.com/hashicorp/raft-boltdb/v2.(*BoltStore).StoreLogs"),
		frames("internal/runtime/syscall.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "net.(*conn).Write", "bufio.(*Writer).Flush", "net/http.(*response).finishRequest"),
		frames("runtime.futex", "runtime.futexwakeup", "runtime.wakep", "runtime.ready", "github.com/hashicorp/raft.(*Raft).runLeader"),
		frames("reflect.Value.Field", "github.com/hashicorp/go-msgpack/v2/codec.(*Encoder).encode", "github.com/hashicorp/raft.(*NetworkTransport).genericRPC"),
		frames("bytes.(*Buffer).Write", "github.com/raftlock/raftlock/fsm.(*FSM).Apply", "github.com/hashicorp/raft.(*Raft).runFSM"),
		frames("sort.Search", "github.com/hashicorp/raft.(*Raft).processLogs"),
		frames("strings.Index", "some/unknown.Func"),
		// an inlined frame: the innermost function of the location is the transport's
		{{"github.com/raftlock/raftlock/transport.(*Server).checkNames", "net/http.HandlerFunc.ServeHTTP"}},
	}
	cpu := []int64{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000}
	p, err := Parse(encode(t, 2*time.Second, stacks, cpu))
	if err != nil {
		t.Fatal(err)
	}
	if p.Duration != 2*time.Second || p.Total() != 5500 || len(p.Samples) != 10 {
		t.Fatalf("parsed duration %v, total %v, %d samples; want 2s, 5.5µs, 10", p.Duration, p.Total(), len(p.Samples))
	}
	if got := p.Samples[9].Stack; len(got) != 2 || got[0] != "github.com/raftlock/raftlock/transport.(*Server).checkNames" {
		t.Fatalf("inlined location read as %q; want the inlined function first", got)
	}
	b := Classify(p)
	want := map[string]int64{GroupGC: 100, GroupAlloc: 200, GroupFsync: 300, GroupNet: 400, GroupSched: 500,
		GroupMessages: 600, GroupFSM: 700, GroupConsensus: 800, GroupOther: 900, GroupAPI: 1000}
	if b.System != "raftlock" {
		t.Errorf("system %q; want raftlock", b.System)
	}
	for g, ns := range want {
		if b.ByGroup[g] != ns {
			t.Errorf("group %q: %d ns; want %d (all: %v)", g, b.ByGroup[g], ns, b.ByGroup)
		}
	}
	if b.Unmatched["strings"] != 900 {
		t.Errorf("unmatched by leaf package: %v; want strings 900", b.Unmatched)
	}
	var out strings.Builder
	Print(&out, []Column{{Label: "raftlock", B: b, Rate: 1000}})
	// 5,500 ns over 2 s at 1,000 ops/s: 0.00275 µs per operation
	if !strings.Contains(out.String(), "total") || !strings.Contains(out.String(), "0.0 µs of CPU per op") {
		t.Errorf("table:\n%s", out.String())
	}
}

func TestClassifyEtcdStacks(t *testing.T) {
	stacks := [][][]string{
		frames("go.etcd.io/bbolt.(*Tx).Commit", "go.etcd.io/etcd/mvcc/backend.(*batchTx).commit"),
		frames("go.etcd.io/etcd/raft/raftpb.(*Entry).Unmarshal", "go.etcd.io/etcd/raft.(*raft).Step"),
		frames("go.etcd.io/etcd/wal.(*encoder).encode", "go.etcd.io/etcd/wal.(*WAL).Save"),
		frames("google.golang.org/grpc.(*Server).handleStream", "google.golang.org/grpc.(*Server).serveStreams.func1"),
	}
	p, err := Parse(encode(t, time.Second, stacks, []int64{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	b := Classify(p)
	if b.System != "etcd" {
		t.Fatalf("system %q; want etcd", b.System)
	}
	want := map[string]int64{GroupFSM: 1, GroupMessages: 2, GroupLogStore: 3, GroupAPI: 4}
	for g, ns := range want {
		if b.ByGroup[g] != ns {
			t.Errorf("group %q: %d ns; want %d (all: %v)", g, b.ByGroup[g], ns, b.ByGroup)
		}
	}
}

// TestParseRuntimeProfile reads what runtime/pprof writes: busy work profiled until at
// least one sample is taken, which finds this test's own function in the stacks.
func TestParseRuntimeProfile(t *testing.T) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			t.Skipf("CPU profiling unavailable: %v", err)
		}
		spin(200 * time.Millisecond)
		pprof.StopCPUProfile()
		p, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Samples {
			for _, f := range s.Stack {
				if strings.HasSuffix(f, "cpuprof.spin") {
					if p.Duration <= 0 || p.Total() <= 0 {
						t.Fatalf("duration %v, total %v; want both above zero", p.Duration, p.Total())
					}
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample in cpuprof.spin within 30 s of profiles (%d samples in the last)", len(p.Samples))
		}
	}
}

var sink uint64

func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			sink = sink*31 + uint64(i)
		}
	}
}
