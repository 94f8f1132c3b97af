package fencing_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/raftlock/raftlock/fencing"
	"github.com/raftlock/raftlock/fencing/fencingtest"
)

// These tests run against every guard (see backends): MemoryGuard, and SQLGuard on SQLite
// and PostgreSQL.

// TestGuard_ConcurrentWritersNeverGoBack: many writers with interleaved random tokens on a
// few resources. Per resource, the accepted tokens never decrease in commit order, every
// accepted write is counted exactly once (no lost read-modify-write), every refusal names a
// higher current token, and the fence ends at the highest accepted token.
func TestGuard_ConcurrentWritersNeverGoBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		const writers, writes = 8, 200
		resources := []string{"accounts/a", "accounts/b", "accounts/c"}
		ctx := context.Background()

		type outcome struct {
			accepted map[string][]fencing.Token // per resource, in this writer's order
			stale    int
		}
		outcomes := make([]outcome, writers)
		fencingtest.Together(writers, func(w int) {
			rng := rand.New(rand.NewPCG(42, uint64(w)))
			out := outcome{accepted: make(map[string][]fencing.Token)}
			for i := range writes {
				res := resources[rng.IntN(len(resources))]
				// Tokens drift upward with i, with a jitter wider than the drift, so
				// writers overtake each other, repeat each other's tokens, and fall
				// behind.
				tok := fencing.Token(1 + 3*i + rng.IntN(24))
				err := incr(ctx, s, res, tok, 1)
				var se *fencing.StaleTokenError
				switch {
				case err == nil:
					out.accepted[res] = append(out.accepted[res], tok)
				case errors.As(err, &se):
					if se.Resource != res || se.Offered != tok || se.Current <= tok {
						t.Errorf("writer %d: bad refusal %+v for %s token %d", w, *se, res, tok)
					}
					out.stale++
				default:
					t.Errorf("writer %d: %s token %d: %v", w, res, tok, err)
					return
				}
			}
			outcomes[w] = out
		})
		if t.Failed() {
			return
		}

		log := s.log(t)
		totalAccepted, totalStale := 0, 0
		for _, o := range outcomes {
			totalStale += o.stale
		}
		for _, res := range resources {
			committed := logTokens(log, res)
			if !slices.IsSorted(committed) {
				t.Errorf("%s: accepted tokens decrease in commit order: %s", res, fmtTokens(committed))
			}
			var reported []fencing.Token
			for w, o := range outcomes {
				if !slices.IsSorted(o.accepted[res]) {
					t.Errorf("writer %d: %s: its accepted tokens decrease: %s", w, res, fmtTokens(o.accepted[res]))
				}
				reported = append(reported, o.accepted[res]...)
			}
			slices.Sort(reported)
			if !slices.Equal(reported, committed) {
				t.Errorf("%s: writers saw %d accepted writes, the log has %d", res, len(reported), len(committed))
			}
			if got := s.counter(t, res); got != int64(len(committed)) {
				t.Errorf("%s: counter = %d, want %d (one per accepted write)", res, got, len(committed))
			}
			if len(committed) > 0 {
				if got, want := s.current(t, res), committed[len(committed)-1]; got != want {
					t.Errorf("%s: fence = %d, want the highest accepted token %d", res, got, want)
				}
			}
			totalAccepted += len(committed)
		}
		t.Logf("%d writes: %d accepted, %d refused as stale", writers*writes, totalAccepted, totalStale)
		if totalAccepted+totalStale != writers*writes {
			t.Errorf("accepted %d + stale %d != %d writes", totalAccepted, totalStale, writers*writes)
		}
		if totalAccepted == 0 || totalStale == 0 {
			t.Errorf("the workload must exercise both outcomes: accepted %d, stale %d", totalAccepted, totalStale)
		}
	})
}

// TestGuard_NewResourceRace: writers race to create the fence of a never-fenced resource.
// None fails with anything but a stale refusal, and the highest token always wins.
func TestGuard_NewResourceRace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		const rounds, writers = 20, 8
		ctx := context.Background()
		for round := range rounds {
			res := "new/" + string(rune('a'+round))
			errs := make([]error, writers)
			fencingtest.Together(writers, func(w int) { errs[w] = incr(ctx, s, res, fencing.Token(w+1), 1) })
			accepted := 0
			for w, err := range errs {
				switch {
				case err == nil:
					accepted++
				case errors.Is(err, fencing.ErrStaleToken):
				default:
					t.Fatalf("round %d writer %d: %v", round, w, err)
				}
			}
			if errs[writers-1] != nil {
				t.Fatalf("round %d: the highest token was refused: %v", round, errs[writers-1])
			}
			committed := logTokens(s.log(t), res)
			if !slices.IsSorted(committed) || len(committed) != accepted {
				t.Fatalf("round %d: log %s, %d accepted", round, fmtTokens(committed), accepted)
			}
			if got := s.counter(t, res); got != int64(accepted) {
				t.Fatalf("round %d: counter %d, want %d", round, got, accepted)
			}
			if got := s.current(t, res); got != writers {
				t.Fatalf("round %d: fence %d, want %d", round, got, writers)
			}
		}
	})
}

// TestGuard_RefusedWriteChangesNothing: a stale write does not run, and leaves the data, the
// log and the fence as they were.
func TestGuard_RefusedWriteChangesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		if err := incr(ctx, s, "r", 10, 5); err != nil {
			t.Fatal(err)
		}
		ran := false
		err := s.do(ctx, "r", 9, func(x rw) error {
			ran = true
			return x.set("r", 1000)
		})
		wantStale(t, err, "r", 9, 10)
		if ran {
			t.Fatal("the stale write's function ran")
		}
		if got := s.counter(t, "r"); got != 5 {
			t.Fatalf("counter = %d, want 5", got)
		}
		if got := s.log(t); len(got) != 1 {
			t.Fatalf("log = %v, want the one accepted write", got)
		}
		if got := s.current(t, "r"); got != 10 {
			t.Fatalf("fence = %d, want 10", got)
		}
		// Another resource has its own fence.
		if err := incr(ctx, s, "other", 1, 1); err != nil {
			t.Fatalf("a low token on another resource: %v", err)
		}
	})
}

// TestGuard_SameTokenWritesAgain: "<=", not "<": the holder may write many times with its
// token, a lower one is refused, a higher one is accepted.
func TestGuard_SameTokenWritesAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		for i := range 3 {
			if err := incr(ctx, s, "r", 7, 1); err != nil {
				t.Fatalf("write %d with the same token: %v", i, err)
			}
		}
		wantStale(t, incr(ctx, s, "r", 6, 1), "r", 6, 7)
		if err := incr(ctx, s, "r", 8, 1); err != nil {
			t.Fatal(err)
		}
		if got := s.counter(t, "r"); got != 4 {
			t.Fatalf("counter = %d, want 4", got)
		}
		if got := logTokens(s.log(t), "r"); !slices.Equal(got, []fencing.Token{7, 7, 7, 8}) {
			t.Fatalf("log = %v", got)
		}
	})
}

// TestGuard_FailedWriteRaisesNothing: when the caller's function fails, its writes are
// undone and the fence is not raised: a token between the old fence and the failed one is
// still accepted.
func TestGuard_FailedWriteRaisesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		if err := incr(ctx, s, "r", 5, 1); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := s.do(ctx, "r", 10, func(x rw) error {
			if err := x.set("r", 1000); err != nil {
				return err
			}
			if err := x.logAccept("r", 10); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the function's error", err)
		}
		if got := s.current(t, "r"); got != 5 {
			t.Fatalf("fence = %d after a failed write, want 5", got)
		}
		if got := s.counter(t, "r"); got != 1 {
			t.Fatalf("counter = %d, want 1", got)
		}
		if err := incr(ctx, s, "r", 7, 1); err != nil {
			t.Fatalf("token 7 after a failed write with 10: %v", err)
		}
		if got := logTokens(s.log(t), "r"); !slices.Equal(got, []fencing.Token{5, 7}) {
			t.Fatalf("log = %v", got)
		}

		// A failed first write leaves no fence at all.
		_ = s.do(ctx, "fresh", 3, func(rw) error { return boom })
		if got := s.current(t, "fresh"); got != 0 {
			t.Fatalf("fence of a resource whose only write failed = %d, want 0", got)
		}
	})
}

// TestGuard_PanicRollsBack: a panicking function behaves like a failing one, and the guard
// stays usable.
func TestGuard_PanicRollsBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic did not propagate")
				}
			}()
			_ = s.do(ctx, "r", 4, func(x rw) error {
				_ = x.set("r", 99)
				panic("boom")
			})
		}()
		if got := s.current(t, "r"); got != 0 {
			t.Fatalf("fence = %d after a panic, want 0", got)
		}
		if err := incr(ctx, s, "r", 2, 1); err != nil {
			t.Fatalf("write after a panic: %v", err)
		}
		if got := s.counter(t, "r"); got != 1 {
			t.Fatalf("counter = %d, want 1", got)
		}
	})
}

// TestGuard_StaleHolderCannotUndoNewerUpdate: the paused-holder race. The old holder (token 5)
// reads the balance, pauses, and wakes up after the new holder (token 6) has updated it; the
// old holder's write, computed from its stale read, is refused, and the new holder's update
// stands.
func TestGuard_StaleHolderCannotUndoNewerUpdate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		if err := s.do(ctx, "acct", 1, func(x rw) error { return x.set("acct", 100) }); err != nil {
			t.Fatal(err)
		}
		// Old holder reads under its token...
		var seen int64
		if err := s.do(ctx, "acct", 5, func(x rw) (err error) { seen, err = x.get("acct"); return err }); err != nil {
			t.Fatal(err)
		}
		// ...pauses; the lock passes to the new holder, which debits 50...
		if err := incr(ctx, s, "acct", 6, -50); err != nil {
			t.Fatal(err)
		}
		// ...and the old holder wakes up and writes what it computed before its pause.
		err := s.do(ctx, "acct", 5, func(x rw) error { return x.set("acct", seen-30) })
		wantStale(t, err, "acct", 5, 6)
		if got := s.counter(t, "acct"); got != 50 {
			t.Fatalf("balance = %d, want 50: the new holder's update was lost", got)
		}
	})
}

// TestGuard_ReadModifyWriteExcludesNewerHolder: the old holder is inside its fenced
// read-modify-write when the new holder starts its own. The new holder waits for the fence,
// then reads the old holder's result: both updates count.
func TestGuard_ReadModifyWriteExcludesNewerHolder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		for round := range 5 {
			res := "acct" + string(rune('0'+round))
			if err := s.do(ctx, res, 1, func(x rw) error { return x.set(res, 100) }); err != nil {
				t.Fatal(err)
			}
			inside, resume := make(chan struct{}), make(chan struct{})
			oldDone := make(chan error, 1)
			go func() {
				oldDone <- s.do(ctx, res, 5, func(x rw) error {
					v, err := x.get(res)
					if err != nil {
						return err
					}
					close(inside)
					<-resume // paused mid-write, holding the fence
					if err := x.set(res, v-30); err != nil {
						return err
					}
					return x.logAccept(res, 5)
				})
			}()
			<-inside
			newStarting := make(chan struct{})
			newDone := make(chan error, 1)
			go func() {
				close(newStarting)
				newDone <- incr(ctx, s, res, 6, 50)
			}()
			<-newStarting
			close(resume)
			if err := <-oldDone; err != nil {
				t.Fatalf("old holder: %v", err)
			}
			if err := <-newDone; err != nil {
				t.Fatalf("new holder: %v", err)
			}
			if got := s.counter(t, res); got != 120 {
				t.Fatalf("balance = %d, want 100-30+50 = 120", got)
			}
			if got := logTokens(s.log(t), res); !slices.Equal(got, []fencing.Token{5, 6}) {
				t.Fatalf("commit order = %v, want [5 6]", got)
			}
			wantStale(t, incr(ctx, s, res, 5, -30), res, 5, 6)
		}
	})
}

// TestGuard_TokenRange: 0 and tokens above MaxToken (math.MaxInt64, the BIGINT limit) are
// refused before anything runs; MaxToken itself is fine.
func TestGuard_TokenRange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store) {
		ctx := context.Background()
		never := func(rw) error { t.Error("function ran for an invalid token"); return nil }
		for _, tok := range []fencing.Token{fencing.MaxToken + 1, math.MaxUint64} {
			err := s.do(ctx, "r", tok, never)
			if !errors.Is(err, fencing.ErrTokenTooLarge) || errors.Is(err, fencing.ErrStaleToken) {
				t.Fatalf("token %d: err = %v, want ErrTokenTooLarge", tok, err)
			}
		}
		if err := s.do(ctx, "r", 0, never); !errors.Is(err, fencing.ErrInvalidToken) {
			t.Fatalf("token 0: err = %v, want ErrInvalidToken", err)
		}
		if err := s.do(ctx, "", 1, never); !errors.Is(err, fencing.ErrEmptyResource) {
			t.Fatalf("empty resource: err = %v, want ErrEmptyResource", err)
		}
		if got := s.current(t, "r"); got != 0 {
			t.Fatalf("fence = %d after refused tokens, want 0", got)
		}
		if err := incr(ctx, s, "r", fencing.MaxToken, 1); err != nil {
			t.Fatalf("MaxToken: %v", err)
		}
		if got := s.current(t, "r"); got != fencing.MaxToken {
			t.Fatalf("fence = %d, want MaxToken", got)
		}
		wantStale(t, incr(ctx, s, "r", fencing.MaxToken-1, 1), "r", fencing.MaxToken-1, fencing.MaxToken)
		if err := incr(ctx, s, "r", fencing.MaxToken, 1); err != nil {
			t.Fatalf("MaxToken again: %v", err)
		}
	})
}
