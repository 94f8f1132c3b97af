package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLease_DoneClosedOncePastSafeUntilBeforeTheWatchdog makes a lease whose safe time has
// passed while its watchdog has not run (as right after a pause of the whole process): Done
// must read closed and Err ErrLeaseLost at once, never "live".
func TestLease_DoneClosedOncePastSafeUntilBeforeTheWatchdog(t *testing.T) {
	c, err := New([]string{"http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lease{c: c, id: "0123456789abcdef0123456789abcdef", ttl: time.Second, ctx: ctx, cancel: cancel,
		loopDone: make(chan struct{}), done: make(chan struct{}), safeUntil: time.Now().Add(-time.Millisecond)}
	l.watchdog = time.AfterFunc(time.Hour, func() {}) // the watchdog has not run yet
	select {
	case <-l.Done():
	default:
		t.Fatal("Done reads live after SafeUntil passed")
	}
	if err := l.Err(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Err = %v; want ErrLeaseLost", err)
	}
}
