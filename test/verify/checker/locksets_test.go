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

func withDelay(o Op, ms int64) Op { o.LockDelayMs = ms; return o }

// created is the set workload's creation of owner's lease with ttl ms, called at call ms.
func created(owner string, ttl, call int64) Op {
	return Op{Workload: "set", Kind: KindCreateLease, Owner: owner, TTLMs: ttl, Call: call * msec, Return: (call + 1) * msec, Outcome: OutOK}
}

func TestCheckLockSets_LockDelay(t *testing.T) {
	holder := func() []Op {
		return []Op{created("A", 500, 0), withDelay(sop(KindAcquire, "a", "A", 5, 2, 3, OutOK), 1000)}
	}
	revoke := func(call int64) Op { return sop(KindRevoke, "", "A", 0, call, call+10, OutOK) }
	cases := []struct {
		verdictCase
		waits int // LockDelayWaits
	}{
		{verdictCase{"a waiter granted the delay after the revoke", append(holder(),
			sop(KindAcquire, "a", "B", 9, 4, 1200, OutOK), revoke(100), sstatus("a", "B", 9, 1201, 1202)), true}, 1},
		{verdictCase{"a waiter granted before the revoke's delay is over", append(holder(),
			sop(KindAcquire, "a", "B", 9, 4, 300, OutOK), revoke(100)), false}, 1},
		{verdictCase{"a release starts no delay", append(holder(),
			sop(KindRelease, "a", "A", 5, 100, 110, OutOK), sop(KindAcquire, "a", "B", 9, 4, 120, OutOK)), true}, 0},
		{verdictCase{"a waiter granted the delay after the lease's earliest expiry", append(holder(),
			sop(KindAcquire, "a", "B", 9, 4, 1600, OutOK)), true}, 1},
		{verdictCase{"a waiter granted before the expired lease's delay is over", append(holder(),
			sop(KindAcquire, "a", "B", 9, 4, 1200, OutOK)), false}, 1},
		{verdictCase{"the lock stays free in the delay, and is read so", append(holder(),
			revoke(100), sstatus("a", "", 0, 200, 210), sop(KindAcquire, "a", "B", 9, 150, 1150, OutOK)), true}, 1},
		{verdictCase{"a maximum hold's end starts no delay", []Op{created("A", 120000, 0),
			withHold(withDelay(sop(KindAcquire, "a", "A", 5, 2, 3, OutOK), 1000), 100),
			sop(KindAcquire, "a", "B", 9, 4, 150, OutOK), sop(KindRelease, "a", "A", 5, 160, 161, OutNotHolder)}, true}, 0},
	}
	for _, c := range cases {
		checkVerdicts(t, []verdictCase{c.verdictCase}, CheckLockSets)
		if n := LockDelayWaits(number(c.ops)); n != c.waits {
			t.Errorf("%s: LockDelayWaits = %d, want %d", c.name, n, c.waits)
		}
	}
}
