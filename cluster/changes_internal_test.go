package cluster

import (
	"fmt"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

func changed(c *changes, index uint64, names ...string) {
	for _, n := range names {
		c.observe(fsm.Event{Kind: fsm.EventLockChanged, Space: fsm.SpaceSemaphore, Name: n, Index: index})
	}
}

func fired(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A watch of a prefix fires at once for a change under it after its index that the ring
// holds, later for the next such change, never for a change elsewhere or at an index it
// has seen; once the ring no longer covers its index, at once; and at a restore.
func TestChanges_PrefixWatch(t *testing.T) {
	c := newChanges()
	changed(c, 5, "jobs/a", "db/x")
	if ch, _ := c.watch("jobs/", 4); !fired(ch) {
		t.Fatal("a change at 5 under jobs/ does not answer a wait after 4")
	}
	ch, cancel := c.watch("jobs/", 5)
	if fired(ch) {
		t.Fatal("a wait after 5 fired for the change at 5")
	}
	changed(c, 6, "db/y")
	if fired(ch) {
		t.Fatal("a change of db/y fired a watch of jobs/")
	}
	changed(c, 7, "jobs/b")
	if !fired(ch) || c.count() != 0 {
		t.Fatal("a change of jobs/b at 7 did not fire the watch")
	}
	cancel()
	// A refusal of the deadlock detector wakes it too (the overview lists refusals).
	ch, cancel = c.watch("jobs/", 7)
	c.observe(fsm.Event{Kind: fsm.EventHistory, Name: "jobs/c", Index: 8, History: fsm.HistoryEvent{Kind: fsm.HistoryGranted}})
	if fired(ch) {
		t.Fatal("a history event other than a refusal fired the watch")
	}
	c.observe(fsm.Event{Kind: fsm.EventHistory, Name: "jobs/c", Index: 8, History: fsm.HistoryEvent{Kind: fsm.HistoryDeadlock}})
	if !fired(ch) {
		t.Fatal("a refusal on jobs/c did not fire the watch")
	}
	cancel()
	ch, cancel = c.watch("", 8)
	cancel()
	if c.count() != 0 || fired(ch) {
		t.Fatal("a cancelled watch stays")
	}
	// The ring wraps: a wait after an index it no longer covers is answered at once.
	for i := 0; i < changeRing+10; i++ {
		changed(c, uint64(100+i), fmt.Sprint("z/", i))
	}
	if ch, _ := c.watch("jobs/", 50); !fired(ch) {
		t.Fatal("a wait after an index the ring lost did not answer at once")
	}
	if ch, _ := c.watch("jobs/", uint64(100+changeRing+9)); fired(ch) {
		t.Fatal("a wait after the newest change fired")
	}
	ch, _ = c.watch("jobs/", uint64(100+changeRing+9))
	c.observe(fsm.Event{Kind: fsm.EventRestored, Index: 1 << 20})
	if !fired(ch) {
		t.Fatal("a restore did not wake the watch")
	}
	if ch, _ := c.watch("jobs/", 1000); !fired(ch) {
		t.Fatal("a wait after an index below the restored one did not answer at once")
	}
}

// The stream carries the events of the namespaces a subscriber asks for; by default
// locks only, so that a subscriber of before sees what it saw.
func TestStream_Spaces(t *testing.T) {
	s := newStream(100, 4)
	locks, _ := s.subscribe("", 0)
	all, _ := s.subscribe("", 0, fsm.SpaceLock, fsm.SpaceSemaphore, fsm.SpaceElection)
	sems, _ := s.subscribe("db/", 0, fsm.SpaceSemaphore)
	s.observe(fsm.Event{Kind: fsm.EventHistory, Space: fsm.SpaceSemaphore, Name: "db/pool", Index: 1, History: fsm.HistoryEvent{Kind: fsm.HistoryPermitGranted, Index: 1}})
	s.observe(fsm.Event{Kind: fsm.EventHistory, Space: fsm.SpaceElection, Name: "db/leader", Index: 1, History: fsm.HistoryEvent{Kind: fsm.HistoryElected, Index: 1}})
	s.observe(fsm.Event{Kind: fsm.EventApplied, Index: 1})
	feed(s, 2, "db/lock")
	if e := next(t, locks); e.Index != 2 || len(e.Events) != 1 || e.Events[0].Space != fsm.SpaceLock {
		t.Fatalf("the lock subscriber's first entry: %+v", e)
	}
	if e := next(t, all); e.Index != 1 || len(e.Events) != 2 || e.Events[0].Space != fsm.SpaceSemaphore || e.Events[1].Space != fsm.SpaceElection {
		t.Fatalf("every namespace: %+v", e)
	}
	if e := next(t, all); e.Index != 2 {
		t.Fatalf("every namespace, second entry: %+v", e)
	}
	if e := next(t, sems); e.Index != 1 || len(e.Events) != 1 || e.Events[0].Name != "db/pool" {
		t.Fatalf("semaphores under db/: %+v", e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(sems.queue) != 0 {
		t.Fatalf("semaphores under db/ got %+v", sems.queue)
	}
}
