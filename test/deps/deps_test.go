// Package deps checks that the import graph docs/ARCHITECTURE.md draws is the module's
// real one: every arrow of its `deps` block is an import of the code, every import between
// the module's packages is an arrow there, and every arrow points down the page (the one
// direction). The arrow chains written in the prose of README.md, docs/ARCHITECTURE.md and
// docs/DESIGN.md are checked against the same imports.
package deps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/raftlock/raftlock"

// root is the repository's root, from this package's directory.
const root = "../.."

// graph maps a package (its path inside the module) to the packages of the module it
// imports.
type graph map[string][]string

// realGraph returns the imports of the code (not of the tests) of every package of the
// module, between packages of the module, as go list reports them.
func realGraph(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	g := graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := inModule(fields[0])
		g[pkg] = []string{}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"/") {
				g[pkg] = append(g[pkg], inModule(imp))
			}
		}
	}
	return g
}

func inModule(path string) string { return strings.TrimPrefix(path, module+"/") }

// docGraph is the graph a deps block draws, and its packages in the order of their lines.
type docGraph struct {
	edges graph
	order []string
}

// parseDeps reads the one fenced block of doc tagged deps: a line per package, "a -> b, c"
// or "a" alone (no imports); blank lines and lines that start with # are skipped.
func parseDeps(doc string) (docGraph, error) {
	blocks := regexp.MustCompile("(?ms)^```deps\n(.*?)^```").FindAllStringSubmatch(doc, -1)
	if len(blocks) != 1 {
		return docGraph{}, fmt.Errorf("want exactly one ```deps block, found %d", len(blocks))
	}
	d := docGraph{edges: graph{}}
	for i, line := range strings.Split(blocks[0][1], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		from, to, arrow := strings.Cut(line, "->")
		from = strings.TrimSpace(from)
		if !validName(from) {
			return docGraph{}, fmt.Errorf("deps block line %d: %q is not a package path", i+1, from)
		}
		if _, dup := d.edges[from]; dup {
			return docGraph{}, fmt.Errorf("deps block line %d: %s has a line already", i+1, from)
		}
		d.edges[from] = []string{}
		d.order = append(d.order, from)
		if !arrow {
			continue
		}
		for _, dep := range strings.Split(to, ",") {
			dep = strings.TrimSpace(dep)
			if !validName(dep) {
				return docGraph{}, fmt.Errorf("deps block line %d: %q is not a package path", i+1, dep)
			}
			d.edges[from] = append(d.edges[from], dep)
		}
	}
	return d, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)

func validName(s string) bool { return nameRE.MatchString(s) }

// compare returns what differs between the real graph and the one a doc draws: arrows
// missing on either side, packages missing on either side, and arrows that point up.
func compare(real graph, doc docGraph) []string {
	var diffs []string
	for _, pkg := range sortedKeys(real) {
		drawn, ok := doc.edges[pkg]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("package %s is not drawn: add its line (%s)", pkg, line(pkg, real[pkg])))
			continue
		}
		for _, imp := range real[pkg] {
			if !slices.Contains(drawn, imp) {
				diffs = append(diffs, fmt.Sprintf("%s imports %s, but the doc draws no such arrow", pkg, imp))
			}
		}
		for _, dep := range drawn {
			if !slices.Contains(real[pkg], dep) {
				diffs = append(diffs, fmt.Sprintf("the doc draws %s -> %s, but %s does not import %s", pkg, dep, pkg, dep))
			}
		}
	}
	for _, pkg := range doc.order {
		if _, ok := real[pkg]; !ok {
			diffs = append(diffs, fmt.Sprintf("the doc draws package %s, which the module does not have", pkg))
		}
	}
	pos := map[string]int{}
	for i, pkg := range doc.order {
		pos[pkg] = i
	}
	for _, pkg := range doc.order {
		for _, dep := range doc.edges[pkg] {
			if p, ok := pos[dep]; ok && p <= pos[pkg] {
				diffs = append(diffs, fmt.Sprintf("the arrow %s -> %s points up: %s's line must be below %s's", pkg, dep, dep, pkg))
			}
		}
	}
	return diffs
}

func line(pkg string, deps []string) string {
	if len(deps) == 0 {
		return pkg
	}
	return pkg + " -> " + strings.Join(deps, ", ")
}

func sortedKeys(g graph) []string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// chains returns the arrow chains a doc writes in its prose, outside fenced blocks: the
// code spans of packages joined by " -> " (`a -> b -> c`), each step the set of packages
// it names (`a -> {b, c}` or `a -> b, c`: a imports b and c).
func chains(doc string) [][][]string {
	doc = regexp.MustCompile("(?ms)^```.*?^```").ReplaceAllString(doc, "")
	var out [][][]string
	for _, m := range regexp.MustCompile("`([^`\n]* -> [^`\n]*)`").FindAllStringSubmatch(doc, -1) {
		var chain [][]string
		for _, step := range strings.Split(m[1], "->") {
			var set []string
			for _, p := range strings.Split(strings.Trim(strings.TrimSpace(step), "{}"), ",") {
				set = append(set, strings.TrimSpace(p))
			}
			chain = append(chain, set)
		}
		out = append(out, chain)
	}
	return out
}

// spell writes a chain as the doc does.
func spell(c [][]string) string {
	var steps []string
	for _, set := range c {
		if len(set) == 1 {
			steps = append(steps, set[0])
		} else {
			steps = append(steps, "{"+strings.Join(set, ", ")+"}")
		}
	}
	return strings.Join(steps, " -> ")
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImportGraph_MatchesArchitectureDoc: the deps block of docs/ARCHITECTURE.md is the
// module's import graph, arrow for arrow, and draws it top down.
func TestImportGraph_MatchesArchitectureDoc(t *testing.T) {
	doc, err := parseDeps(readDoc(t, "docs/ARCHITECTURE.md"))
	if err != nil {
		t.Fatalf("docs/ARCHITECTURE.md: %v", err)
	}
	for _, d := range compare(realGraph(t), doc) {
		t.Errorf("docs/ARCHITECTURE.md: %s", d)
	}
}

// TestImportGraph_ProseChainsAreImports: every chain `a -> b -> c` that README.md,
// docs/ARCHITECTURE.md or docs/DESIGN.md writes in its prose is a path of real imports
// between packages of the module.
func TestImportGraph_ProseChainsAreImports(t *testing.T) {
	real := realGraph(t)
	for _, name := range []string{"README.md", "docs/ARCHITECTURE.md", "docs/DESIGN.md"} {
		found := chains(readDoc(t, name))
		if name != "docs/ARCHITECTURE.md" && len(found) == 0 {
			t.Errorf("%s writes no dependency chain; the test would check nothing there", name)
		}
		for _, c := range found {
			for i, set := range c {
				for _, pkg := range set {
					if _, ok := real[pkg]; !ok {
						t.Errorf("%s: in `%s`, %s is not a package of the module", name, spell(c), pkg)
					}
				}
				if i == 0 {
					continue
				}
				for _, from := range c[i-1] {
					for _, to := range set {
						if _, ok := real[from]; ok && !slices.Contains(real[from], to) {
							t.Errorf("%s: in `%s`, %s does not import %s", name, spell(c), from, to)
						}
					}
				}
			}
		}
	}
}

// TestCompare_FindsEveryKindOfDifference runs the comparison over a doc that is wrong in
// each way it can be, so that a check that stopped looking would fail here.
func TestCompare_FindsEveryKindOfDifference(t *testing.T) {
	real := graph{"a": {"b", "c"}, "b": {"c"}, "c": {}, "d": {}}
	doc, err := parseDeps("```deps\n# a comment\nb -> c, a\na -> b, x\n\nc\nx\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	got := compare(real, doc)
	want := []string{
		"a imports c, but the doc draws no such arrow",
		"the doc draws a -> x, but a does not import x",
		"the doc draws b -> a, but b does not import a",
		"package d is not drawn: add its line (d)",
		"the doc draws package x, which the module does not have",
		"the arrow a -> b points up: b's line must be below a's",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("compare did not report %q; it reported:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("compare reported %d differences, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	if d, _ := parseDeps("```deps\na\n```\n"); len(compare(graph{"a": {}}, d)) != 0 {
		t.Errorf("a doc that matches reported differences")
	}
	if _, err := parseDeps("no block"); err == nil {
		t.Errorf("a doc without a deps block parsed")
	}
	if _, err := parseDeps("```deps\na -> B c\n```\n"); err == nil {
		t.Errorf("a line that names no package path parsed")
	}
	if c := chains("text `x -> y -> {z, w}` and `u -> v, w`\n```\n`p -> q`\n```\n"); len(c) != 2 || spell(c[0]) != "x -> y -> {z, w}" || spell(c[1]) != "u -> {v, w}" {
		t.Errorf("chains = %q; want x -> y -> {z, w} and u -> {v, w}, none from a fenced block", c)
	}
}
