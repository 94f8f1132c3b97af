package fsm

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

func applyRaw(f *FSM, index uint64, data []byte) *Result {
	return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(*Result)
}

func restoreFrom(f *FSM, snap []byte) error {
	return f.Restore(io.NopCloser(bytes.NewReader(snap)))
}

func TestFSM_UnknownCommandHalts(t *testing.T) {
	var events []Event
	f := New(func(e Event) { events = append(events, e) })
	f.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 5, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Name: "x"})
	before := f.SnapshotBytes()

	// A skippable unknown type is a tick.
	if r := applyRaw(f, 2, []byte{byte(FlagSkippable | 0x70), 10, 0xFF}); r.Status != StatusSkipped || f.Time() != 10 {
		t.Fatalf("skippable unknown: status %s time %d", r.Status, f.Time())
	}
	before = f.SnapshotBytes()
	events = nil
	r := applyRaw(f, 3, []byte{0x70, 20})
	if r.Status != StatusHalted || !errors.Is(r.Err, ErrUnknownCommand) || !errors.Is(r.Err, ErrHalted) {
		t.Fatalf("unknown non-skippable: %+v", r)
	}
	if err := f.Halted(); !errors.Is(err, ErrHalted) || !strings.Contains(err.Error(), "entry 3") {
		t.Fatalf("Halted() = %v", err)
	}
	// Later entries, a batch and a configuration change nothing; the halt is reported once.
	if r := f.ApplyCommand(4, &Command{Type: TypeTick, Now: 50_000}); r.Status != StatusHalted {
		t.Fatalf("after halt: %s", r.Status)
	}
	out := f.ApplyBatch([]*raft.Log{
		{Index: 5, Type: raft.LogCommand, Data: (&Command{Type: TypeRevoke, Now: 60_000, Lease: LeaseID{1}}).Encode(nil)},
		{Index: 6, Type: raft.LogConfiguration},
	})
	for _, o := range out {
		if o.(*Result).Status != StatusHalted {
			t.Fatalf("batch after halt: %+v", o)
		}
	}
	f.StoreConfiguration(7, raft.Configuration{})
	if !bytes.Equal(f.SnapshotBytes(), before) || f.AppliedIndex() != 2 || f.Time() != 10 {
		t.Fatalf("a halted FSM changed: applied %d time %d", f.AppliedIndex(), f.Time())
	}
	halts := 0
	for _, e := range events {
		switch e.Kind {
		case EventHalted:
			halts++
			if e.Index != 3 || !errors.Is(e.Err, ErrUnknownCommand) {
				t.Fatalf("halt event %+v", e)
			}
		case EventApplied:
			if e.Index != 2 {
				t.Fatalf("applied event %+v after the halt", e)
			}
		default:
			t.Fatalf("event %+v after the halt", e)
		}
	}
	if halts != 1 {
		t.Fatalf("%d halt events, want 1", halts)
	}
	if _, err := f.Snapshot(); !errors.Is(err, ErrHalted) {
		t.Fatalf("Snapshot of a halted FSM: %v", err)
	}
	if err := restoreFrom(f, before); !errors.Is(err, ErrHalted) {
		t.Fatalf("Restore into a halted FSM: %v", err)
	}
}

func TestFSM_CorruptEntriesStillSkipped(t *testing.T) {
	f := New(nil)
	for i, data := range [][]byte{nil, {byte(TypeSetVersion)}, {byte(TypeSetLimits), 0, 1}, {byte(TypeNodeVersion), 0, 1, 'n'}} {
		if r := applyRaw(f, uint64(i+1), data); r.Status != StatusInvalid || f.Halted() != nil {
			t.Fatalf("entry %x: %s halted %v", data, r.Status, f.Halted())
		}
	}
}

func TestFSM_VersionUpgrade(t *testing.T) {
	f := New(nil)
	if f.Version() != 1 || f.MaxVersion() != Version {
		t.Fatalf("new FSM at version %d, speaks %d", f.Version(), f.MaxVersion())
	}
	// At version 1, limits cannot be set: a version 1 node would halt on them, and a
	// version 1 snapshot cannot carry them.
	r := f.ApplyCommand(1, &Command{Type: TypeSetLimits, Now: 1, Limits: Limits{MaxLeases: 1}})
	if r.Status != StatusInvalid || !errors.Is(r.Err, ErrInactiveVersion) || f.Limits() != (Limits{}) {
		t.Fatalf("set_limits at version 1: %+v", r)
	}
	// NodeVersion is soft state at version 1: kept, but not in the snapshot.
	v1 := f.SnapshotBytes()
	if r := f.ApplyCommand(2, &Command{Type: TypeNodeVersion, Node: NodeInfo{ID: "n1"}, Version: 2}); r.Status != StatusOK {
		t.Fatalf("node_version: %+v", r)
	}
	if v, ok := f.NodeVersion("n1"); !ok || v != 2 {
		t.Fatalf("NodeVersion(n1) = %d %v", v, ok)
	}
	tick := New(nil)
	restoreFrom(tick, v1)
	tick.ApplyCommand(2, &Command{Type: TypeTick})
	if !bytes.Equal(f.SnapshotBytes(), tick.SnapshotBytes()) {
		t.Fatal("at version 1 a registered node version changed the snapshot")
	}
	g := New(nil)
	if err := restoreFrom(g, f.SnapshotBytes()); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.NodeVersion("n1"); ok {
		t.Fatal("node version survived a version 1 snapshot")
	}
	// A version this node does not speak is refused and changes nothing.
	if r := f.ApplyCommand(3, &Command{Type: TypeSetVersion, Now: 3, Version: Version + 1}); r.Status != StatusInvalid || !errors.Is(r.Err, ErrUnsupportedVersion) || f.Version() != 1 {
		t.Fatalf("set_version above Version: %+v, version %d", r, f.Version())
	}
	// Raise to 2: the soft table starts over, and snapshots switch to format 2.
	if r := f.ApplyCommand(4, &Command{Type: TypeSetVersion, Now: 4, Version: 2}); r.Status != StatusOK || f.Version() != 2 {
		t.Fatalf("set_version 2: %+v", r)
	}
	if _, ok := f.NodeVersion("n1"); ok {
		t.Fatal("the soft node-version table survived the move to version 2")
	}
	f.ApplyCommand(5, &Command{Type: TypeSetVersion, Now: 5, Version: 1}) // lower: no-op
	f.ApplyCommand(6, &Command{Type: TypeNodeVersion, Now: 6, Node: NodeInfo{ID: "n2"}, Version: 2})
	f.ApplyCommand(7, &Command{Type: TypeNodeVersion, Now: 6, Node: NodeInfo{ID: "n1"}, Version: 2})
	f.ApplyCommand(8, &Command{Type: TypeNodeVersion, Now: 6, Node: NodeInfo{ID: "n3"}, Version: 2})
	f.ApplyCommand(9, &Command{Type: TypeRemoveNode, Now: 6, Node: NodeInfo{ID: "n3"}})
	lim := Limits{MaxLeases: 3, MaxLocksPerLease: 2, MaxWaitersPerLock: 1}
	if r := f.ApplyCommand(10, &Command{Type: TypeSetLimits, Now: 7, Limits: lim}); r.Status != StatusOK || f.Limits() != lim {
		t.Fatalf("set_limits at version 2: %+v", r)
	}
	snap := f.SnapshotBytes()
	if !bytes.HasPrefix(snap, []byte("RLKS\x02")) || f.Version() != 2 {
		t.Fatalf("version %d snapshot header %q", f.Version(), snap[:5])
	}
	g = New(nil)
	if err := restoreFrom(g, snap); err != nil {
		t.Fatal(err)
	}
	if g.Version() != 2 || g.Limits() != lim || !bytes.Equal(g.SnapshotBytes(), snap) {
		t.Fatalf("restored v2: version %d limits %+v", g.Version(), g.Limits())
	}
	for id, want := range map[string]bool{"n1": true, "n2": true, "n3": false} {
		if _, ok := g.NodeVersion(id); ok != want {
			t.Fatalf("restored NodeVersion(%s) present=%v", id, ok)
		}
	}
	// Format 2 stays canonical: a state at version 1 in format 2 is refused.
	bad := append([]byte(nil), v1...)
	bad[4] = 2
	if err := restoreFrom(New(nil), bad); err == nil {
		t.Fatal("format 2 without its fields restored")
	}
}

func TestFSM_PretendOlder(t *testing.T) {
	old := NewWithOptions(Options{MaxVersion: 1})
	cur := New(nil)
	log := []Command{
		{Type: TypeAcquire, Now: 5, Lease: LeaseID{1}, NewLease: true, TTL: 10_000, Name: "x"},
		{Type: TypeNodeVersion, Now: 9, Node: NodeInfo{ID: "n1"}, Version: 2},
		{Type: TypeTick, Now: 12},
	}
	for i := range log {
		ro, rc := old.ApplyCommand(uint64(i+1), &log[i]), cur.ApplyCommand(uint64(i+1), &log[i])
		if log[i].Type == TypeNodeVersion && (ro.Status != StatusSkipped || rc.Status != StatusOK) {
			t.Fatalf("node_version: old %s, current %s", ro.Status, rc.Status)
		}
	}
	if _, ok := old.NodeVersion("n1"); ok || old.Time() != 12 {
		t.Fatal("a version 1 node stored a node version, or did not tick")
	}
	if !bytes.Equal(old.SnapshotBytes(), cur.SnapshotBytes()) {
		t.Fatal("version 1 and version 2 nodes at active version 1 differ")
	}
	v2 := New(nil)
	v2.ApplyCommand(1, &Command{Type: TypeSetVersion, Version: 2})
	err := restoreFrom(old, v2.SnapshotBytes())
	if !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), "snapshot format 2 is newer than this node supports (1): upgrade this node") {
		t.Fatalf("old node restoring a format 2 snapshot: %v", err)
	}
	for _, c := range []Command{{Type: TypeSetVersion, Now: 20, Version: 2}, {Type: TypeSetLimits, Now: 20}} {
		o := NewWithOptions(Options{MaxVersion: 1})
		if err := restoreFrom(o, cur.SnapshotBytes()); err != nil {
			t.Fatal(err)
		}
		if r := o.ApplyCommand(4, &c); r.Status != StatusHalted || !errors.Is(o.Halted(), ErrUnknownCommand) {
			t.Fatalf("old node fed %s: %+v", c.Type, r)
		}
		if !bytes.Equal(o.SnapshotBytes(), cur.SnapshotBytes()) {
			t.Fatalf("old node fed %s changed its state", c.Type)
		}
	}
}

func TestType_Since(t *testing.T) {
	for ty := Type(0); ty < 0x80; ty++ {
		want := uint64(0)
		switch {
		case ty >= TypeCreateLease && ty <= TypeRemoveNode:
			want = 1
		case ty >= TypeSetVersion && ty <= TypeElectionDequeue:
			want = 2
		case ty >= TypeAcquireEx && ty <= TypeSemAcquireEx:
			want = 3
		}
		if ty.Since() != want || (ty|FlagSkippable).Since() != want {
			t.Fatalf("%s since %d, want %d", ty, ty.Since(), want)
		}
		if want > Version {
			t.Fatalf("%s introduced after Version", ty)
		}
	}
	if TypeNodeVersion&FlagSkippable == 0 || TypeSetVersion&FlagSkippable != 0 || TypeSetLimits&FlagSkippable != 0 {
		t.Fatal("NodeVersion must be skippable, SetVersion and SetLimits must not")
	}
	for _, ty := range []Type{TypeACLBootstrap, TypeACLSetPolicy, TypeACLDeletePolicy, TypeACLSetToken, TypeACLDeleteToken} {
		if ty&FlagSkippable != 0 || ty.Since() != 2 {
			t.Fatalf("%s: ACL commands are not skippable and need version 2", ty)
		}
	}
	for _, ty := range []Type{TypeAcquireShared, TypeSemAcquire, TypeSemRelease, TypeSemDequeue, TypeCampaign, TypeResign, TypeElectionDequeue} {
		if ty&FlagSkippable != 0 || ty.Since() != 2 {
			t.Fatalf("%s: the primitives' commands are not skippable and need version 2", ty)
		}
	}
}

// versionCommands are the commands of protocol version 2, in an order that activates it,
// for fuzz seeds.
func versionCommands() []Command {
	cmds := []Command{
		{Type: TypeNodeVersion, Now: 1, Node: NodeInfo{ID: "n1"}, Version: 2},
		{Type: TypeSetVersion, Now: 2, Version: 2},
		{Type: TypeNodeVersion, Now: 3, Node: NodeInfo{ID: "n2"}, Version: 2},
		{Type: TypeNodeVersion, Now: 3, Node: NodeInfo{ID: "n1"}, Version: 3},
		{Type: TypeSetLimits, Now: 4, Limits: Limits{MaxLeases: 100, MaxLocksPerLease: 4, MaxWaitersPerLock: 9}},
	}
	cmds = append(cmds, aclCommands()...)
	return append(cmds, Command{Type: TypeTick, Now: 1 << 62})
}

func TestV3_CommandsRefusedAtVersion2(t *testing.T) {
	g := New(nil)
	g.s.version = 2
	index := uint64(0)
	for _, c := range []Command{
		{Type: TypeLockSet, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Names: []string{"a", "b"}},
		{Type: TypeAcquireEx, Lease: LeaseID{1}, NewLease: true, TTL: 1000, Name: "a", MaxHold: 1000},
		{Type: TypeLockSetRelease, Lease: LeaseID{1}, Names: []string{"a"}, Tokens: []uint64{1}},
	} {
		r := v3apply(t, g, &index, c, StatusInvalid)
		if !strings.Contains(r.Err.Error(), "needs version 3") {
			t.Fatalf("%s: %v", c.Type, r.Err)
		}
	}
	if g.LockCount() != 0 || g.LeaseCount() != 0 {
		t.Fatal("a refused command changed the state")
	}
}
