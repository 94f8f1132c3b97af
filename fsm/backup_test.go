package fsm

import (
	"bytes"
	"errors"
	"testing"
)

// backupState builds a state at version 2 with limits, registered nodes and node
// versions, leases, held locks and queued waiters; it returns the FSM and its last index.
func backupState(t *testing.T) (*FSM, uint64) {
	t.Helper()
	f := New(nil)
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	lim := Limits{MaxLeases: 100, MaxLocksPerLease: 10, MaxWaitersPerLock: 5}
	cmds := []Command{
		{Type: TypeRegisterNode, Now: 10, Node: NodeInfo{ID: "n1", RaftAddr: "10.0.0.1:8001", HTTPAddr: "10.0.0.1:7001"}},
		{Type: TypeRegisterNode, Now: 10, Node: NodeInfo{ID: "n2", RaftAddr: "10.0.0.2:8001", HTTPAddr: "10.0.0.2:7001"}},
		{Type: TypeSetVersion, Now: 20, Version: 2},
		{Type: TypeNodeVersion, Now: 20, Node: NodeInfo{ID: "n1"}, Version: 2},
		{Type: TypeSetLimits, Now: 30, Limits: lim},
		{Type: TypeAcquire, Now: 40, Lease: a, NewLease: true, TTL: 60_000, Name: "accounts/A", Owner: "w1"},
		{Type: TypeAcquire, Now: 50, Lease: b, NewLease: true, TTL: 60_000, Name: "accounts/B", Owner: "w2"},
		{Type: TypeAcquire, Now: 60, Lease: c, NewLease: true, TTL: 60_000, Name: "accounts/A", Wait: 30_000, Owner: "w3"},
		{Type: TypeAcquire, Now: 70, Lease: a, Name: "accounts/C"},
		{Type: TypeRelease, Now: 80, Lease: a, Name: "accounts/C", Token: 9},
		{Type: TypeTick, Now: 1234},
	}
	for i := range cmds {
		if r := f.ApplyCommand(uint64(i+1), &cmds[i]); r.Status != StatusOK && r.Status != StatusQueued {
			t.Fatalf("entry %d %s: %s %v", i+1, cmds[i].Type, r.Status, r.Err)
		}
	}
	return f, uint64(len(cmds))
}

func TestPrepareRestore_DropsHoldersKeepsTimeVersionLimits(t *testing.T) {
	f, last := backupState(t)
	data := f.SnapshotBytes()
	before, err := InspectSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if before.Leases != 3 || before.Locks != 2 || before.Waiters != 1 || before.Nodes != 2 || before.NodeVersions != 1 || before.Index != last {
		t.Fatalf("backup summary %+v", before)
	}

	const newIndex = 1_000_000_011
	out, err := PrepareRestore(data, newIndex)
	if err != nil {
		t.Fatal(err)
	}
	got, err := InspectSnapshot(out)
	if err != nil {
		t.Fatalf("prepared state does not inspect: %v", err)
	}
	want := SnapshotSummary{Index: newIndex, FreedIndex: newIndex, ClusterTimeMs: 1234, ProtocolVersion: 2, Format: 2,
		Limits: Limits{MaxLeases: 100, MaxLocksPerLease: 10, MaxWaitersPerLock: 5}}
	if got != want {
		t.Fatalf("prepared summary\n got %+v\nwant %+v", got, want)
	}

	// A node restores it, byte for byte, and its free locks report the new index.
	g := New(nil)
	if err := restoreFrom(g, out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g.SnapshotBytes(), out) {
		t.Fatal("prepared state is not canonical: restore then encode differs")
	}
	if v := g.Lock("accounts/A"); v.Held || v.ModifyIndex != newIndex {
		t.Fatalf("accounts/A after restore: %+v", v)
	}
	if g.AppliedIndex() != newIndex || g.Time() != 1234 || g.Version() != 2 {
		t.Fatalf("restored applied %d time %d version %d", g.AppliedIndex(), g.Time(), g.Version())
	}
	// The first grant after the restore is a new entry, above the restore index.
	r := g.ApplyCommand(newIndex+1, &Command{Type: TypeAcquire, Now: 2000, Lease: LeaseID{1}, NewLease: true, TTL: 60_000, Name: "accounts/A"})
	if r.Status != StatusOK || r.Token != newIndex+1 {
		t.Fatalf("first grant after restore: %+v", r)
	}
}

func TestPrepareRestore_IndexBounds(t *testing.T) {
	f, last := backupState(t)
	data := f.SnapshotBytes()
	if _, err := PrepareRestore(data, last-1); !errors.Is(err, ErrRestoreIndex) {
		t.Fatalf("restore below the backup's index: %v, want ErrRestoreIndex", err)
	}
	// The same index is allowed (the --token-gap 0 negative control uses it).
	out, err := PrepareRestore(data, last)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := InspectSnapshot(out); s.Index != last || s.Leases != 0 {
		t.Fatalf("summary %+v", s)
	}
	// A version 1 state stays in format 1.
	v1 := New(nil)
	v1.ApplyCommand(1, &Command{Type: TypeAcquire, Now: 5, Lease: LeaseID{9}, NewLease: true, TTL: 1000, Name: "x"})
	out, err = PrepareRestore(v1.SnapshotBytes(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, snapshotMagic) {
		t.Fatalf("version 1 state prepared as %q", out[:5])
	}
}

func TestInspectSnapshot_Corrupted(t *testing.T) {
	f, _ := backupState(t)
	data := f.SnapshotBytes()
	bad := append([]byte(nil), data...)
	bad[0] = 'X'
	if _, err := InspectSnapshot(bad); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("bad magic: %v", err)
	}
	if _, err := InspectSnapshot(data[:len(data)-3]); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := InspectSnapshot(append(append([]byte(nil), data...), 0)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("trailing byte: %v", err)
	}
	if _, err := PrepareRestore(bad, 1<<40); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("PrepareRestore of a bad state: %v", err)
	}
	// SnapshotWithSummary describes exactly the bytes it returns.
	b, sum, err := f.SnapshotWithSummary()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := InspectSnapshot(b); again != sum || !bytes.Equal(b, data) {
		t.Fatalf("SnapshotWithSummary %+v, inspect says %+v", sum, again)
	}
}

// ACL policies and token hashes survive a restore: they are configuration, and a
// restored cluster must not come back with its doors open.
func TestPrepareRestore_KeepsACL(t *testing.T) {
	f, last := backupState(t)
	secret := ACLSecretHash("s3cret-0123456789")
	r := f.ApplyCommand(last+1, &Command{Type: TypeACLBootstrap, Now: 1300, ACL: ACLCommand{Accessor: "0123456789abcdef0123456789abcdef", SecretHash: secret}})
	if r.Status != StatusOK {
		t.Fatalf("bootstrap: %+v", r)
	}
	out, err := PrepareRestore(f.SnapshotBytes(), 1_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	g := New(nil)
	if err := restoreFrom(g, out); err != nil {
		t.Fatal(err)
	}
	id, ok := g.ACLResolve(secret)
	if !g.ACLBootstrapped() || !ok || !id.Admin() {
		t.Fatalf("after restore: bootstrapped %v, token resolves %v, admin %v", g.ACLBootstrapped(), ok, id.Admin())
	}
}
