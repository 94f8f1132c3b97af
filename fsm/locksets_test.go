package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// atVersion returns a state machine whose first entry set protocol version v.
func atVersion(t testing.TB, v uint64) (*FSM, *uint64) {
	t.Helper()
	f := New(nil)
	index := uint64(1)
	if r := f.ApplyCommand(index, &Command{Type: TypeSetVersion, Version: v}); r.Status != StatusOK {
		t.Fatalf("set version %d: %v", v, r.Status)
	}
	return f, &index
}

// groups reads lock name's lockset groups as "lease token mode names".
func groups(f *FSM, name string) []string {
	var out []string
	for _, sv := range f.Lock(name).Sets {
		mode := "exclusive"
		if sv.Shared {
			mode = "shared"
		}
		out = append(out, fmt.Sprintf("%x %d %s %v", sv.Lease[:1], sv.Token, mode, sv.Names))
	}
	return out
}

// A lockset granted whole is kept as one group (version 7): at once or from the queue,
// exclusive or shared; a lock leaves the group when its grant ends and the rest stay one
// group; locks its lease held already are not in it; and two locks waited for alone and
// handed to one lease by one revoke are no group, which token and lease alone could not
// tell.
func TestLockSet_GroupsKeptWhole(t *testing.T) {
	f, index := atVersion(t, 7)
	a, b, c, d, e := LeaseID{0xa}, LeaseID{0xb}, LeaseID{0xc}, LeaseID{0xd}, LeaseID{0xe}
	nl := func(cmd Command) Command { cmd.NewLease, cmd.TTL, cmd.Now = true, 60_000, 10; return cmd }
	expect := func(name string, want ...string) {
		t.Helper()
		if got := groups(f, name); !slices.Equal(got, want) {
			t.Fatalf("lock %s: groups %q, want %q", name, got, want)
		}
	}
	v3apply(t, f, index, nl(Command{Type: TypeLockSet, Lease: a, Names: []string{"x", "y"}, Owner: "A"}), StatusOK)
	tokA := *index
	expect("x", fmt.Sprintf("0a %d exclusive [x y]", tokA))
	expect("y", fmt.Sprintf("0a %d exclusive [x y]", tokA))
	// A lockset of a lease that holds one of its locks already: the group is what its
	// entry granted.
	v3apply(t, f, index, nl(Command{Type: TypeAcquire, Lease: b, Name: "p", Owner: "B"}), StatusOK)
	v3apply(t, f, index, Command{Type: TypeLockSet, Now: 10, Lease: b, Names: []string{"p", "q"}, Owner: "B"}, StatusOK)
	expect("p")
	expect("q", fmt.Sprintf("0b %d exclusive [q]", *index))
	// A set that waits is a group once granted, at the entry that grants it.
	v3apply(t, f, index, nl(Command{Type: TypeLockSet, Lease: c, Names: []string{"x", "z"}, Owner: "C", Wait: 30_000}), StatusQueued)
	expect("z") // reserved for the set, held by nobody
	// Releasing y alone leaves x in A's group; releasing x hands it, with z, to C's set.
	v3apply(t, f, index, Command{Type: TypeRelease, Now: 10, Lease: a, Name: "y", Token: tokA}, StatusOK)
	expect("x", fmt.Sprintf("0a %d exclusive [x]", tokA))
	v3apply(t, f, index, Command{Type: TypeRelease, Now: 10, Lease: a, Name: "x", Token: tokA}, StatusOK)
	expect("x", fmt.Sprintf("0c %d exclusive [x z]", *index))
	expect("z", fmt.Sprintf("0c %d exclusive [x z]", *index))
	// Shared: two shared sets over the same locks, each its own group.
	v3apply(t, f, index, nl(Command{Type: TypeLockSet, Lease: d, Names: []string{"r1", "r2"}, Owner: "D", Shared: true}), StatusOK)
	tokD := *index
	v3apply(t, f, index, nl(Command{Type: TypeLockSet, Lease: e, Names: []string{"r1", "r2"}, Owner: "E", Shared: true}), StatusOK)
	expect("r1", fmt.Sprintf("0d %d shared [r1 r2]", tokD), fmt.Sprintf("0e %d shared [r1 r2]", *index))
	// The ambiguous case: E waits alone for m1 and for m2, both held by D; D's revoke hands
	// both to E in one entry, with one token, and they are no group.
	v3apply(t, f, index, Command{Type: TypeAcquire, Now: 10, Lease: d, Name: "m1"}, StatusOK)
	v3apply(t, f, index, Command{Type: TypeAcquire, Now: 10, Lease: d, Name: "m2"}, StatusOK)
	v3apply(t, f, index, Command{Type: TypeAcquire, Now: 10, Lease: e, Name: "m1", Wait: 30_000}, StatusQueued)
	v3apply(t, f, index, Command{Type: TypeAcquire, Now: 10, Lease: e, Name: "m2", Wait: 30_000}, StatusQueued)
	v3apply(t, f, index, Command{Type: TypeRevoke, Now: 10, Lease: d}, StatusOK)
	if f.Lock("m1").Token != *index || f.Lock("m2").Token != *index || f.Lock("m1").Holder != e {
		t.Fatalf("the revoke did not hand both to E: %+v %+v", f.Lock("m1"), f.Lock("m2"))
	}
	expect("m1")
	expect("m2")
	expect("r1", fmt.Sprintf("0e %d shared [r1 r2]", tokD+1))
	// The lease's end takes the group with it.
	v3apply(t, f, index, Command{Type: TypeRevoke, Now: 10, Lease: c}, StatusOK)
	expect("x")
	expect("z")

	// Restored from a snapshot, the groups are the same, and so are the bytes.
	snap := f.SnapshotBytes()
	r := New(nil)
	if err := r.Restore(nopReader(snap)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.SnapshotBytes(), snap) || !slices.Equal(groups(r, "q"), groups(f, "q")) || !slices.Equal(groups(r, "r2"), groups(f, "r2")) {
		t.Fatalf("restored: %q %q", groups(r, "q"), groups(r, "r2"))
	}
	// A group that does not match its grants is refused.
	f.mu.Lock()
	f.s.leases[b].sets["q"].token++
	bad := f.s.encode()
	f.s.leases[b].sets["q"].token--
	f.mu.Unlock()
	if err := New(nil).Restore(nopReader(bad)); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a group with another token than its grant: %v", err)
	}

	// At version 6 a lockset is no group: the bytes of version 6 do not change.
	g, gi := atVersion(t, 6)
	v3apply(t, g, gi, nl(Command{Type: TypeLockSet, Lease: a, Names: []string{"x", "y"}}), StatusOK)
	if got := groups(g, "x"); got != nil {
		t.Fatalf("a group at version 6: %q", got)
	}
}

// Random lock commands of version 3 (locksets exclusive and shared, waits, maximum holds,
// lock delays, releases one lock or a whole set, revokes, expiries) mixed with semaphores
// and elections at version 7 agree with the reference model at every step, lockset
// groups included (checkPrims), and a state restored midway ends with the same bytes.
func TestLockSet_GroupsRandomMatchModel(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			f, _ := atVersion(t, 7)
			m := newPModel()
			m.apply(1, &Command{Type: TypeSetVersion, Version: 7})
			v3 := newV3Gen(seed)
			pg := newPGen(seed, f)
			pg.first, pg.ids, pg.names = false, v3.leases, v3.names
			rng := rand.New(rand.NewSource(seed))
			var restored *FSM
			grouped := 0
			for index := uint64(2); index <= 2500; index++ {
				var c Command
				if rng.Intn(3) > 0 {
					v3.now = max(v3.now, pg.now)
					c = v3.next(f)
					pg.now = c.Now
				} else {
					c = pg.next()
					v3.now = max(v3.now, c.Now)
				}
				got := f.ApplyCommand(index, &c)
				if restored != nil {
					restored.ApplyCommand(index, &c)
				}
				want, token := m.apply(index, &c)
				if got.Status != want {
					t.Fatalf("step %d %s %v by %s: %s (%v), model %s", index, c.Type, c.Names, c.Lease, got.Status, got.Err, want)
				}
				if want == StatusOK && token != 0 && got.Token != token {
					t.Fatalf("step %d %s: token %d, model %d", index, c.Type, got.Token, token)
				}
				checkPrims(t, index, f, m, pg)
				for _, n := range v3.names {
					grouped += len(f.Lock(n).Sets)
				}
				if index == 1200 {
					restored = New(nil)
					if err := restored.Restore(nopReader(f.SnapshotBytes())); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !bytes.Equal(f.SnapshotBytes(), restored.SnapshotBytes()) {
				t.Fatal("a node restored midway differs")
			}
			if grouped == 0 {
				t.Fatal("no lockset group in 2,500 steps: the generator does not exercise them")
			}
		})
	}
}
