package fsm

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"testing"
)

// A lease's creator (protocol version 3): random sequences of lease-creating and other
// lease commands, with SetVersion 3 at a random step, applied through their encoding to two
// state machines and, with every Creator stripped, to a third. After each step: the two
// hold the same bytes (determinism); before version 3 the third holds them too, so a
// version 2 cluster writes exactly what it wrote before; a snapshot restores to the same
// bytes and the same creators; from version 3 on each live lease reports the creator of
// the command that created it, and before it none; LeaseCreator answers as Lease does.
func TestFSM_LeaseCreatorProperty(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		a, b, stripped := New(nil), New(nil), New(nil)
		var ids []LeaseID
		creatorOf := map[LeaseID]string{} // the creator recorded, as the model expects it
		version := uint64(1)
		now := int64(1)
		index := uint64(0)
		apply := func(c Command) {
			t.Helper()
			index++
			c.Now = now
			enc := c.Encode(nil)
			dec, err := DecodeCommand(enc)
			if err != nil {
				t.Fatalf("seed %d: decode %s: %v", seed, c.Type, err)
			}
			if dec.Creator != c.Creator && c.createsLease() {
				t.Fatalf("seed %d: creator %q decoded as %q", seed, c.Creator, dec.Creator)
			}
			ra, rb := a.ApplyCommand(index, &dec), b.ApplyCommand(index, &dec)
			if ra.Status != rb.Status {
				t.Fatalf("seed %d: statuses differ: %s %s", seed, ra.Status, rb.Status)
			}
			s := dec
			s.Creator = ""
			stripped.ApplyCommand(index, &s)
		}
		apply(Command{Type: TypeSetVersion, Version: 2})
		version = 2
		for step := 0; step < 120; step++ {
			now += int64(rng.Intn(50))
			var id LeaseID
			rng.Read(id[:])
			creator := []string{"", "acc-a", "acc-b"}[rng.Intn(3)]
			switch k := rng.Intn(10); {
			case k == 0 && version < 3 && step > 20:
				apply(Command{Type: TypeSetVersion, Version: 3})
				version = 3
			case k <= 3:
				apply(Command{Type: TypeCreateLease, Lease: id, TTL: 5000, Creator: creator})
				ids = append(ids, id)
				if version >= 3 {
					creatorOf[id] = creator
				} else {
					creatorOf[id] = ""
				}
			case k <= 5:
				typ := []Type{TypeAcquire, TypeAcquireShared, TypeSemAcquire, TypeCampaign}[rng.Intn(4)]
				c := Command{Type: typ, Lease: id, NewLease: true, TTL: 5000, Name: []string{"x", "y"}[rng.Intn(2)], Creator: creator, Limit: 2}
				apply(c)
				if _, ok := a.Lease(id); ok {
					ids = append(ids, id)
					creatorOf[id] = map[bool]string{true: creator, false: ""}[version >= 3]
				}
			case k == 6 && len(ids) > 0:
				// A repeated create of a live lease by another caller changes nothing.
				// (One that ended is created anew, by that caller.)
				old := ids[rng.Intn(len(ids))]
				_, live := a.Lease(old)
				apply(Command{Type: TypeCreateLease, Lease: old, TTL: 5000, Creator: "acc-other"})
				if !live {
					creatorOf[old] = map[bool]string{true: "acc-other", false: ""}[version >= 3]
				}
			case k == 7 && len(ids) > 0:
				apply(Command{Type: TypeRevoke, Lease: ids[rng.Intn(len(ids))]})
			case k == 8 && len(ids) > 0:
				apply(Command{Type: TypeRenew, Leases: []LeaseID{ids[rng.Intn(len(ids))]}})
			default:
				apply(Command{Type: TypeTick})
			}
			sa, sb := a.SnapshotBytes(), b.SnapshotBytes()
			if !bytes.Equal(sa, sb) {
				t.Fatalf("seed %d step %d: two state machines differ", seed, step)
			}
			if version < 3 && !bytes.Equal(sa, stripped.SnapshotBytes()) {
				t.Fatalf("seed %d step %d: at version %d the creator changed the state", seed, step, version)
			}
			r := New(nil)
			if err := r.Restore(io.NopCloser(bytes.NewReader(sa))); err != nil {
				t.Fatalf("seed %d step %d: restore: %v", seed, step, err)
			}
			if !bytes.Equal(r.SnapshotBytes(), sa) {
				t.Fatalf("seed %d step %d: the snapshot does not round-trip", seed, step)
			}
			for _, id := range ids {
				la, ok := a.Lease(id)
				// LeaseCreator, the lease gate's constant-time read, says what Lease says.
				if c, cok := a.LeaseCreator(id); cok != ok || c != la.Creator {
					t.Fatalf("seed %d step %d: LeaseCreator answers %q, %v; Lease %q, %v", seed, step, c, cok, la.Creator, ok)
				}
				if !ok {
					continue
				}
				lr, _ := r.Lease(id)
				if la.Creator != creatorOf[id] || lr.Creator != la.Creator {
					t.Fatalf("seed %d step %d: lease creator %q (restored %q), want %q", seed, step, la.Creator, lr.Creator, creatorOf[id])
				}
			}
		}
	}
}

// The creator is a trailing field only a node speaking version 3 reads: a version 2 node
// refuses a command that carries it (the leader writes it only once version 3 is active,
// that is once every voter speaks it), and a command without it encodes as before.
func TestFSM_LeaseCreatorEncodingGated(t *testing.T) {
	var id LeaseID
	id[0] = 7
	for _, c := range []Command{
		{Type: TypeCreateLease, Now: 5, Lease: id, TTL: 1000},
		{Type: TypeAcquire, Now: 5, Lease: id, NewLease: true, TTL: 1000, Name: "x"},
		{Type: TypeSemAcquire, Now: 5, Lease: id, NewLease: true, TTL: 1000, Name: "s", Limit: 2},
		{Type: TypeCampaign, Now: 5, Lease: id, NewLease: true, TTL: 1000, Name: "e", Value: "v"},
	} {
		plain := c.Encode(nil)
		with := c
		with.Creator = "acc"
		enc := with.Encode(nil)
		if !bytes.HasPrefix(enc, plain) || len(enc) != len(plain)+4 {
			t.Fatalf("%s: with a creator %x, without %x: want the same bytes and the creator after", c.Type, enc, plain)
		}
		if _, err := decodeCommand(enc, 2); !errors.Is(err, ErrCorruptCommand) {
			t.Fatalf("%s: a version 2 node decodes a command with a creator: %v", c.Type, err)
		}
		if d, err := decodeCommand(plain, 2); err != nil || d.Creator != "" {
			t.Fatalf("%s: a version 2 node decodes %+v, %v", c.Type, d, err)
		}
		if d, err := decodeCommand(enc, 3); err != nil || d.Creator != "acc" {
			t.Fatalf("%s: a version 3 node decodes creator %q, %v", c.Type, d.Creator, err)
		}
	}
	// An acquire on an existing lease carries its caller from version 4 on only (owner.go):
	// a version 3 node refuses the field there, and one without it encodes as before.
	c := Command{Type: TypeAcquire, Lease: id, Name: "x"}
	plain := c.Encode(nil)
	c.Creator = "acc"
	enc := c.Encode(nil)
	if !bytes.HasPrefix(enc, plain) || len(enc) != len(plain)+4 {
		t.Fatalf("acquire with lease_id and a caller %x, without %x", enc, plain)
	}
	if _, err := decodeCommand(enc, 3); !errors.Is(err, ErrCorruptCommand) {
		t.Fatalf("a version 3 node decodes an acquire with lease_id and a caller: %v", err)
	}
	if d, err := decodeCommand(enc, 4); err != nil || d.Creator != "acc" {
		t.Fatalf("a version 4 node decodes caller %q, %v", d.Creator, err)
	}
}
