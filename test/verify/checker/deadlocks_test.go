package checker

import "testing"

func lease(owner, fp string) Op {
	return Op{Workload: "set", Kind: KindCreateLease, Owner: owner, Fingerprint: fp, Outcome: OutOK}
}

func wait(o Op, ms int64) Op { o.WaitMs = ms; return o }

func refused(owner, lock string, call, ret int64, cycle ...CycleStep) Op {
	o := wait(sop(KindAcquire, lock, owner, 0, call, ret, OutDeadlock), 1000)
	o.Cycle = cycle
	return o
}

func TestCheckDeadlocks_Verdicts(t *testing.T) {
	base := func() []Op {
		return []Op{
			lease("A", "aaaa0001"), lease("B", "bbbb0002"),
			sop(KindAcquire, "a", "A", 5, 0, 10, OutOK), sop(KindAcquire, "b", "B", 6, 0, 10, OutOK),
		}
	}
	cycle := []CycleStep{{"bbbb0002", "a"}, {"aaaa0001", "b"}}
	cases := []struct {
		name string
		ops  []Op
		kind string // "" for a pass
	}{
		{"a refusal backed by a cycle", append(base(),
			wait(sop(KindAcquire, "b", "A", 0, 20, 1030, OutWaitTimeout), 1000),
			refused("B", "a", 30, 40, cycle...),
			sop(KindRelease, "a", "A", 5, 1040, 1050, OutOK), sop(KindRelease, "b", "B", 6, 1040, 1050, OutOK)), ""},
		{"a refusal while the other lease did not wait", append(base(),
			refused("B", "a", 30, 40, cycle...),
			sop(KindRelease, "a", "A", 5, 1040, 1050, OutOK)), "deadlock_unbacked"},
		{"a refusal after the other lease released", append(base(),
			wait(sop(KindAcquire, "b", "A", 0, 20, 1030, OutWaitTimeout), 1000),
			sop(KindRelease, "a", "A", 5, 22, 25, OutOK),
			refused("B", "a", 30, 40, cycle...)), "deadlock_unbacked"},
		{"a refusal naming an unknown lease", append(base(),
			refused("B", "a", 30, 40, CycleStep{"bbbb0002", "a"}, CycleStep{"cccc0003", "b"})), "deadlock_unbacked"},
		{"two timed-out waits for each other's certainly held locks", append(base(),
			wait(sop(KindAcquire, "b", "A", 0, 20, 1030, OutWaitTimeout), 1000),
			wait(sop(KindAcquire, "a", "B", 0, 30, 1040, OutWaitTimeout), 1000),
			sop(KindRelease, "a", "A", 5, 1100, 1110, OutOK), sop(KindRelease, "b", "B", 6, 1100, 1110, OutOK)), "undetected_cycle"},
		{"two timed-out waits, one behind a holder that let go", append(base(),
			wait(sop(KindAcquire, "b", "A", 0, 20, 1030, OutWaitTimeout), 1000),
			sop(KindRelease, "a", "A", 5, 500, 510, OutOK),
			wait(sop(KindAcquire, "a", "B", 0, 600, 1610, OutWaitTimeout), 1000)), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := CheckDeadlocks(number(c.ops))
			if c.kind == "" && !v.OK() || c.kind != "" && v.Kinds[c.kind] == 0 {
				t.Fatalf("want %q: %s", c.kind, v)
			}
		})
	}
}
