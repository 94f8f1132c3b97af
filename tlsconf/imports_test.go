package tlsconf

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports_OnlyStdlibRaftHclog keeps the package usable from every layer:
// it may import the standard library, hashicorp/raft and go-hclog, nothing
// of raftlock.
func TestImports_OnlyStdlibRaftHclog(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"github.com/hashicorp/raft": true, "github.com/hashicorp/go-hclog": true}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			if !std && !allowed[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
