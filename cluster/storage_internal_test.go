package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// A node stands for election while its writes succeed; after a failed write only when the
// probe of its data directory succeeds; after a failed fsync never.
func TestStorageHealth_MayStandOnlyWhenItCanWrite(t *testing.T) {
	h := newStorageHealth()
	probed := 0
	var probeErr error
	probe := func() error { probed++; return probeErr }
	if err := h.mayStand(probe); err != nil || probed != 0 {
		t.Fatalf("healthy: %v (probed %d times), want nil without a probe", err, probed)
	}
	h.record(syscall.ENOSPC)
	probeErr = syscall.ENOSPC
	err := h.mayStand(probe)
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "test write still fails") {
		t.Fatalf("after a failed write, probe failing: %v, want ErrStorage naming the probe", err)
	}
	probeErr = nil
	if err := h.mayStand(probe); err != nil {
		t.Fatalf("after a failed write, probe succeeding: %v, want nil", err)
	}
	h.record(nil)
	if err := h.mayStand(probe); err != nil {
		t.Fatalf("after a write succeeded again: %v", err)
	}
	h.fail(syscall.EIO)
	if err := h.mayStand(probe); !errors.Is(err, ErrStorage) {
		t.Fatalf("after a failed fsync: %v, want ErrStorage although the probe succeeds", err)
	}
}

// The probe writes into the data directory and leaves nothing there; it fails when the file
// system has less room than the log needs.
func TestProbeDataDir(t *testing.T) {
	dir := t.TempDir()
	if err := probeDataDir(dir, 1<<20); err != nil {
		t.Fatalf("probe of an empty temporary directory: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the probe left %d files", len(left))
	}
	if err := probeDataDir(dir, 1<<62); err == nil || !strings.Contains(err.Error(), "bytes free") {
		t.Fatalf("probe asking for 4 EiB: %v, want too little room", err)
	}
	if err := probeDataDir(filepath.Join(dir, "missing"), 0); err == nil {
		t.Fatal("probe of a missing directory succeeded")
	}
}
