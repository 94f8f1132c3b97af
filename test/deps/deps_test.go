// Package deps checks that the project's import graph follows DESIGN.md:
// cmd -> transport -> cluster -> fsm -> {leases, fencing}, with api, fencing and client
// importable without any server package.
package deps

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/raftlock/raftlock/"

// allowed lists, for each package, the project packages it may import directly (test
// helpers and commands may import anything below them).
var allowed = map[string][]string{
	"api": {},
	// internal/mutant is the mutation campaign's registry (docs/SAFETY.md): a leaf that
	// imports only the standard library, and a constant false in a default build, so that
	// any package may carry a one-line mutant hook.
	"internal/mutant": {},
	// internal/budget records the latency budget (bench/budget): a leaf of the standard
	// library, off (a nil pointer) unless a recorder is configured.
	"internal/budget":     {},
	"leases":              {"internal/mutant"},
	"fencing":             {"internal/mutant"},
	"fsm":                 {"leases", "fencing", "internal/mutant"},
	"cluster":             {"fsm", "leases", "fencing", "tlsconf", "internal/mutant", "internal/budget"},
	"tlsconf":             {},
	"cluster/clustertest": {"cluster", "test/testkit"},
	"transport":           {"cluster", "leases", "api", "tlsconf", "internal/mutant", "internal/budget"},
	"client":              {"api"},
	"ledger":              {"fencing", "api"},
	"fencing/fencingtest": {"fencing"},
	"tlsconf/tlstest":     {"tlsconf"},
	// test/testkit is the tests' port picker and WaitFor: a leaf of the standard library,
	// so that every package's tests (cluster's white-box ones too) and the benchmark
	// programs may use it.
	"test/testkit":           {},
	"test/rawhttp":           {"api", "test/testkit"},
	"test/testcluster":       {"cluster", "cluster/clustertest", "test/rawhttp", "test/testkit", "transport"},
	"test/fault":             {},
	"test/deps":              {},
	"test/mutants":           {"internal/mutant"},
	"test/deploy":            {},
	"test/blackbox":          {},
	"test/netns":             {},
	"test/backup":            {},
	"test/browser":           {"api", "test/testcluster"},
	"cmd/ledger":             {"ledger", "fencing"},
	"cmd/raftlock":           {"api", "client", "cluster", "transport", "fsm", "fencing", "tlsconf"},
	"cmd/raftlock-bench":     {"api", "client", "bench/benchkit", "bench/cpuprof"},
	"bench/benchkit":         {},
	"bench/cpuprof":          {},
	"bench/inproc":           {"bench/benchkit", "cluster", "transport"},
	"bench/budget":           {"api", "bench/benchkit", "cluster", "fsm", "internal/budget", "test/testkit", "transport"},
	"test/verify":            {"api", "client", "fencing", "ledger", "test/testcluster"},
	"test/verify/nemesis":    {},
	"test/verify/checker":    {"api"},
	"test/verify/workload":   {"api", "client", "fencing", "test/verify/checker"},
	"test/verify/harness":    {"api", "client", "fencing", "ledger", "test/rawhttp", "test/testcluster", "test/testkit"},
	"test/verify/bankworker": {"test/verify/workload"},
	// the conformance suite's Go runner: its test drives the client against test/testcluster.
	"clients/conformance/gorunner": {},
}

func TestImportGraphFollowsDesign(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the import-graph table; add it with the imports DESIGN.md allows", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			permitted := false
			for _, a := range ok {
				permitted = permitted || a == dep
			}
			if !permitted {
				t.Errorf("%s imports %s, which breaks the one-way dependency rule", pkg, dep)
			}
		}
	}
}
