package leases

import (
	"testing"
	"time"
)

// fakeElapsed is an injected monotonic source that a test moves by hand.
type fakeElapsed struct{ d time.Duration }

func (f *fakeElapsed) get() time.Duration { return f.d }

func TestClock_StoppedUntilStart(t *testing.T) {
	c := NewClock(nil)
	if _, ok := c.Now(); ok {
		t.Fatal("a new clock reports a time before Start")
	}
	c.Start(42)
	if now, ok := c.Now(); !ok || now < 42 {
		t.Fatalf("Now = %d,%v after Start(42)", now, ok)
	}
	c.Stop()
	if _, ok := c.Now(); ok {
		t.Fatal("a stopped clock reports a time")
	}
}

func TestClock_BasePlusElapsed(t *testing.T) {
	f := &fakeElapsed{d: 5 * time.Second}
	c := NewClock(f.get)
	c.Start(1000)
	if now, _ := c.Now(); now != 1000 {
		t.Fatalf("Now right after Start = %d, want 1000", now)
	}
	f.d += 1500*time.Millisecond + 900*time.Microsecond
	if now, _ := c.Now(); now != 2500 {
		t.Fatalf("Now after 1.5009s = %d, want 2500 (truncated, never rounded up)", now)
	}
}

func TestClock_NeverBackwards(t *testing.T) {
	f := &fakeElapsed{}
	c := NewClock(f.get)
	c.Start(0)
	f.d = 3 * time.Second
	first, _ := c.Now()
	f.d = time.Second // a misbehaving source
	if second, _ := c.Now(); second < first {
		t.Fatalf("clock went backwards: %d then %d", first, second)
	}
}

func TestClock_RestartTakesNewBase(t *testing.T) {
	f := &fakeElapsed{}
	c := NewClock(f.get)
	c.Start(0)
	f.d = 10 * time.Second
	c.Stop()
	// A later term starts from the newest time in the log, whatever the old reading was.
	c.Start(7000)
	if now, _ := c.Now(); now != 7000 {
		t.Fatalf("Now after Start(7000) = %d", now)
	}
}

func TestClock_RealMonotonicAdvances(t *testing.T) {
	c := NewClock(nil)
	c.Start(0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if now, _ := c.Now(); now > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("real clock did not advance within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
