package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// What a fencing token proves, and what it does not (docs/FENCING.md, "What a token
// proves"). Tokens are Raft log indexes, global to the cluster: a token taken later on
// another lock (a/junk) is higher than b/job's, and a plain guard of b/job accepts it and
// then refuses b/job's real holder, which is the documented limitation. A guard that
// checks the holder through the API (CheckHolder) refuses the token of another lock, a
// released grant's, a shared grant's, and accepts the current exclusive holder's, also
// when a reader copied it from the lock's status, and a token of another lock granted in
// the same entry (the check binds a number to a lock, not a writer).
func TestCheckHolder_TokenFromAnotherLock(t *testing.T) {
	tc := testcluster.StartInProcess(t, 3, nil)
	c := newClient(t, tc.Endpoints())
	ctx := ctxFor(t, 30*time.Second)
	acquire := func(name, owner, mode string) api.Grant {
		t.Helper()
		g, err := c.Acquire(ctx, name, client.AcquireOptions{TTL: time.Minute, Owner: owner, Mode: mode})
		if err != nil {
			t.Fatalf("acquire %s: %v", name, err)
		}
		return g
	}
	real := acquire("b/job", "worker-b", "")
	junk := acquire("a/junk", "mallory", "")
	if junk.Token <= real.Token {
		t.Fatalf("a/junk's later grant has token %d, b/job's earlier one %d: tokens are log indexes, so the later must be higher", junk.Token, real.Token)
	}
	write := func() error { return nil }

	// A plain guard of b/job: it cannot tell a/junk's token from b/job's.
	var plain fencing.MemoryGuard
	if err := plain.Do("b/job", fencing.Token(junk.Token), write); err != nil {
		t.Fatalf("the plain guard refused a/junk's token %d: %v (the documented limitation says it accepts it)", junk.Token, err)
	}
	if err := plain.Do("b/job", fencing.Token(real.Token), write); !errors.Is(err, fencing.ErrStaleToken) {
		t.Fatalf("the plain guard, after a/junk's token: the real holder's token %d answered %v, want ErrStaleToken", real.Token, err)
	}

	// A guard that checks the holder first, then its own fence.
	var checked fencing.MemoryGuard
	guarded := func(tok uint64) error {
		if _, err := c.CheckHolder(ctx, "b/job", tok); err != nil {
			return err
		}
		return checked.Do("b/job", fencing.Token(tok), write)
	}
	if err := guarded(junk.Token); !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("checked guard, a/junk's token: %v, want ErrNotHolder", err)
	}
	if got := checked.Current("b/job"); got != 0 {
		t.Fatalf("a refused token raised the checked guard's fence to %d", got)
	}
	st, err := c.CheckHolder(ctx, "b/job", real.Token)
	if err != nil || st.Owner != "worker-b" || st.Token != real.Token {
		t.Fatalf("CheckHolder of the real holder: %+v, %v", st, err)
	}
	if err := guarded(real.Token); err != nil {
		t.Fatalf("checked guard, the real holder's token: %v", err)
	}
	// A token is no secret: whoever may read the lock reads its current token, and a
	// writer that presents it passes the holder check too. The check binds a token to the
	// lock, not to the writer.
	seen, err := c.Status(ctx, "b/job", client.StatusOptions{})
	if err != nil || seen.Token != real.Token {
		t.Fatalf("status of b/job: %+v, %v; want its token %d", seen, err, real.Token)
	}
	if _, err := c.CheckHolder(ctx, "b/job", seen.Token); err != nil {
		t.Fatalf("CheckHolder of the token read from the status: %v (the documented limitation says it passes)", err)
	}

	// Released, then granted again: the old token is no longer the holder's.
	if err := c.Release(ctx, "b/job", real.LeaseID, real.Token); err != nil {
		t.Fatal(err)
	}
	if err := guarded(real.Token); !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("checked guard after the release: %v, want ErrNotHolder", err)
	}
	next := acquire("b/job", "worker-b2", "")
	if err := guarded(real.Token); !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("checked guard, the previous holder's token under a new grant: %v, want ErrNotHolder", err)
	}
	if err := guarded(next.Token); err != nil {
		t.Fatalf("checked guard, the new holder's token: %v", err)
	}

	// A shared grant's token fences no write.
	shared := acquire("c/shared", "reader", api.ModeShared)
	if _, err := c.CheckHolder(ctx, "c/shared", shared.Token); !errors.Is(err, client.ErrNotHolder) {
		t.Fatalf("CheckHolder of a shared grant: %v, want ErrNotHolder", err)
	}

	// One entry can grant several locks, and they share its index as their token: lease x
	// holds d/one and d/two, y waits for d/one and z for d/two, and the revoke of x hands
	// both over in one entry. y's token of d/one then passes the holder check of d/two.
	lease := func() string {
		l, err := c.CreateLease(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return l.LeaseID
	}
	x, y, z := lease(), lease(), lease()
	for _, name := range []string{"d/one", "d/two"} {
		if _, err := c.Acquire(ctx, name, client.AcquireOptions{LeaseID: x}); err != nil {
			t.Fatalf("acquire %s: %v", name, err)
		}
	}
	type grant struct {
		g   api.Grant
		err error
	}
	waits := map[string]chan grant{"d/one": make(chan grant, 1), "d/two": make(chan grant, 1)}
	for name, lid := range map[string]string{"d/one": y, "d/two": z} {
		go func() {
			g, err := c.Acquire(ctx, name, client.AcquireOptions{LeaseID: lid, Wait: 20 * time.Second})
			waits[name] <- grant{g, err}
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "a waiter on d/one and on d/two", func() bool {
		for name := range waits {
			if st, err := c.Status(ctx, name, client.StatusOptions{}); err != nil || st.Waiters != 1 {
				return false
			}
		}
		return true
	})
	if _, err := c.Revoke(ctx, x); err != nil {
		t.Fatal(err)
	}
	one, two := <-waits["d/one"], <-waits["d/two"]
	if one.err != nil || two.err != nil || one.g.Token != two.g.Token {
		t.Fatalf("after the revoke: d/one %+v %v, d/two %+v %v; want both granted in one entry, one token", one.g, one.err, two.g, two.err)
	}
	if _, err := c.CheckHolder(ctx, "d/two", one.g.Token); err != nil {
		t.Fatalf("CheckHolder of d/two with d/one's token from the same entry: %v (the documented limitation says it passes)", err)
	}
}
