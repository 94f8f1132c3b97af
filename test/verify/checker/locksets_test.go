package checker

import "testing"

// set builds a lockset op of the set workload: names, and the answer's tokens.
func set(kind, owner string, names []string, tokens []uint64, call, ret int64, outcome string, held ...string) Op {
	return Op{Workload: "set", Kind: kind, Owner: owner, Names: names, Tokens: tokens, HeldNames: held,
		Call: call * msec, Return: ret * msec, Outcome: outcome}
}

// sop builds a single-lock op of the set workload on lock.
func sop(kind, lock, owner string, token uint64, call, ret int64, outcome string) Op {
	return Op{Workload: "set", Kind: kind, Lock: lock, Owner: owner, Token: token, Call: call * msec, Return: ret * msec, Outcome: outcome}
}

func sstatus(lock, owner string, token uint64, call, ret int64) Op {
	o := sop(KindStatus, lock, "", token, call, ret, OutOK)
	o.Held, o.StatusOwner = owner != "", owner
	return o
}

func withHold(o Op, ms int64) Op { o.MaxHoldMs = ms; return o }

func TestCheckLockSets_Verdicts(t *testing.T) {
	ab, bc := []string{"a", "b"}, []string{"b", "c"}
	cases := []verdictCase{
		{"a set, read, released whole; the next set waits and gets a higher token", []Op{
			set(KindLockSet, "A", ab, []uint64{5, 5}, 0, 10, OutOK), sstatus("a", "A", 5, 11, 12),
			set(KindLockSet, "B", bc, []uint64{9, 9}, 13, 40, OutOK),
			set(KindLockSetRelease, "A", ab, []uint64{5, 5}, 20, 30, OutOK),
			sstatus("b", "B", 9, 41, 42), sstatus("a", "", 0, 43, 44),
		}, true},
		{"a refused set took nothing", []Op{
			sop(KindAcquire, "b", "B", 4, 0, 1, OutOK),
			set(KindLockSet, "A", ab, nil, 2, 3, OutHeld, "b"), sstatus("a", "", 0, 4, 5),
			sop(KindAcquire, "a", "C", 7, 6, 7, OutOK),
		}, true},
		{"a partial grant: the free lock of a refused set is held afterwards", []Op{
			sop(KindAcquire, "b", "B", 4, 0, 1, OutOK),
			set(KindLockSet, "A", ab, nil, 2, 3, OutHeld, "b"), sstatus("a", "A", 6, 4, 5),
		}, false},
		{"a refusal names a lock nobody holds, while another lock of it is held", []Op{
			sop(KindAcquire, "b", "B", 4, 0, 1, OutOK),
			set(KindLockSet, "A", ab, nil, 2, 3, OutHeld, "a"),
		}, false},
		{"two holders of one lock of a set", []Op{
			set(KindLockSet, "A", ab, []uint64{5, 5}, 0, 10, OutOK), sop(KindAcquire, "b", "B", 7, 11, 12, OutOK),
		}, false},
		{"a set's tokens from two commits", []Op{
			set(KindLockSet, "A", ab, []uint64{5, 6}, 0, 10, OutOK),
		}, false},
		{"a set release refused names the lock not held; the other stays held", []Op{
			set(KindLockSet, "A", ab, []uint64{5, 5}, 0, 10, OutOK), sop(KindRelease, "a", "A", 5, 11, 12, OutOK),
			set(KindLockSetRelease, "A", ab, []uint64{5, 5}, 13, 14, OutNotHolder, "a"), sstatus("b", "A", 5, 15, 16),
		}, true},
		{"a set release refused but a lock it did not name was released", []Op{
			set(KindLockSet, "A", ab, []uint64{5, 5}, 0, 10, OutOK), sop(KindRelease, "a", "A", 5, 11, 12, OutOK),
			set(KindLockSetRelease, "A", ab, []uint64{5, 5}, 13, 14, OutNotHolder, "a"), sstatus("b", "", 0, 15, 16),
		}, false},
	}
	checkVerdicts(t, cases, CheckLockSets)
}

func TestCheckLockSets_MaxHold(t *testing.T) {
	cases := []verdictCase{
		{"the hold ends at its maximum: a waiter gets a higher token, the old release is not_holder", []Op{
			withHold(sop(KindAcquire, "a", "A", 5, 0, 1, OutOK), 100), sop(KindAcquire, "a", "B", 9, 2, 150, OutOK),
			sop(KindRelease, "a", "A", 5, 160, 161, OutNotHolder), sstatus("a", "B", 9, 162, 163),
		}, true},
		{"the hold may last past its maximum (cluster time stood still)", []Op{
			withHold(sop(KindAcquire, "a", "A", 5, 0, 1, OutOK), 100), sstatus("a", "A", 5, 300, 301),
			sop(KindRelease, "a", "A", 5, 302, 303, OutOK),
		}, true},
		{"a lockset's maximum hold ends each of its locks", []Op{
			withHold(set(KindLockSet, "A", []string{"a", "b"}, []uint64{5, 5}, 0, 1, OutOK), 100),
			sop(KindAcquire, "b", "B", 9, 2, 150, OutOK), sstatus("a", "", 0, 151, 152),
		}, true},
		{"a second holder after the maximum while the first's release still succeeds", []Op{
			withHold(sop(KindAcquire, "a", "A", 5, 0, 1, OutOK), 100), sop(KindAcquire, "a", "B", 9, 2, 150, OutOK),
			sop(KindRelease, "a", "A", 5, 160, 161, OutOK),
		}, false},
		{"a second holder before the maximum could end", []Op{
			withHold(sop(KindAcquire, "a", "A", 5, 0, 1, OutOK), 100), sop(KindAcquire, "a", "B", 9, 2, 50, OutOK),
		}, false},
		{"without a maximum hold nothing ends the grant", []Op{
			sop(KindAcquire, "a", "A", 5, 0, 1, OutOK), sop(KindAcquire, "a", "B", 9, 2, 500, OutOK),
		}, false},
		{"the ended hold's token is still the floor", []Op{
			withHold(sop(KindAcquire, "a", "A", 5, 0, 1, OutOK), 100), sop(KindAcquire, "a", "B", 4, 2, 150, OutOK),
		}, false},
	}
	checkVerdicts(t, cases, CheckLockSets)
}
