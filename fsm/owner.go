package fsm

import (
	"bytes"
	"sort"

	"github.com/raftlock/raftlock/internal/mutant"
)

// Lease ownership (protocol version 4).
//
// A lease belongs to the identity that created it (lease.creator). From version 4 on every
// command that uses a lease names its caller, and the check below runs at apply, in log
// order, on every replica alike: two callers racing on one lease ID are decided by the
// order of their entries, and the second is refused whatever the timing at the edge. A
// lease of another identity answers as a lease that does not exist, so the refusal says
// nothing of other identities' leases. A token's deletion revokes its leases in the same
// entry, so no lease outlives the credential that created it and no later entry can hand
// one a grant.

// ownerChecked reports whether the cluster checks lease ownership at apply.
func (s *state) ownerChecked() bool { return s.version >= 4 }

// mayUse checks, before c's handler runs, that its caller may use the lease it names, and
// sets r's refusal when not: StatusUnauthenticated for a caller that is no longer a token,
// StatusLeaseNotFound for a lease that is another identity's (it answers as one that does
// not exist). A Renew is checked per lease in renew.
func (s *state) mayUse(c *Command, r *Result) bool {
	if !s.ownerChecked() || !c.usesLease() {
		return true
	}
	if !s.callerLive(c.Creator) {
		r.Status = StatusUnauthenticated
		return false
	}
	if l := s.live(c.Lease); l != nil && !s.owns(l, c.Creator) {
		r.Status = StatusLeaseNotFound
		return false
	}
	return true
}

// callerLive reports whether caller still stands for an identity: the node itself or a
// cluster without ACLs (""), the anonymous caller, or an existing token.
func (s *state) callerLive(caller string) bool {
	return caller == "" || caller == CallerAnonymous || s.acl.tokens[caller] != nil
}

// owns reports whether caller may use lease l: l's creator, or anyone when l recorded
// none (made before version 3, or without ACLs), or the node itself (""), or a token with
// admin rights on the empty prefix (an operator cleaning up, as the API allows).
func (s *state) owns(l *lease, caller string) bool {
	if mutant.Is("lease-owner-unchecked") {
		return true
	}
	if l.creator == "" || caller == "" || l.creator == caller {
		return true
	}
	t := s.acl.tokens[caller]
	return t != nil && t.compiled != nil && t.compiled.access("") >= AccessAdmin
}

// renewAllowed reports whether the caller of a Renew's i-th lease may renew l.
func (s *state) renewAllowed(c *Command, i int, l *lease) bool {
	if !s.ownerChecked() || len(c.Callers) != len(c.Leases) {
		return true
	}
	return s.callerLive(c.Callers[i]) && s.owns(l, c.Callers[i])
}

// revokeLeasesOf revokes, in this entry, every lease that creator created: its token was
// deleted. They end as revoked leases do: out of every queue (their waiting requests are
// answered by the wait's end), their locks, permits and leaderships handed to the next
// waiters.
func (s *state) revokeLeasesOf(index uint64, creator string) {
	if !s.ownerChecked() || creator == "" || mutant.Is("token-delete-keeps-leases") {
		return
	}
	s.revokeLeases(index, func(l *lease) bool { return l.creator == creator })
}

// revokeOrphans revokes the leases whose creator is not a live token when version 4
// becomes active: tokens deleted before it left their leases behind.
func (s *state) revokeOrphans(index uint64) {
	s.revokeLeases(index, func(l *lease) bool { return l.creator != "" && !s.callerLive(l.creator) })
}

// revokeLeases removes the leases that match, in lease ID order so every replica hands
// their locks over alike.
func (s *state) revokeLeases(index uint64, match func(*lease) bool) {
	var ls []*lease
	for _, l := range s.leases {
		if match(l) {
			ls = append(ls, l)
		}
	}
	if len(ls) == 0 {
		return
	}
	sort.Slice(ls, func(i, j int) bool { return bytes.Compare(ls[i].id[:], ls[j].id[:]) < 0 })
	s.hist.endCause = HistoryRevoked
	s.removeLeases(index, ls)
}
