package fsm_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
)

// These benchmarks measure the state machine alone: decode plus apply of one committed
// entry, the command codec, and snapshots. `make test` runs each once (-benchtime=1x) so
// they cannot rot; docs/PERFORMANCE.md quotes a real run.

func lease(i int) fsm.LeaseID {
	var id fsm.LeaseID
	id[0], id[1], id[2], id[15] = byte(i), byte(i>>8), byte(i>>16), 0xbe
	return id
}

func mustApply(b *testing.B, f *fsm.FSM, index uint64, c *fsm.Command, want fsm.Status) *fsm.Result {
	r := f.ApplyCommand(index, c)
	if r.Status != want {
		b.Fatalf("index %d %s: status %s, want %s", index, c.Type, r.Status, want)
	}
	return r
}

// BenchmarkApplyAcquireRelease is one uncontended cycle as the state machine sees it: an
// acquire entry and a release entry, each decoded and applied.
func BenchmarkApplyAcquireRelease(b *testing.B) {
	f := fsm.New(nil)
	mustApply(b, f, 1, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(1), TTL: 10_000}, fsm.StatusOK)
	benchAcquireRelease(b, f, 1, true)
}

// benchAcquireRelease times cycles of lease(1), which exists in f at index, on lock
// "accounts/A": an acquire and a release entry each. With snapshots it also pays for
// snapshots as a node does (snapshotEvery).
func benchAcquireRelease(b *testing.B, f *fsm.FSM, index uint64, snapshots bool) {
	acq := fsm.Command{Type: fsm.TypeAcquire, Lease: lease(1), Name: "accounts/A", Wait: 30_000, Owner: "bench"}
	rel := fsm.Command{Type: fsm.TypeRelease, Lease: lease(1), Name: "accounts/A"}
	b.ReportAllocs()
	for b.Loop() {
		index++
		acq.Now = int64(index)
		tok := mustApply(b, f, index, &acq, fsm.StatusOK).Token
		index++
		rel.Now, rel.Token = int64(index), tok
		mustApply(b, f, index, &rel, fsm.StatusOK)
		if snapshots {
			snapshotEvery(b, f, index)
		}
	}
}

// snapshotEvery takes and persists a snapshot every 8,192 entries, as raft does at its
// default threshold, so that a benchmark pays for snapshots as a node does (and the
// entries the snapshot shadow keeps stay bounded, as they are on a node).
func snapshotEvery(b *testing.B, f *fsm.FSM, index uint64) {
	if index%8192 > 1 { // every benchmark step applies at most two entries
		return
	}
	snap, err := f.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	if err := snap.Persist(discardSink{}); err != nil {
		b.Fatal(err)
	}
	snap.Release()
}

// discardSink is a raft.SnapshotSink that drops the bytes.
type discardSink struct{}

func (discardSink) Write(p []byte) (int, error) { return len(p), nil }
func (discardSink) Close() error                { return nil }
func (discardSink) Cancel() error               { return nil }
func (discardSink) ID() string                  { return "discard" }

// BenchmarkApplyHandover is one contended handover: the holder's release hands the lock
// to the first of 15 waiters in the same entry, and the old holder queues again.
func BenchmarkApplyHandover(b *testing.B) {
	const clients = 16
	f := fsm.New(func(fsm.Event) {}) // an observer, as a node has, so events are recorded
	index := uint64(0)
	for i := 0; i < clients; i++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(i), TTL: 10_000}, fsm.StatusOK)
	}
	acq := func(i int) *fsm.Command {
		return &fsm.Command{Type: fsm.TypeAcquire, Now: int64(index), Lease: lease(i), Name: "hot", Wait: 300_000}
	}
	index++
	tok := mustApply(b, f, index, acq(0), fsm.StatusOK).Token
	for i := 1; i < clients; i++ {
		index++
		mustApply(b, f, index, acq(i), fsm.StatusQueued)
	}
	holder := 0
	b.ReportAllocs()
	for b.Loop() {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeRelease, Now: int64(index), Lease: lease(holder), Name: "hot", Token: tok}, fsm.StatusOK)
		v := f.Lock("hot")
		index++
		mustApply(b, f, index, acq(holder), fsm.StatusQueued)
		holder = int(v.Holder[0]) | int(v.Holder[1])<<8
		tok = v.Token
		snapshotEvery(b, f, index)
	}
}

// BenchmarkApplyRenew10k applies one batched keepalive entry renewing 10,000 leases.
func BenchmarkApplyRenew10k(b *testing.B) {
	const n = 10_000
	f := fsm.New(nil)
	renew := fsm.Command{Type: fsm.TypeRenew}
	for i := 0; i < n; i++ {
		mustApply(b, f, uint64(i+1), &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(i), TTL: 3_600_000}, fsm.StatusOK)
		renew.Leases = append(renew.Leases, lease(i))
	}
	index := uint64(n)
	b.ReportAllocs()
	for b.Loop() {
		index++
		renew.Now = int64(index)
		mustApply(b, f, index, &renew, fsm.StatusOK)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/lease")
}

// BenchmarkApplyBatch64 applies 64 acquires (64 leases, 64 locks) through ApplyBatch,
// the path raft takes with BatchApplyCh, then 64 releases.
func BenchmarkApplyBatch64(b *testing.B) {
	const n = 64
	f := fsm.New(func(fsm.Event) {})
	index := uint64(0)
	for i := 0; i < n; i++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(i), TTL: 10_000}, fsm.StatusOK)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench/parallel/%d", i)
	}
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = &raft.Log{Type: raft.LogCommand}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range logs {
			index++
			c := fsm.Command{Type: fsm.TypeAcquire, Now: int64(index), Lease: lease(i), Name: names[i]}
			logs[i].Index, logs[i].Data = index, c.Encode(logs[i].Data[:0])
		}
		res := f.ApplyBatch(logs)
		for i := range logs {
			index++
			c := fsm.Command{Type: fsm.TypeRelease, Now: int64(index), Lease: lease(i), Name: names[i], Token: res[i].(*fsm.Result).Token}
			logs[i].Index, logs[i].Data = index, c.Encode(logs[i].Data[:0])
		}
		for _, r := range f.ApplyBatch(logs) {
			if r.(*fsm.Result).Status != fsm.StatusOK {
				b.Fatalf("release: %s", r.(*fsm.Result).Status)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*n), "ns/entry")
}

var acquireCmd = fsm.Command{Type: fsm.TypeAcquire, Now: 123_456_789, Lease: lease(7), NewLease: true, TTL: 10_000,
	Name: "accounts/A", Wait: 30_000, Owner: "worker-17"}

// BenchmarkEncodeAcquire encodes an acquire into a reused buffer.
func BenchmarkEncodeAcquire(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = acquireCmd.Encode(buf[:0])
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}

// BenchmarkDecodeAcquire decodes an acquire.
func BenchmarkDecodeAcquire(b *testing.B) {
	data := acquireCmd.Encode(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fsm.DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeDecodeAcquire is the round trip, with a fresh buffer as the node does.
func BenchmarkEncodeDecodeAcquire(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fsm.DecodeCommand(acquireCmd.Encode(nil)); err != nil {
			b.Fatal(err)
		}
	}
}

// withLeases returns a state machine with n leases, lease(0) to lease(n-1), of ttl, and
// the index of the last entry applied.
func withLeases(b *testing.B, n int, ttl int64) (*fsm.FSM, uint64) {
	f := fsm.New(nil)
	index := uint64(0)
	for i := 0; i < n; i++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeCreateLease, Now: 1, Lease: lease(i), TTL: ttl}, fsm.StatusOK)
	}
	return f, index
}

// sized keeps the state machines that build makes, one per size, for the benchmarks
// that share them: building one of a million locks takes longer than they do.
type sized struct {
	mu    sync.Mutex
	built map[int]*fsm.FSM
	build func(b *testing.B, n int) *fsm.FSM
}

// get returns the state machine of size n, building it the first time.
func (s *sized) get(b *testing.B, n int) *fsm.FSM {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.built[n]; f != nil {
		return f
	}
	if s.built == nil {
		s.built = map[int]*fsm.FSM{}
	}
	f := s.build(b, n)
	s.built[n] = f
	return f
}

// heldStates hold (once per size) a state machine holding n locks, by 64 leases, the
// shape of the scale workload of cmd/raftlock-bench.
var heldStates = sized{build: func(b *testing.B, n int) *fsm.FSM {
	const leases = 64
	f, index := withLeases(b, leases, 60_000)
	for i := 0; i < n; i++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeAcquire, Now: 2, Lease: lease(i % leases), Name: fmt.Sprintf("bench/scale/%07d", i)}, fsm.StatusOK)
	}
	return f
}}

func held(b *testing.B, n int) *fsm.FSM { return heldStates.get(b, n) }

// snapshotSizes are the state sizes of the snapshot benchmarks. 1,000,000 locks (the
// scale raftlock is sized for) takes about 2 s per iteration and 1 GiB of memory, so it runs
// only when RAFTLOCK_BENCH_LARGE=1: a fixed -benchtime such as 2000x must stay cheap.
func snapshotSizes() []int {
	if os.Getenv("RAFTLOCK_BENCH_LARGE") == "1" {
		return []int{10_000, 100_000, 1_000_000}
	}
	return []int{10_000, 100_000}
}

// BenchmarkSnapshot encodes the whole state (what raft's Snapshot call does while Apply
// waits).
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range snapshotSizes() {
		b.Run(fmt.Sprintf("locks=%d", n), func(b *testing.B) {
			f := held(b, n)
			var size int
			b.ResetTimer()
			for b.Loop() {
				size = len(f.SnapshotBytes())
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(size)/float64(n), "bytes/lock")
		})
	}
}

// BenchmarkRestore decodes and checks a snapshot (what a restarting node does first).
func BenchmarkRestore(b *testing.B) {
	for _, n := range snapshotSizes() {
		b.Run(fmt.Sprintf("locks=%d", n), func(b *testing.B) {
			data := held(b, n).SnapshotBytes()
			b.ResetTimer()
			for b.Loop() {
				if err := fsm.New(nil).Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLeaseCreator_BigLease reads the creator of a lease holding 8,000 locks (1/64 of
// the 512,000 held), the read the API's lease gate makes for every request that names a
// lease: LeaseCreator in constant time, and Lease, which lists and sorts the lease's
// locks, for comparison (what the gate called before).
func BenchmarkLeaseCreator_BigLease(b *testing.B) {
	f := held(b, 512_000)
	id := lease(7)
	b.Run("LeaseCreator", func(b *testing.B) {
		for b.Loop() {
			if _, ok := f.LeaseCreator(id); !ok {
				b.Fatal("the lease is gone")
			}
		}
	})
	b.Run("Lease", func(b *testing.B) {
		for b.Loop() {
			if _, ok := f.Lease(id); !ok {
				b.Fatal("the lease is gone")
			}
		}
	})
}
