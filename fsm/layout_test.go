package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// A primitive is one file and one row: the code that names a semaphore or an election
// lives in the primitive's own file and in the row table, and the shared code reaches it
// through the row's hooks (primitives.go). Comments may name them; identifiers may not.
// The patterns catch the words and the abbreviations the code uses for them (sem,
// Sem..., elec, Elec...), as whole words of a camelCase name.
var primitiveWords = []struct {
	file    string
	pattern *regexp.Regexp
}{
	{"semaphores.go", regexp.MustCompile(`(?i:semaphore|permit)|(^sem|Sem)([A-Z_0-9]|$)`)},
	{"elections.go", regexp.MustCompile(`(?i:election|campaign)|(^elec|Elec)([A-Z_0-9]|$)`)},
}

// rowTable is the file of the primitives' row table, where every primitive is named once.
const rowTable = "primitives.go"

// TestLayout_PrimitiveIsOneFileAndOneRow fails on an identifier of the package's code (its
// non-test files) that names a semaphore or an election outside that primitive's file and
// the row table, naming where.
func TestLayout_PrimitiveIsOneFileAndOneRow(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	parsed := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		if name == rowTable {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			for _, w := range primitiveWords {
				if name != w.file && w.pattern.MatchString(id.Name) {
					t.Errorf("%s: %s names the primitive of %s: it belongs there or behind its row in %s", fset.Position(id.Pos()), id.Name, w.file, rowTable)
				}
			}
			return true
		})
	}
	// A glob run from the wrong directory finds nothing and would pass.
	if parsed < 20 {
		t.Fatalf("parsed %d files of the package: not the fsm package's directory", parsed)
	}
}
