package transport

import (
	"errors"
	"net/http"
	"strings"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// Words that stand, in a deadlock's cycle, for what the caller may not read.
const (
	hiddenLock  = "a lock outside your prefixes"
	hiddenLease = "a lease outside your prefixes"
)

// hiddenCycle is a refusal recorded before protocol version 8 as a caller with ACLs on
// reads it: its history kept the cycle as text only, which cannot be cut back into names
// without guessing (a lock name may contain the text's words), so it names nothing.
const hiddenCycle = "a cycle of waiting leases, recorded before protocol version 8: its locks and leases are shown only with ACLs off"

// shownCycle is a wait-for cycle as a caller that may read the names may accepts (nil:
// every name) sees it, step by step: a lock it may not read is left out (Hidden), and so
// is a lease unless one of the two locks the cycle ties it to (the one it waits for, the
// one it holds or is queued ahead on: the previous step's) is readable, since that lock's
// history shows its fingerprint anyway.
func shownCycle(cycle []cluster.CycleStep, may func(string) bool) []api.CycleStep {
	n := len(cycle)
	out := make([]api.CycleStep, n)
	for i, st := range cycle {
		out[i] = api.CycleStep{LeaseFingerprint: st.Lease.String(), Lock: st.Lock}
		if may != nil && !may(st.Lock) {
			out[i].Lock, out[i].Hidden = "", true
			if !may(cycle[(i+n-1)%n].Lock) {
				out[i].LeaseFingerprint = ""
			}
		}
	}
	return out
}

// describeCycleFor writes a wait-for cycle as the state machine describes it
// (fsm.DescribeCycle), with what shownCycle leaves out as hiddenLock and hiddenLease. With
// every name readable the text is the state machine's.
func describeCycleFor(cycle []cluster.CycleStep, may func(string) bool) string {
	shown := shownCycle(cycle, may)
	lease := func(i int) string {
		if fp := shown[i%len(shown)].LeaseFingerprint; fp != "" {
			return "lease " + fp
		}
		return hiddenLease
	}
	var b strings.Builder
	for i, st := range shown {
		if i > 0 {
			b.WriteString(", which ")
		} else {
			b.WriteString(lease(0) + " ")
		}
		lock := hiddenLock
		if !st.Hidden {
			lock = "lock " + st.Lock
		}
		b.WriteString("waits for " + lock + " (held or asked for ahead of it by " + lease(i+1) + ")")
	}
	return b.String()
}

// cycleText is a refusal's cycle as its history keeps it (deadlock_refused), in words for
// a caller that may read the names may accepts (nil: every name): its steps as
// describeCycleFor writes them; for a refusal recorded before version 8, which kept the
// text only, that text with ACLs off and hiddenCycle with ACLs on (docs/DECISIONS.md,
// "Deadlock cycles kept as steps").
func cycleText(c *cluster.RecordedCycle, may func(string) bool) string {
	switch {
	case c == nil:
		return ""
	case c.Steps != nil:
		return describeCycleFor(c.Steps, may)
	case may == nil:
		return c.Text
	}
	return hiddenCycle
}

// mayRead returns the names the caller of r may read, nil with ACLs off (every name).
func (g *guard) mayRead(r *http.Request) func(string) bool {
	if !g.on {
		return nil
	}
	return g.reader(r)
}

// deadlockFor is err with a deadlock's cycle written for the caller of r: names and
// fingerprints outside its prefixes left out (ACLs on); other errors are unchanged.
func (s *Server) deadlockFor(r *http.Request, err error) error {
	var dl *cluster.DeadlockError
	if !s.cfg.ACL || !errors.As(err, &dl) {
		return err
	}
	return deadlockError(describeCycleFor(dl.Cycle, s.auth.reader(r)))
}

// deadlockError is the API's answer to a refused wait, whose cycle is described.
func deadlockError(cycle string) *api.Error {
	return api.Errorf(api.CodeDeadlock, "waiting would close a cycle of waiting leases: %s; nothing was queued. Release a lock of the cycle, or ask for all of them at once with POST /v1/locksets", cycle)
}
