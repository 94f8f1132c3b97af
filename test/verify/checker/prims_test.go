package checker

import "testing"

// pop builds an op of the workload w on name "N".
func pop(w, kind, owner string, token uint64, call, ret int64, outcome string) Op {
	return Op{Workload: w, Kind: kind, Lock: "N", Owner: owner, Token: token, Call: call * msec, Return: ret * msec, Outcome: outcome}
}

func withMode(o Op, mode string) Op     { o.Mode = mode; return o }
func withLimit(o Op, limit int64) Op    { o.Limit = limit; return o }
func withValue(o Op, value string) Op   { o.Value = value; return o }
func withHolders(o Op, hs ...Holder) Op { o.Holders = hs; o.Held = len(hs) > 0; return o }

func TestCheckSharedLocks_Verdicts(t *testing.T) {
	acq := func(owner, mode string, tok uint64, call, ret int64, out string) Op {
		return withMode(pop("rw", KindAcquire, owner, tok, call, ret, out), mode)
	}
	status := func(mode string, call, ret int64, hs ...Holder) Op {
		return withMode(withHolders(pop("rw", KindStatus, "", 0, call, ret, OutOK), hs...), mode)
	}
	cases := []verdictCase{
		{"two readers, then a writer", []Op{
			acq("a", "shared", 5, 0, 10, OutOK), acq("b", "shared", 6, 11, 12, OutOK),
			status("shared", 13, 14, Holder{"a", 5}, Holder{"b", 6}),
			acq("w", "exclusive", 0, 15, 16, OutHeld), acq("a", "exclusive", 0, 17, 18, OutModeConflict),
			pop("rw", KindRelease, "a", 5, 19, 20, OutOK), pop("rw", KindRelease, "b", 6, 21, 22, OutOK),
			acq("w", "exclusive", 9, 23, 24, OutOK), acq("c", "shared", 0, 25, 26, OutHeld),
		}, true},
		{"a reader beside a writer", []Op{
			acq("w", "exclusive", 5, 0, 10, OutOK), acq("a", "shared", 6, 11, 12, OutOK),
		}, false},
		{"a writer beside a reader", []Op{
			acq("a", "shared", 5, 0, 10, OutOK), acq("w", "exclusive", 6, 11, 12, OutOK),
		}, false},
		{"a read misses a holder", []Op{
			acq("a", "shared", 5, 0, 10, OutOK), acq("b", "shared", 6, 11, 12, OutOK),
			status("shared", 13, 14, Holder{"a", 5}),
		}, false},
		{"a reader refused while only readers hold", []Op{
			acq("a", "shared", 5, 0, 10, OutOK), acq("b", "shared", 0, 11, 12, OutHeld),
		}, false},
		{"an ambiguous reader that took effect", []Op{
			acq("w", "exclusive", 0, 0, 10, OutAmbiguous), acq("a", "shared", 0, 11, 12, OutAmbiguous),
			status("shared", 13, 14, Holder{"a", 8}), pop("rw", KindRevoke, "a", 0, 15, 16, OutOK),
			pop("rw", KindRevoke, "w", 0, 17, 18, OutOK), acq("b", "exclusive", 11, 19, 20, OutOK),
		}, true},
		{"a token below one granted before", []Op{
			acq("a", "shared", 5, 0, 10, OutOK), acq("b", "shared", 4, 11, 12, OutOK),
		}, false},
	}
	checkVerdicts(t, cases, CheckSharedLocks)
}

func TestCheckSemaphores_Verdicts(t *testing.T) {
	acq := func(owner string, limit int64, tok uint64, call, ret int64, out string) Op {
		return withLimit(pop("sem", KindSemAcquire, owner, tok, call, ret, out), limit)
	}
	status := func(limit int64, call, ret int64, hs ...Holder) Op {
		return withLimit(withHolders(pop("sem", KindSemStatus, "", 0, call, ret, OutOK), hs...), limit)
	}
	cases := []verdictCase{
		{"two permits of two, a third refused, a release, a new limit once unused", []Op{
			acq("a", 2, 5, 0, 10, OutOK), acq("b", 2, 6, 11, 12, OutOK), acq("c", 2, 0, 13, 14, OutSemFull),
			acq("c", 3, 0, 15, 16, OutLimitConflict), status(2, 17, 18, Holder{"a", 5}, Holder{"b", 6}),
			pop("sem", KindSemRelease, "a", 5, 19, 20, OutOK), acq("c", 2, 9, 21, 22, OutOK),
			pop("sem", KindSemRelease, "b", 6, 23, 24, OutOK), pop("sem", KindRevoke, "c", 0, 25, 26, OutOK),
			status(0, 27, 28), acq("d", 3, 12, 29, 30, OutOK),
		}, true},
		{"one permit too many", []Op{
			acq("a", 2, 5, 0, 10, OutOK), acq("b", 2, 6, 11, 12, OutOK), acq("c", 2, 7, 13, 14, OutOK),
		}, false},
		{"full while a permit is free", []Op{
			acq("a", 2, 5, 0, 10, OutOK), acq("b", 2, 0, 11, 12, OutSemFull),
		}, false},
		{"a limit conflict on an unused semaphore", []Op{
			acq("a", 2, 5, 0, 10, OutOK), pop("sem", KindSemRelease, "a", 5, 11, 12, OutOK), acq("b", 3, 0, 13, 14, OutLimitConflict),
		}, false},
		{"a read shows a released permit", []Op{
			acq("a", 2, 5, 0, 10, OutOK), pop("sem", KindSemRelease, "a", 5, 11, 12, OutOK), status(2, 13, 14, Holder{"a", 5}),
		}, false},
	}
	checkVerdicts(t, cases, CheckSemaphores)
}

func TestCheckElections_Verdicts(t *testing.T) {
	camp := func(owner, value string, tok uint64, call, ret int64, out string) Op {
		return withValue(pop("elect", KindCampaign, owner, tok, call, ret, out), value)
	}
	procl := func(owner, value string, tok uint64, call, ret int64, out string) Op {
		return withValue(pop("elect", KindProclaim, owner, tok, call, ret, out), value)
	}
	status := func(owner, value string, tok uint64, call, ret int64) Op {
		o := withValue(pop("elect", KindElectStatus, "", tok, call, ret, OutOK), value)
		o.Elected, o.StatusOwner = owner != "", owner
		return o
	}
	cases := []verdictCase{
		{"lead, proclaim, resign, the next leads", []Op{
			camp("a", "a1", 5, 0, 10, OutOK), camp("b", "b1", 0, 11, 12, OutElectionHeld),
			procl("a", "a2", 5, 13, 14, OutOK), status("a", "a2", 5, 15, 16), procl("b", "b2", 5, 17, 18, OutNotHolder),
			pop("elect", KindResign, "a", 5, 19, 20, OutOK), status("", "", 0, 21, 22), camp("b", "b3", 9, 23, 24, OutOK),
		}, true},
		{"two leaders", []Op{
			camp("a", "a1", 5, 0, 10, OutOK), camp("b", "b1", 6, 11, 12, OutOK),
		}, false},
		{"a proclaim changes the token", []Op{
			camp("a", "a1", 5, 0, 10, OutOK), procl("a", "a2", 5, 11, 12, OutOK), status("a", "a2", 7, 13, 14),
		}, false},
		{"a read misses a proclaim", []Op{
			camp("a", "a1", 5, 0, 10, OutOK), procl("a", "a2", 5, 11, 12, OutOK), status("a", "a1", 5, 13, 14),
		}, false},
		{"an ambiguous proclaim either way", []Op{
			camp("a", "a1", 5, 0, 10, OutOK), procl("a", "a2", 5, 11, 12, OutAmbiguous),
			status("a", "a1", 5, 13, 14), pop("elect", KindRevoke, "a", 0, 15, 16, OutOK),
		}, true},
		{"held while nobody leads", []Op{
			camp("a", "a1", 0, 0, 10, OutElectionHeld),
		}, false},
	}
	checkVerdicts(t, cases, CheckElections)
}
