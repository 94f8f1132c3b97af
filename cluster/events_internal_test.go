package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/raftlock/raftlock/fsm"
)

// feed applies one entry at index with events on names.
func feed(s *stream, index uint64, names ...string) {
	for _, n := range names {
		s.observe(fsm.Event{Kind: fsm.EventHistory, Name: n, Index: index, History: fsm.HistoryEvent{Kind: fsm.HistoryGranted, Index: index}})
	}
	s.observe(fsm.Event{Kind: fsm.EventApplied, Index: index})
}

func next(t *testing.T, sub *Subscription) StreamEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	e, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStream_ResumeFilterAndCompaction(t *testing.T) {
	s := newStream(4, 2)
	feed(s, 1, "a/x")
	feed(s, 2, "b/y")
	feed(s, 3, "a/x", "a/z") // one entry, two events: one stream entry
	sub, err := s.subscribe("a/", 2)
	if err != nil {
		t.Fatal(err)
	}
	if e := next(t, sub); e.Index != 3 || len(e.Events) != 2 {
		t.Fatalf("first entry %+v", e)
	}
	feed(s, 4, "a/q")
	if e := next(t, sub); e.Index != 4 {
		t.Fatalf("live entry %+v", e)
	}
	// The backlog holds 4 events: entries 1 and 2 are gone now that 5 arrived.
	feed(s, 5, "c")
	var ce *IndexCompactedError
	if _, err := s.subscribe("", 1); !errors.As(err, &ce) || !errors.Is(err, ErrIndexCompacted) || ce.Oldest != 3 {
		t.Fatalf("from 1: %v", err)
	}
	// A second subscriber fits, a third does not.
	sub2, err := s.subscribe("", 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.subscribe("", 0); !errors.Is(err, ErrTooManySubscribers) {
		t.Fatalf("third subscriber: %v", err)
	}
	sub2.Close()
	// A reader that falls more than the backlog behind is dropped, after what it has.
	for i := uint64(6); i < 12; i++ {
		feed(s, i, "a/x")
	}
	var lag error
	for lag == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, lag = sub.Next(ctx)
		cancel()
	}
	if !errors.Is(lag, ErrSubscriberLagging) {
		t.Fatalf("lagging reader: %v", lag)
	}
	// A restore resets the stream.
	sub3, _ := s.subscribe("", 0)
	s.observe(fsm.Event{Kind: fsm.EventRestored, Index: 100})
	if _, err := sub3.Next(context.Background()); !errors.Is(err, ErrStreamReset) {
		t.Fatalf("after restore: %v", err)
	}
	if _, err := s.subscribe("", 100); !errors.Is(err, ErrIndexCompacted) {
		t.Fatalf("from 100 after restore at 100: %v", err)
	}
	if _, err := s.subscribe("", 101); err != nil {
		t.Fatal(err)
	}
}
