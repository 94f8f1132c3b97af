package transport

import (
	"encoding/hex"
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

// The parts of a cycle as the state machine describes it (cluster.DeadlockError.Described,
// a history's deadlock_refused detail): "lease F waits for lock N (held or asked for ahead
// of it by lease F), which waits for lock N (...)".
const (
	cycleFirst = "lease "
	cycleWaits = " waits for lock "
	cycleAhead = " (held or asked for ahead of it by lease "
	cycleNext  = "), which waits for lock "
	cycleEnd   = ")"
)

// describeCycleFor writes a wait-for cycle as the state machine describes it, for a caller
// that may read the names may accepts: a lock it may not read is hiddenLock, and a lease is
// hiddenLease unless one of the two locks the cycle ties it to (the one it waits for, the
// one it holds or is queued ahead on) is readable, since that lock's history shows its
// fingerprint anyway. With every name readable the text is the state machine's.
func describeCycleFor(cycle []cluster.CycleStep, may func(string) bool) string {
	n := len(cycle)
	readable := make([]bool, n)
	for i, st := range cycle {
		readable[i] = may(st.Lock)
	}
	lease := func(i int) string {
		i %= n
		if readable[i] || readable[(i+n-1)%n] {
			return "lease " + cycle[i].Lease.String()
		}
		return hiddenLease
	}
	lock := func(i int) string {
		if readable[i] {
			return "lock " + cycle[i].Lock
		}
		return hiddenLock
	}
	var b strings.Builder
	for i := range cycle {
		if i > 0 {
			b.WriteString(", which ")
		} else {
			b.WriteString(lease(0) + " ")
		}
		b.WriteString("waits for " + lock(i) + " (held or asked for ahead of it by " + lease(i+1) + ")")
	}
	return b.String()
}

// parseCycle reads a described cycle back into its steps, cutting at every place the
// text's separators occur (the finest reading). The text alone cannot say whether a
// lock name contains a separator (every cycle of n steps also reads as fewer steps with
// longer names), so a name that contains one comes back in pieces: a piece is then shown
// only when the caller may read it as a name of its own, and a name without separators is
// always one piece (docs/SECURITY.md, "Names in messages"). ok is false for a text that is
// not such a cycle.
func parseCycle(text string) (cycle []cluster.CycleStep, ok bool) {
	rest, found := strings.CutPrefix(text, cycleFirst)
	if !found {
		return nil, false
	}
	first, rest, found := cutFingerprint(rest)
	if !found {
		return nil, false
	}
	if rest, found = strings.CutPrefix(rest, cycleWaits); !found {
		return nil, false
	}
	lease := first
	for from := 0; ; {
		j := strings.Index(rest[from:], cycleAhead)
		if j < 0 {
			return nil, false
		}
		name := rest[:from+j]
		next, tail, ok := cutFingerprint(rest[from+j+len(cycleAhead):])
		from += j + 1
		if !ok {
			continue
		}
		if tail == cycleEnd && next == first {
			return append(cycle, cluster.CycleStep{Lease: lease, Lock: name}), true
		}
		if t, ok := strings.CutPrefix(tail, cycleNext); ok {
			cycle = append(cycle, cluster.CycleStep{Lease: lease, Lock: name})
			lease, rest, from = next, t, 0
		}
	}
}

// cutFingerprint reads a lease fingerprint at the start of s.
func cutFingerprint(s string) (cluster.Fingerprint, string, bool) {
	var f cluster.Fingerprint
	if len(s) < 2*len(f) {
		return f, s, false
	}
	if _, err := hex.Decode(f[:], []byte(s[:2*len(f)])); err != nil || strings.ToLower(s[:2*len(f)]) != s[:2*len(f)] {
		return f, s, false
	}
	return f, s[2*len(f):], true
}

// detailFor is a history event's cycle text (deadlock_refused) as a caller that may read
// what may accepts sees it: describeCycleFor of the parsed cycle, or, for a text that
// does not parse, a sentence that names nothing.
func detailFor(detail string, may func(string) bool) string {
	cycle, ok := parseCycle(detail)
	if !ok {
		return "a cycle of waiting leases through " + hiddenLock
	}
	return describeCycleFor(cycle, may)
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
