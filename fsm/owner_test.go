package fsm

import (
	"bytes"
	"encoding/hex"
	"io"
	"math/rand"
	"slices"
	"testing"
)

// ownerWorld is a version 4 state machine with ACLs: two lock tokens, an admin token, the
// anonymous caller and the node itself (""), for the ownership tests.
type ownerWorld struct {
	t      *testing.T
	f      *FSM
	index  uint64
	now    int64
	events []Event
}

func newOwnerWorld(t *testing.T) *ownerWorld {
	w := &ownerWorld{t: t, now: 1}
	w.f = New(func(e Event) { w.events = append(w.events, e) })
	w.must(StatusOK, Command{Type: TypeSetVersion, Version: 4})
	w.must(StatusOK, setPolicy("lock", ACLRule{"", AccessLock}))
	w.must(StatusOK, setPolicy("admin", ACLRule{"", AccessAdmin}))
	for _, acc := range []string{"aa", "bb"} {
		w.must(StatusOK, setToken(acc, "secret-"+acc, "lock"))
	}
	w.must(StatusOK, setToken("ad", "secret-ad", "admin"))
	return w
}

// apply applies c at the next index through its encoding, as a replica does.
func (w *ownerWorld) apply(c Command) *Result {
	w.t.Helper()
	w.index++
	c.Now = w.now
	dec, err := DecodeCommand(c.Encode(nil))
	if err != nil {
		w.t.Fatalf("decode %s: %v", c.Type, err)
	}
	wantCallers := c.Callers
	if !anyCaller(wantCallers) {
		wantCallers = nil // none is encoded
	}
	if dec.Creator != c.Creator || !slices.Equal(dec.Callers, wantCallers) {
		w.t.Fatalf("%s: caller %q %q decoded as %q %q", c.Type, c.Creator, c.Callers, dec.Creator, dec.Callers)
	}
	w.events = w.events[:0]
	return w.f.ApplyCommand(w.index, &dec)
}

func (w *ownerWorld) must(want Status, c Command) *Result {
	w.t.Helper()
	r := w.apply(c)
	if r.Status != want {
		w.t.Fatalf("%s: status %s (%v), want %s", c.Type, r.Status, r.Err, want)
	}
	return r
}

func leaseN(n byte) LeaseID {
	var id LeaseID
	id[0], id[15] = 0xee, n
	return id
}

// The raced request_id: two callers propose the same new lease at once. Whatever the
// timing at the edge, the log orders the two entries and the second is refused, and it is
// then refused on every use of that lease; the creator's own commands work. A revoke by
// another identity is refused too, and an admin's is not.
func TestFSM_LeaseOwnerDecidedAtApply(t *testing.T) {
	w := newOwnerWorld(t)
	id := leaseN(1)
	r := w.must(StatusOK, Command{Type: TypeAcquire, Lease: id, NewLease: true, TTL: 10_000, Name: "secret/x", Creator: "aa"})
	w.must(StatusLeaseNotFound, Command{Type: TypeAcquire, Lease: id, NewLease: true, TTL: 10_000, Name: "secret/x", Creator: "bb"})
	w.must(StatusLeaseNotFound, Command{Type: TypeAcquire, Lease: id, Name: "secret/y", Creator: "bb"})
	w.must(StatusLeaseNotFound, Command{Type: TypeAcquire, Lease: id, Name: "secret/y", Creator: CallerAnonymous})
	w.must(StatusLeaseNotFound, Command{Type: TypeRelease, Lease: id, Name: "secret/x", Token: r.Token, Creator: "bb"})
	w.must(StatusLeaseNotFound, Command{Type: TypeRevoke, Lease: id, Creator: "bb"})
	w.must(StatusLeaseNotFound, Command{Type: TypeCreateLease, Lease: id, TTL: 1, Creator: "bb"})
	rn := w.must(StatusOK, Command{Type: TypeRenew, Leases: []LeaseID{id, id}, Callers: []string{"bb", "aa"}})
	if rn.Renewed[0] || !rn.Renewed[1] {
		t.Fatalf("renew by another identity and by the creator: %v", rn.Renewed)
	}
	if v := w.f.Lock("secret/x"); v.Holder != id || v.Token != r.Token {
		t.Fatalf("the lock changed under another identity's commands: %+v", v)
	}
	if _, ok := w.f.Lease(id); !ok {
		t.Fatal("another identity revoked the lease")
	}
	w.must(StatusOK, Command{Type: TypeAcquire, Lease: id, Name: "secret/y", Creator: "aa"})
	w.must(StatusOK, Command{Type: TypeRevoke, Lease: id, Creator: "ad"})
	if _, ok := w.f.Lease(id); ok {
		t.Fatal("an admin's revoke was refused")
	}
}

// Deleting a token revokes its leases in the same entry: its waiting request leaves the
// queue (the wait ends, no grant), the lock it held goes to the next waiter at that index,
// and a later release hands nothing to it. A command from the deleted token is refused as
// unauthenticated, even one that would create a lease.
func TestFSM_TokenDeleteRevokesItsLeases(t *testing.T) {
	w := newOwnerWorld(t)
	a, b, b2 := leaseN(1), leaseN(2), leaseN(3)
	ra := w.must(StatusOK, Command{Type: TypeAcquire, Lease: a, NewLease: true, TTL: 60_000, Name: "x", Creator: "aa"})
	w.must(StatusQueued, Command{Type: TypeAcquire, Lease: b, NewLease: true, TTL: 60_000, Name: "x", Wait: 60_000, Creator: "bb"})
	w.must(StatusOK, Command{Type: TypeAcquire, Lease: b2, NewLease: true, TTL: 60_000, Name: "y", Creator: "bb"})
	w.must(StatusQueued, Command{Type: TypeAcquire, Lease: a, Name: "y", Wait: 60_000, Creator: "aa"})
	del := w.must(StatusOK, Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "bb"}})
	var ended, granted bool
	for _, e := range w.events {
		ended = ended || e.Kind == EventWaitEnded && e.Lease == b && e.Name == "x"
		granted = granted || e.Kind == EventGranted && e.Lease == a && e.Name == "y" && e.Token == del.Index
	}
	if !ended || !granted {
		t.Fatalf("at the token's deletion: b's wait ended %v, y handed to a %v (events %+v)", ended, granted, w.events)
	}
	for _, id := range []LeaseID{b, b2} {
		if _, ok := w.f.Lease(id); ok {
			t.Fatalf("lease %v of the deleted token survives", id)
		}
	}
	w.must(StatusOK, Command{Type: TypeRelease, Lease: a, Name: "x", Token: ra.Token, Creator: "aa"})
	if v := w.f.Lock("x"); v.Held {
		t.Fatalf("the release handed x on: %+v", v)
	}
	w.must(StatusUnauthenticated, Command{Type: TypeAcquire, Lease: leaseN(4), NewLease: true, TTL: 60_000, Name: "z", Creator: "bb"})
	w.must(StatusUnauthenticated, Command{Type: TypeCreateLease, Lease: leaseN(5), TTL: 60_000, Creator: "bb"})
	if _, ok := w.f.Lease(leaseN(4)); ok {
		t.Fatal("a deleted token created a lease")
	}
}

// Before version 4 nothing of this applies (a version 3 log replays as it always did), and
// reaching version 4 revokes the leases of tokens deleted before.
func TestFSM_LeaseOwnerFromVersion4(t *testing.T) {
	f := New(nil)
	i := uint64(0)
	apply := func(c Command) *Result { i++; return f.ApplyCommand(i, &c) }
	apply(Command{Type: TypeSetVersion, Version: 3})
	apply(setPolicy("lock", ACLRule{"", AccessLock}))
	apply(setToken("aa", "sa", "lock"))
	apply(setToken("bb", "sb", "lock"))
	id, kept := leaseN(1), leaseN(2)
	apply(Command{Type: TypeAcquire, Lease: id, NewLease: true, TTL: 60_000, Name: "x", Creator: "aa"})
	apply(Command{Type: TypeCreateLease, Lease: kept, TTL: 60_000, Creator: "bb"})
	if r := apply(Command{Type: TypeAcquire, Lease: id, NewLease: true, TTL: 60_000, Name: "x", Creator: "bb"}); r.Status != StatusOK {
		t.Fatalf("version 3 shares the lease as it did: %s", r.Status)
	}
	apply(Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: "aa"}})
	if _, ok := f.Lease(id); !ok {
		t.Fatal("version 3 revoked a deleted token's lease")
	}
	apply(Command{Type: TypeSetVersion, Version: 4})
	if _, ok := f.Lease(id); ok || f.Lock("x").Held {
		t.Fatal("version 4 kept the lease of a token deleted before it")
	}
	if _, ok := f.Lease(kept); !ok {
		t.Fatal("version 4 revoked a live token's lease")
	}
}

// Random sequences of lease commands from several identities (two lock tokens, an admin,
// the anonymous caller, the node itself), with token deletions and re-creations between.
// Invariants after every step: a command that names a lease another non-admin identity
// created, or that comes from a deleted token, changes exactly what a tick at its place
// would change (nothing but time and what expired), and is refused; a Renew renews no
// lease of another identity; no live lease belongs to a deleted token, and no grant goes
// to one.
func TestFSM_LeaseOwnerProperty(t *testing.T) {
	callers := []string{"aa", "bb", "ad", CallerAnonymous, ""}
	names := []string{"x", "y", "s", "e"}
	for seed := int64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		w := newOwnerWorld(t)
		var ids []LeaseID
		live := map[string]bool{"aa": true, "bb": true, "ad": true}
		admin := func(c string) bool { return c == "ad" && live["ad"] }
		for step := 0; step < 200; step++ {
			w.now += int64(rng.Intn(400))
			caller := callers[rng.Intn(len(callers))]
			var id LeaseID
			if len(ids) > 0 && rng.Intn(3) > 0 {
				id = ids[rng.Intn(len(ids))]
			} else {
				id = leaseN(byte(len(ids) + 1))
				ids = append(ids, id)
			}
			name := names[rng.Intn(len(names))]
			var c Command
			switch k := rng.Intn(12); {
			case k == 0:
				c = Command{Type: TypeCreateLease, Lease: id, TTL: 3000, Creator: caller}
			case k <= 3:
				typ := TypeAcquire
				switch name {
				case "s":
					typ = TypeSemAcquire
				case "e":
					typ = TypeCampaign
				}
				_, exists := w.f.Lease(id)
				c = Command{Type: typ, Lease: id, NewLease: !exists || rng.Intn(2) == 0, TTL: 3000, Name: name, Wait: int64(rng.Intn(2)) * 2000, Creator: caller, Limit: 2}
			case k == 4:
				v := w.f.Lock(name)
				c = Command{Type: TypeRelease, Lease: id, Name: "x", Token: v.Token, Creator: caller}
				if name == "x" || name == "y" {
					c.Name = name
				}
			case k == 5:
				c = Command{Type: TypeRevoke, Lease: id, Creator: caller}
			case k == 6:
				c = Command{Type: TypeDequeue, Lease: id, Name: "x", Creator: caller}
			case k == 7:
				c = Command{Type: TypeRenew, Leases: []LeaseID{id, ids[rng.Intn(len(ids))]}, Callers: []string{caller, callers[rng.Intn(len(callers))]}}
			case k == 8 && rng.Intn(3) == 0:
				acc := []string{"aa", "bb", "ad"}[rng.Intn(3)]
				if live[acc] {
					c = Command{Type: TypeACLDeleteToken, ACL: ACLCommand{Accessor: acc}}
					live[acc] = false
				} else {
					pol := map[string]string{"aa": "lock", "bb": "lock", "ad": "admin"}[acc]
					c = setToken(acc, "secret-"+acc, pol)
					live[acc] = true
				}
			default:
				c = Command{Type: TypeTick}
			}
			// The twin applies a tick in the command's place: what the command must
			// change when refused, and the state (what expired by its time) it is
			// checked against.
			twin := New(nil)
			if err := twin.Restore(io.NopCloser(bytes.NewReader(w.f.SnapshotBytes()))); err != nil {
				t.Fatal(err)
			}
			tick := Command{Type: TypeTick, Now: w.now}
			twin.ApplyCommand(w.index+1, &tick)
			l, exists := twin.Lease(c.Lease)
			dead := c.Creator != "" && c.Creator != CallerAnonymous && !live[c.Creator]
			foreign := exists && l.Creator != "" && c.Creator != "" && c.Creator != l.Creator && !admin(c.Creator)
			refused := c.usesLease() && (dead || foreign)
			var before []LeaseView
			for _, lid := range c.Leases {
				v, _ := twin.Lease(lid)
				before = append(before, v)
			}
			r := w.apply(c)
			if refused {
				want := StatusLeaseNotFound
				if dead {
					want = StatusUnauthenticated
				}
				if r.Status != want || !bytes.Equal(w.f.SnapshotBytes(), twin.SnapshotBytes()) {
					t.Fatalf("seed %d step %d: %s by %q on a lease of %q (dead %v): status %s, want %s; same state as a tick: %v",
						seed, step, c.Type, c.Creator, l.Creator, dead, r.Status, want, bytes.Equal(w.f.SnapshotBytes(), twin.SnapshotBytes()))
				}
			}
			for i := range c.Leases {
				who, v := c.Callers[i], before[i]
				bad := v.Creator != "" && who != "" && who != v.Creator && !admin(who) || who != "" && who != CallerAnonymous && !live[who]
				if bad && r.Renewed[i] {
					t.Fatalf("seed %d step %d: %q renewed a lease of %q", seed, step, who, v.Creator)
				}
			}
			for _, lid := range ids {
				if v, ok := w.f.Lease(lid); ok && v.Creator != "" && v.Creator != CallerAnonymous && !live[v.Creator] {
					t.Fatalf("seed %d step %d: lease of deleted token %q is live", seed, step, v.Creator)
				}
			}
			for _, e := range w.events {
				if e.Kind != EventGranted {
					continue
				}
				if v, ok := w.f.Lease(e.Lease); !ok || v.Creator != "" && v.Creator != CallerAnonymous && !live[v.Creator] {
					t.Fatalf("seed %d step %d: grant of %s to a lease of a deleted token (%v)", seed, step, e.Name, ok)
				}
			}
		}
	}
}

// The bytes of version 4's caller fields, pinned: a release's caller trails its body as a
// string, a Renew's callers trail it as a table of distinct callers and one position per
// lease (0: none). A change here is a change of the log format.
func TestFSM_CallerEncodingPinned(t *testing.T) {
	var id, id2 LeaseID
	id[0], id2[0] = 1, 2
	for _, tc := range []struct {
		c    Command
		want string
	}{
		{Command{Type: TypeRelease, Now: 7, Lease: id, Name: "x", Token: 9, Creator: "aa"},
			"05" + "07" + "01000000000000000000000000000000" + "0178" + "09" + "026161"},
		{Command{Type: TypeRenew, Now: 7, Leases: []LeaseID{id, id2, id}, Callers: []string{"aa", "", "aa"}},
			"02" + "07" + "03" + "01000000000000000000000000000000" + "02000000000000000000000000000000" + "01000000000000000000000000000000" + "01026161" + "010001"},
	} {
		enc := tc.c.Encode(nil)
		if got := hex.EncodeToString(enc); got != tc.want {
			t.Fatalf("%s: %s, want %s", tc.c.Type, got, tc.want)
		}
		d, err := DecodeCommand(enc)
		if err != nil || d.Creator != tc.c.Creator || !slices.Equal(d.Callers, tc.c.Callers) && tc.c.Callers != nil {
			t.Fatalf("%s: decoded %+v, %v", tc.c.Type, d, err)
		}
		if _, err := decodeCommand(enc, 3); err == nil {
			t.Fatalf("%s: a version 3 node decodes the caller field", tc.c.Type)
		}
	}
	// A table without a caller, or a position past the table, is refused.
	for _, bad := range []string{"0207010100000000000000000000000000000000" + "00" + "00", "0207010100000000000000000000000000000000" + "01026161" + "02"} {
		b, _ := hex.DecodeString(bad)
		if _, err := DecodeCommand(b); err == nil {
			t.Fatalf("%s decodes", bad)
		}
	}
}
