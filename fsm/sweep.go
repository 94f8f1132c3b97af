package fsm

import (
	"math"

	"github.com/raftlock/raftlock/internal/mutant"
	"github.com/raftlock/raftlock/leases"
)

// The sliced sweep (protocol version 6).
//
// Before version 6 the entry whose time passes a deadline ends everything that deadline
// ends, in that entry: every lease that expired with all it holds and waits for, every wait
// and maximum hold that ran out, and a deleted token's leases at once. One entry could so
// carry a tenant's 172,000 locks, or a fleet that died together, and stall every node's
// apply loop (and with it the leader's heartbeats) for seconds.
//
// From version 6 an entry does at most SweepBudget (256) units of that work (a unit: one wait
// ended, one grant ended, one lease removed, one maximum hold or lock delay ended), and
// the rest is carried to the following entries, in the same order: the waits whose
// deadline passed, in (deadline, name, lease) order, each primitive's in turn; then the
// ended leases, in (deadline, lease ID) order (a revoked lease takes the revocation's
// time as its deadline), then the leases of the deleted tokens, token by token in the
// order of deletion and each token's in lease ID order, and of each lease its waits, then
// its grants, each primitive's in name order, then the lease itself; then the maximum
// holds and lock delays that ran out. The leader proposes a tick as long as anything is
// left (NextDeadline), and the entry sweeps again after its command with what is left of
// the budget, so that a revoke or a token's deletion of a few leases is done in its own
// entry. The position of the sweep is the state itself (what is left is what is still
// there), so it is in every snapshot and every node carries on alike.
//
// Safety does not wait for the sweep. A lease is dead from the entry whose time reaches
// its deadline, that revokes it, or that deletes its creator's token (dead): every command
// treats it as gone (no keepalive renews it, no acquire, release or revoke uses it, a
// create of its ID is refused until it is swept), no handover grants it anything, reads
// show its grants as not held and the lease as not found, and the deadlock check ignores
// it. What the sweep has not reached yet is only late: a lock held by a dead lease is
// handed on when the sweep ends that grant (with a later token, as every handover has); a
// lock, permit or leadership whose next waiter is a dead lease stays with nobody (a lock
// is reserved, as for a lockset) until the sweep ends that wait and hands it to the next
// one; and a wait or maximum hold that ran out may be granted or released a few entries
// late. So every unit of work is the sweep's, counted against its budget: a handover never
// walks past ended waiters.

// SweepBudget is the most units of the sweep one entry does (protocol version 6): a unit
// is one wait ended, one grant ended (with its handover), one lease removed, or one
// maximum hold or lock delay ended. Every node applies every entry, and a neighbour's command
// waits behind each sweep entry on each: at 256 units an entry is about 0.7 ms of apply
// (BenchmarkSweep_EntryOfAMassExpiry), and in alternated runs of a 200,000-lock expiry on a
// loaded two-core machine the neighbour's p99 was 45-66 ms against 151-384 ms at 1,024 units,
// while all 200,000 still ended within 2-4 s, paced by the leader's ticks rather than by the
// apply (docs/PERFORMANCE.md, "Isolation between tenants"). Every node of a cluster must use
// the same budget, since it decides which entry ends what: a change to it is a change of the
// protocol version.
const SweepBudget = 256

// sweepState is what the sweep keeps in the state.
type sweepState struct {
	// revoking are the accessors of the tokens deleted while they had leases, in the
	// order of deletion, until the sweep has removed their last lease; revokingSet is
	// the same as a set (derived). Replicated from version 6.
	revoking    []string
	revokingSet map[string]struct{}
	// budget is the units left to the entry being applied (scratch), budgetMax what each
	// entry starts with: SweepBudget, lower in tests, the same on every node.
	budget, budgetMax int
}

// dead reports whether lease l has ended but is not yet swept (version 6; before it a lease
// that ends leaves the table in the same entry).
func (s *state) dead(l *lease) bool {
	if s.version < 6 {
		return false
	}
	if l.deadline <= s.time || l.revoked {
		return true
	}
	if l.creator == "" {
		return false
	}
	_, r := s.revokingSet[l.creator]
	return r
}

// deadID reports whether the lease id has ended (or is not in the table at all).
func (s *state) deadID(id LeaseID) bool {
	l := s.leases[id]
	return l == nil || s.dead(l)
}

// ended reports whether lease id is in the table but dead: a command that names it is
// answered as if it were gone.
func (s *state) ended(id LeaseID) bool {
	l := s.leases[id]
	return l != nil && s.dead(l)
}

// live returns lease id when it exists and has not ended: the lease every command acts on.
func (s *state) live(id LeaseID) *lease {
	if l := s.leases[id]; l != nil && !s.dead(l) {
		return l
	}
	return nil
}

// startBudget gives the entry being applied its units of sweep.
func (s *state) startBudget() {
	s.budget = s.budgetMax
	if s.budget <= 0 || mutant.Is("sweep-in-one-entry") {
		s.budget = math.MaxInt
	}
}

// spend takes one unit of the entry's budget, and reports false when none is left.
func (s *state) spend() bool {
	if s.budget <= 0 {
		return false
	}
	s.budget--
	return true
}

// popExpired pops the first key of t whose deadline has passed: from version 6 only while
// the entry has budget left, one unit each.
func (s *state) popExpired(t *leases.Table) (string, bool) {
	if s.version >= 6 && s.budget <= 0 {
		return "", false
	}
	k, ok := t.PopNextExpired(s.time)
	if ok && s.version >= 6 {
		s.budget--
	}
	return k, ok
}

// unitDone ends a unit of the sweep (version 6): the shared waiters and reserved locks it
// put at the head of a queue are granted at once (settle), so that what a unit hands over
// is decided before the next unit runs.
func (s *state) unitDone(index uint64) {
	if s.version >= 6 {
		s.settle(index)
	}
}

// sweep does the entry's share of the sweep (version 6), in the order the package comment
// above gives.
func (s *state) sweep(index uint64) {
	for i := range primitives {
		primitives[i].expireWaits(s, index)
	}
	s.sweepLeases(index)
	for i := range primitives {
		if p := &primitives[i]; p.expire != nil {
			p.expire(s, index)
		}
	}
	s.settle(index)
}

// sweepLeases ends dead leases, the next one first, while the budget lasts.
func (s *state) sweepLeases(index uint64) {
	for s.budget > 0 {
		l := s.nextDead()
		if l == nil || !s.sweepLease(index, l) {
			return
		}
	}
}

// nextDead returns the dead lease the sweep ends next: the first in (deadline, ID) order
// whose deadline has passed (a revoked lease's is the revocation's time), else the first
// lease, by ID, of the first token in revoking; nil when there is none.
func (s *state) nextDead() *lease {
	if k, d, ok := s.leaseExp.Next(); ok && d <= s.time {
		var id LeaseID
		copy(id[:], k)
		return s.leases[id]
	}
	for len(s.revoking) > 0 {
		if u := s.use[s.revoking[0]]; u != nil && u.ids != nil {
			if id, ok := u.ids.Min(); ok {
				return s.leases[id]
			}
		}
		s.unrevoke(s.revoking[0]) // nothing left of it: never reached, the last removal does it
	}
	return nil
}

// sweepLease ends what it can of dead lease l with the entry's budget: its waits, then its
// grants, each primitive's in name order, one unit each, then the lease itself. It reports
// whether the lease is gone (false: the budget ran out, and the next entry goes on).
func (s *state) sweepLease(index uint64, l *lease) bool {
	cause := HistoryExpired
	if _, r := s.revokingSet[l.creator]; l.revoked || r && l.creator != "" {
		cause = HistoryRevoked
	}
	for i := range primitives {
		p := &primitives[i]
		for _, name := range p.waits(l) {
			if !s.spend() {
				return false
			}
			p.leaveOne(s, index, name, l)
			s.unitDone(index)
		}
	}
	for i := range primitives {
		p := &primitives[i]
		for _, name := range p.grants(l) {
			if !s.spend() {
				return false
			}
			s.hist.endCause = cause
			p.dropOne(s, index, name, l)
			s.unitDone(index)
		}
	}
	if !s.spend() {
		return false
	}
	s.dropLease(l)
	return true
}

// dropLease takes lease l, which holds and waits for nothing any more, out of the table.
func (s *state) dropLease(l *lease) {
	delete(s.leases, l.id)
	s.detach(l)
	s.leaseExp.Delete(string(l.id[:]))
	l.prims = nil
	if _, r := s.revokingSet[l.creator]; r && s.use[l.creator] == nil {
		s.unrevoke(l.creator)
	}
}

// revokeLater revokes lease l (version 6): it is dead from this entry, and the sweep ends
// it, in this entry when the budget lasts. Its deadline becomes this entry's time, which
// is where the sweep finds it.
func (s *state) revokeLater(l *lease) {
	l.revoked = true
	l.deadline = s.time
	s.leaseExp.Set(string(l.id[:]), l.deadline)
}

// revokeCreator revokes every lease that accessor created, whose token was deleted in
// this entry (version 6): they are dead from this entry on, and the sweep ends them.
func (s *state) revokeCreator(accessor string) {
	if u := s.use[accessor]; accessor == "" || u == nil || u.leases == 0 || mutant.Is("token-delete-keeps-leases") {
		return
	}
	if _, r := s.revokingSet[accessor]; r {
		return
	}
	s.revoking = append(s.revoking, accessor)
	if s.revokingSet == nil {
		s.revokingSet = make(map[string]struct{})
	}
	s.revokingSet[accessor] = struct{}{}
}

// unrevoke forgets accessor, whose last lease the sweep has removed.
func (s *state) unrevoke(accessor string) {
	for i, a := range s.revoking {
		if a == accessor {
			s.revoking = append(s.revoking[:i:i], s.revoking[i+1:]...)
			break
		}
	}
	delete(s.revokingSet, accessor)
}

// revokingToken reports whether accessor's leases are still being revoked, so that no
// token is made with it again until they are gone: its leases would come back to life.
func (s *state) revokingToken(accessor string) bool {
	_, r := s.revokingSet[accessor]
	return r
}

// The sweep's part of snapshot format 5 (version 6), right after the leases, each of which
// carries a flags byte there (1: revoked):
//
//	revoking: the accessors of the tokens whose leases are being revoked, in order

// appendRevoking writes the revoking tokens.
func (s *state) appendRevoking(buf []byte) []byte { return appendStrings(buf, s.revoking) }

// decodeRevoking reads what appendRevoking wrote, right after the leases, so that which
// leases are dead is known to the checks of the parts that follow; checkRevoking checks
// it once the leases are counted.
func (s *state) decodeRevoking(d *decoder) error {
	for _, acc := range d.strings() {
		if acc == "" || s.revokingToken(acc) {
			return badSnapshot("revoking token %q: empty or twice", acc)
		}
		s.revoking = append(s.revoking, acc)
		if s.revokingSet == nil {
			s.revokingSet = make(map[string]struct{})
		}
		s.revokingSet[acc] = struct{}{}
	}
	return nil
}

// checkRevoking refuses a revoking token that created no lease or that is a token again:
// no sequence of commands makes those.
func (s *state) checkRevoking() error {
	for _, acc := range s.revoking {
		if s.use[acc] == nil || s.acl.tokens[acc] != nil {
			return badSnapshot("revoking token %q: without leases, or a token", acc)
		}
	}
	return nil
}

// leaseFlags is the flags byte of a lease record in snapshot format 5.
func (l *lease) flags() byte {
	if l.revoked {
		return 1
	}
	return 0
}

// appendLeaseFlags appends lease l's flags from version 6.
func (s *state) appendLeaseFlags(buf []byte, l *lease) []byte {
	if s.version < 6 {
		return buf
	}
	return append(buf, l.flags())
}

// decodeLeaseFlags reads what appendLeaseFlags wrote.
func (s *state) decodeLeaseFlags(d *decoder, l *lease) {
	if s.version < 6 {
		return
	}
	l.revoked = d.bool()
}

// waitsForEnded reports whether the waiter w belongs to a lease that ended (version 6):
// a handover does not grant it, and waits for the sweep to end that wait.
func (s *state) waitsForEnded(w *waiter) bool {
	return s.version >= 6 && w != nil && s.deadID(w.lease)
}
