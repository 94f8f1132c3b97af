package raft

// raftlock: this file is not part of hashicorp/raft v1.7.3. See RAFTLOCK.md.

// mayStand asks Config.CandidacyCheck whether this follower may stand for election.
//
// Why: a node whose log store fails some writes and not others (a full disk takes a small
// entry into a page it already holds and refuses the next) can win an election, commit
// its no-op, fail its next write and step down, over and over: a follower that steps down
// stands again at its first heartbeat timeout, sooner than the others notice the leader
// is gone, and its log is as long as theirs. Every write of the cluster then waits on the
// one node that cannot store it. Declining to stand is always safe in Raft (it only
// delays an election); the application says when its store takes writes again.
func (r *Raft) mayStand() error {
	check := r.config().CandidacyCheck
	if check == nil {
		return nil
	}
	return check()
}
