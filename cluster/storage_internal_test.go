package cluster

import (
	"testing"
	"time"
)

// The gate makes the stable store's close wait for a write in progress, and holds a write
// that comes after the close instead of letting it fail (raft panics on a failed term
// save, which its heartbeat goroutines can attempt after Shutdown).
func TestCloseGate_OrdersWritesBeforeClose(t *testing.T) {
	var g closeGate
	exit := g.enter()
	closed := make(chan struct{})
	go func() { g.close(); close(closed) }()
	if closesWithin(closed, 50*time.Millisecond) {
		t.Fatal("close returned while a write was in progress")
	}
	exit()
	if !closesWithin(closed, 5*time.Second) {
		t.Fatal("close did not return once the write ended")
	}
	late := make(chan struct{})
	go func() { g.enter(); close(late) }()
	if closesWithin(late, 50*time.Millisecond) {
		t.Fatal("a write after the close was let through")
	}
}

// closesWithin reports whether ch is closed before d has passed.
func closesWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}
