package cluster

import (
	"sync"

	"github.com/raftlock/raftlock/fsm"
)

// faults makes a node's own proposals fail on purpose, so that tests can show that the
// leader retries its duties and hands leadership over when it cannot perform them. Only
// tests set it (through export_test.go); a real node's pointer is nil and costs one check.
type faults struct {
	mu sync.Mutex
	// failTicks is how many more Tick proposals fail; negative means all of them.
	failTicks int
	err       error
}

// apply returns the injected error for c, if any.
func (f *faults) apply(c *fsm.Command) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Type != fsm.TypeTick || f.failTicks == 0 {
		return nil
	}
	if f.failTicks > 0 {
		f.failTicks--
	}
	return f.err
}
