package fsm

import (
	"strings"
	"testing"
)

// withPrimitive returns a copy of primitives whose row named name is changed by edit.
// The copy has its own slices, so that an edit never reaches the real table.
func withPrimitive(t *testing.T, name string, edit func(p *primitive)) []primitive {
	t.Helper()
	prims := make([]primitive, len(primitives))
	found := false
	for i, p := range primitives {
		p.commands = append([]command(nil), p.commands...)
		p.sections = append([]section(nil), p.sections...)
		p.history = append([]historyKind(nil), p.history...)
		if p.name == name {
			edit(&p)
			found = true
		}
		prims[i] = p
	}
	if !found {
		t.Fatalf("no primitive %s", name)
	}
	return prims
}

// TestTables_InitChecks runs the checks that init stops on over the real tables, which
// pass, and over tables with one row doubled or broken, which each check refuses with an
// error that names the row. The panics of init are those errors, so this is what keeps a
// type, snapshot place or history kind from being taken twice.
func TestTables_InitChecks(t *testing.T) {
	registryOf := func(core []command, prims []primitive) error {
		_, err := registry(core, prims)
		return err
	}
	sectionsOf := func(prims []primitive) error {
		_, err := sectionOrder(prims)
		return err
	}
	historyOf := func(prims []primitive) error {
		_, err := historyTable(prims)
		return err
	}
	coreWith := func(rows ...command) []command {
		return append(append([]command(nil), coreCommands...), rows...)
	}
	cases := []struct {
		name string
		err  func() error
		want string // a part of the error; empty: no error
	}{
		{"hooks of the real table", func() error { return checkHooks(primitives) }, ""},
		{"registry of the real tables", func() error { return registryOf(coreCommands, primitives) }, ""},
		{"sections of the real table", func() error { return sectionsOf(primitives) }, ""},
		{"history kinds of the real table", func() error { return historyOf(primitives) }, ""},

		{"a primitive without dropOne", func() error {
			return checkHooks(withPrimitive(t, "election", func(p *primitive) { p.dropOne = nil }))
		}, "primitive election lacks a hook"},
		{"a core type taken twice", func() error {
			again := coreCommands[0]
			again.name = "again"
			return registryOf(coreWith(again), primitives)
		}, "command type 1 (again): taken twice, by create_lease too"},
		{"a primitive's type taken by a core row", func() error {
			return registryOf(coreWith(command{typ: semCommands[0].typ, name: "core", apply: (*state).tick}), primitives)
		}, "(" + semCommands[0].name + "): taken twice, by core too"},
		{"a type with the skippable flag", func() error {
			return registryOf(coreWith(command{typ: FlagSkippable, name: "flagged", apply: (*state).tick}), primitives)
		}, "command type 128 (flagged): out of range"},
		{"a type without a handler", func() error {
			return registryOf(coreWith(command{typ: FlagSkippable - 1, name: "idle"}), primitives)
		}, "command type 127 (idle): without a name or handler"},
		{"a snapshot place taken twice", func() error {
			return sectionsOf(withPrimitive(t, "election", func(p *primitive) {
				p.sections = append(p.sections, numberPart(2, 2, elecFreed))
			}))
		}, "snapshot part of election at version 2, place 2: taken twice, by semaphore too"},
		{"a history kind taken twice", func() error {
			return historyOf(withPrimitive(t, "semaphore", func(p *primitive) {
				p.history = []historyKind{{kind: HistoryMaxHold, name: "sem_max_hold", since: 3}}
			}))
		}, "history kind 9 (sem_max_hold) of semaphore: taken twice, by max_hold_ended too"},
		{"a history kind out of range", func() error {
			return historyOf(withPrimitive(t, "lock", func(p *primitive) {
				p.history = append(p.history, historyKind{kind: historyKindEnd, name: "beyond", since: 3})
			}))
		}, "(beyond) of lock: out of range"},
	}
	for _, c := range cases {
		err := c.err()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
}

// TestTables_SectionOrder checks that the derived parts are those of the rows, every one
// once, in (since, order) order: the order the snapshot writes them in.
func TestTables_SectionOrder(t *testing.T) {
	parts, err := sectionOrder(primitives)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range primitives {
		n += len(p.sections)
	}
	if len(parts) != n || len(snapshotSections) != n {
		t.Fatalf("%d parts derived, %d in snapshotSections, %d in the rows", len(parts), len(snapshotSections), n)
	}
	for i := 1; i < len(parts); i++ {
		a, b := parts[i-1], parts[i]
		if a.since > b.since || a.since == b.since && a.order >= b.order {
			t.Errorf("part %d at (%d, %d) after (%d, %d)", i, b.since, b.order, a.since, a.order)
		}
	}
}
