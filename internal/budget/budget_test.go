package budget

import (
	"context"
	"testing"
	"time"
)

// at returns a fixed base time plus us microseconds.
func at(base time.Time, us int) time.Time { return base.Add(time.Duration(us) * time.Microsecond) }

// TestBudgets_JoinsForwardedCommit builds the records of one request that reached a
// follower (n2), was forwarded to the leader (n1) and committed at index 7 with n3's
// answer making the quorum, and checks every stage.
func TestBudgets_JoinsForwardedCommit(t *testing.T) {
	r := New()
	t0 := time.Now()
	e := &Trace{ID: 1, Node: "n2", Tag: "x", Start: at(t0, 0), Decoded: at(t0, 10), End: at(t0, 1000), rec: r}
	l := &Trace{ID: 2, Parent: 1, Node: "n1", Start: at(t0, 40), Decoded: at(t0, 50), End: at(t0, 900), Index: 7, Returned: at(t0, 850), rec: r}
	r.Stored("n1", 6, 7, at(t0, 60), at(t0, 300))   // leader write
	r.Stored("n2", 7, 7, at(t0, 400), at(t0, 700))  // slower follower
	r.Stored("n3", 7, 7, at(t0, 350), at(t0, 600))  // quorum follower
	r.Replicated("n2", at(t0, 310), at(t0, 760))    // n2's round trip
	r.Replicated("n3", at(t0, 305), at(t0, 650))    // n3's round trip: the quorum at 650
	r.Replicated("n3", at(t0, 1), at(t0, 20))       // an earlier one, not bracketing the write
	r.Applied("n1", 7, 7, at(t0, 680), at(t0, 690)) // leader apply
	r.Applied("n2", 7, 7, at(t0, 800), at(t0, 810)) // a follower's apply: not the leader's
	r.traces = append(r.traces, l, e)               // as Finish would, keeping the End times above

	bs := r.Budgets()
	if len(bs) != 1 {
		t.Fatalf("%d budgets, want 1: %+v", len(bs), bs)
	}
	b := bs[0]
	want := map[Stage]int{HTTPIn: 10, Forward: 990 - 850, Propose: 10, LeaderWrite: 240, QuorumWait: 650 - 300,
		Commit: 30, Apply: 10, Answer: 210}
	for s, us := range want {
		if got := b.Stages[s]; got != time.Duration(us)*time.Microsecond {
			t.Errorf("%s = %v, want %dµs", s, got, us)
		}
	}
	if b.ForwardOut != 30*time.Microsecond || b.LeaderIn != 10*time.Microsecond || b.ForwardBack != 100*time.Microsecond ||
		b.AnswerWake != 160*time.Microsecond || b.AnswerWrite != 50*time.Microsecond ||
		b.FollowerSend != 245*time.Microsecond || b.FollowerOut != 45*time.Microsecond || b.FollowerWrite != 250*time.Microsecond || b.FollowerBack != 50*time.Microsecond {
		t.Errorf("parts: forward %v + %v + %v, follower %v + %v + %v + %v", b.ForwardOut, b.LeaderIn, b.ForwardBack, b.FollowerSend, b.FollowerOut, b.FollowerWrite, b.FollowerBack)
	}
	var sum time.Duration
	for _, d := range b.Stages {
		sum += d
	}
	if !b.Forwarded || b.Index != 7 || b.Tag != "x" || b.Total != time.Millisecond || sum != b.Total {
		t.Errorf("budget = %+v (stages sum to %v)", b, sum)
	}
}

// TestBudgets_FollowerAnswersBeforeTheLeaderWrote: the follower's path ran beside the
// leader's write and ended first, so the commit waited for the leader's write alone (no
// quorum wait), and the stages still add up to the total.
func TestBudgets_FollowerAnswersBeforeTheLeaderWrote(t *testing.T) {
	r := New()
	t0 := time.Now()
	l := &Trace{ID: 1, Node: "n1", Start: at(t0, 0), Decoded: at(t0, 10), End: at(t0, 500), Index: 4, Returned: at(t0, 480), rec: r}
	r.Stored("n1", 4, 4, at(t0, 20), at(t0, 400))   // leader write, the longer
	r.Stored("n2", 4, 4, at(t0, 60), at(t0, 300))   // follower write, beside it
	r.Replicated("n2", at(t0, 30), at(t0, 340))     // answered before the leader's write ended
	r.Applied("n1", 4, 4, at(t0, 410), at(t0, 420)) // leader apply
	r.traces = append(r.traces, l)

	bs := r.Budgets()
	if len(bs) != 1 {
		t.Fatalf("%d budgets, want 1: %+v", len(bs), bs)
	}
	b := bs[0]
	want := map[Stage]int{HTTPIn: 10, Propose: 10, LeaderWrite: 380, QuorumWait: 0, Commit: 10, Apply: 10, Answer: 80}
	var sum time.Duration
	for s := Stage(0); s < NumStages; s++ {
		sum += b.Stages[s]
		if got := b.Stages[s]; got != time.Duration(want[s])*time.Microsecond {
			t.Errorf("%s = %v, want %dµs", s, got, want[s])
		}
	}
	if sum != b.Total {
		t.Errorf("stages sum to %v, total %v", sum, b.Total)
	}
	if b.FollowerSend != 10*time.Microsecond || b.FollowerOut != 30*time.Microsecond || b.FollowerWrite != 240*time.Microsecond || b.FollowerBack != 40*time.Microsecond {
		t.Errorf("follower path %v + %v + %v + %v", b.FollowerSend, b.FollowerOut, b.FollowerWrite, b.FollowerBack)
	}
}

// TestBudgets_SkipsIncomplete checks that a request without every record is left out, and
// that a trace of a request that proposed nothing is not a commit.
func TestBudgets_SkipsIncomplete(t *testing.T) {
	r := New()
	t0 := time.Now()
	(&Trace{ID: 1, Node: "n1", Start: t0, Decoded: at(t0, 1), rec: r}).Finish("GET /v1/cluster")
	(&Trace{ID: 2, Node: "n1", Start: t0, Decoded: at(t0, 1), Index: 3, rec: r}).Finish("PUT")
	r.Stored("n1", 3, 3, at(t0, 10), at(t0, 100)) // no follower, no apply
	if bs := r.Budgets(); len(bs) != 0 {
		t.Fatalf("budgets from incomplete records: %+v", bs)
	}
}

// TestNilRecorder checks that every hook is a no-op on a nil recorder or trace.
func TestNilRecorder(t *testing.T) {
	var r *Recorder
	tr := r.Start("n1")
	tr.MarkDecoded()
	tr.Proposed(1)
	tr.Finish("x")
	r.Stored("n1", 1, 1, time.Now(), time.Now())
	r.Applied("n1", 1, 1, time.Now(), time.Now())
	r.Replicated("n2", time.Now(), time.Now())
	if FromContext(context.Background()) != nil || tr != nil {
		t.Fatal("a nil recorder made a trace")
	}
}

func TestSummarize(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i))
	}
	if got := Summarize(s); got.N != 100 || got.P50 != 50 || got.P90 != 90 || got.P99 != 99 {
		t.Fatalf("Summarize = %+v", got)
	}
	if got := Summarize(nil); got.N != 0 {
		t.Fatalf("Summarize(nil) = %+v", got)
	}
}
