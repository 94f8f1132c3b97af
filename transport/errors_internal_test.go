package transport

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// parseDir parses the Go files of dir that are not tests.
func parseDir(t *testing.T, dir string) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, p := range pkgs {
		for name, f := range p.Files {
			files[name] = f
		}
	}
	return fset, files
}

// apiCodes returns api's Code* constants, by name, from its source.
func apiCodes(t *testing.T) map[string]string {
	t.Helper()
	_, files := parseDir(t, "../api")
	codes := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if lit, ok := valueAt(vs, i).(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Code") && lit.Kind == token.STRING {
					codes[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
			return true
		})
	}
	if len(codes) < 20 {
		t.Fatalf("found only %d api.Code constants", len(codes))
	}
	return codes
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// codeExprs are the expressions that may give the code of an answer besides an api.Code*
// constant: a line of answers (whose codes are constants) and a relayed code that
// forward.go has matched against constants.
var codeExprs = map[string]bool{"a.code": true, "rd.code": true}

// Every code transport can write is in the catalogue: every api.Code* constant its
// source names, and every code it builds an answer with is such a constant (never a
// string of its own).
func TestOutcomes_EveryCodeTransportWritesIsCatalogued(t *testing.T) {
	codes := apiCodes(t)
	fset, files := parseDir(t, ".")
	named := 0
	check := func(where token.Pos, e ast.Expr) {
		if sel, ok := e.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "api" && strings.HasPrefix(sel.Sel.Name, "Code") {
				return
			}
			if x, ok := sel.X.(*ast.Ident); ok && codeExprs[x.Name+"."+sel.Sel.Name] {
				return
			}
		}
		t.Errorf("%s: an answer's code that is not an api.Code constant of the catalogue", fset.Position(where))
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "api" && strings.HasPrefix(n.Sel.Name, "Code") {
					named++
					code, ok := codes[n.Sel.Name]
					if _, catalogued := api.Lookup(code); !ok || !catalogued {
						t.Errorf("%s: api.%s (%q) is not in the catalogue (api/outcomes.go)", fset.Position(n.Pos()), n.Sel.Name, code)
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) > 0 {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "api" && (sel.Sel.Name == "Errorf" || sel.Sel.Name == "NewError") {
						check(n.Pos(), n.Args[0])
					}
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "api" {
						for _, el := range n.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok && fmt.Sprint(kv.Key) == "Code" {
								check(kv.Pos(), kv.Value)
							}
						}
					}
				}
			}
			return true
		})
	}
	if named < 50 {
		t.Fatalf("found only %d api.Code names in transport", named)
	}
	for _, a := range answers {
		if _, ok := api.Lookup(a.code); !ok {
			t.Errorf("answers: %v is answered with %q, not in the catalogue", a.err, a.code)
		}
	}
}

// clusterErrors are the cluster's errors, by the name it declares them with, each as a
// request meets it (a sentinel that cluster only returns inside its typed error, as that
// error).
var clusterErrors = map[string]error{
	"ErrNotLeader":          cluster.ErrNotLeader,
	"ErrNoLeader":           cluster.ErrNoLeader,
	"ErrUnknownOutcome":     cluster.ErrUnknownOutcome,
	"ErrLeaseNotFound":      cluster.ErrLeaseNotFound,
	"ErrLockHeld":           cluster.ErrLockHeld,
	"ErrWaitTimeout":        cluster.ErrWaitTimeout,
	"ErrNotHolder":          cluster.ErrNotHolder,
	"ErrShutdown":           cluster.ErrShutdown,
	"ErrInvalidCommand":     errors.Join(cluster.ErrInvalidCommand, errors.New("bad field")),
	"ErrHalted":             cluster.ErrHalted,
	"ErrTokenRevoked":       cluster.ErrTokenRevoked,
	"ErrQuotaExceeded":      &cluster.QuotaError{Limit: "max_leases", Value: 3},
	"QuotaError":            &cluster.QuotaError{Limit: "max_locks_per_identity", Value: 3, Used: 3, Identity: "a1"},
	"ErrNotMember":          cluster.ErrNotMember,
	"ErrTransferFailed":     fmt.Errorf("%w: leadership transfer timeout", cluster.ErrTransferFailed),
	"ErrInvalidMember":      fmt.Errorf("%w: no address", cluster.ErrInvalidMember),
	"ErrMemberConflict":     cluster.ErrMemberConflict,
	"ErrDeadlock":           &cluster.DeadlockError{Described: "lease ab waits for lock a"},
	"DeadlockError":         &cluster.DeadlockError{Described: "lease ab waits for lock a"},
	"ErrV3Inactive":         errors.Join(cluster.ErrV3Inactive, &cluster.InactiveError{Need: 3, Lagging: []string{"n2"}}),
	"NamesError":            &cluster.NamesError{Err: cluster.ErrLockHeld, Names: []string{"a", "b"}},
	"ErrACLConflict":        fmt.Errorf("%w: bootstrapped", cluster.ErrACLConflict),
	"ErrACLNotFound":        fmt.Errorf("%w: no policy", cluster.ErrACLNotFound),
	"ErrACLInvalid":         fmt.Errorf("%w: bad rule", cluster.ErrACLInvalid),
	"ErrACLInactive":        cluster.ErrACLInactive,
	"ErrQuotasInactive":     fmt.Errorf("%w; members: [n2]", cluster.ErrQuotasInactive),
	"ErrIndexCompacted":     &cluster.IndexCompactedError{Oldest: 9},
	"IndexCompactedError":   &cluster.IndexCompactedError{Oldest: 9},
	"ErrTooManySubscribers": fmt.Errorf("%w (256)", cluster.ErrTooManySubscribers),
	"ErrSubscriberLagging":  cluster.ErrSubscriberLagging,
	"ErrStreamReset":        cluster.ErrStreamReset,
	"ErrStorage":            cluster.ErrStorage,
	"ErrStorageFailed":      fmt.Errorf("%w: %w", cluster.ErrStorage, cluster.ErrStorageFailed),
	"ErrModeConflict":       cluster.ErrModeConflict,
	"ErrSemaphoreFull":      cluster.ErrSemaphoreFull,
	"ErrLimitConflict":      &cluster.LimitConflictError{Limit: 4},
	"LimitConflictError":    &cluster.LimitConflictError{Limit: 4},
	"ErrElectionHeld":       cluster.ErrElectionHeld,
	"ErrPrimsInactive":      &cluster.InactiveError{Need: 2, Lagging: []string{"n3"}},
	"InactiveError":         &cluster.InactiveError{Need: 2},
}

// notAnswers are the cluster's errors that no request meets: they stop a node from
// starting, or an offline command.
var notAnswers = map[string]bool{
	"ErrDataDirInUse":     true,
	"ErrLogStoreMismatch": true,
	"ErrExistingState":    true,
	"ErrRestoreIndex":     true,
}

// clusterErrorNames returns the names of the errors cluster declares: its exported Err*
// variables and its exported types with an Error method.
func clusterErrorNames(t *testing.T) []string {
	t.Helper()
	_, files := parseDir(t, "../cluster")
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
							names = append(names, n.Name)
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Error" || len(d.Recv.List) != 1 {
					continue
				}
				typ := d.Recv.List[0].Type
				if st, ok := typ.(*ast.StarExpr); ok {
					typ = st.X
				}
				if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
					names = append(names, id.Name)
				}
			}
		}
	}
	if len(names) < 30 {
		t.Fatalf("found only %d cluster errors: %v", len(names), names)
	}
	return names
}

// Every error the cluster declares is answered by a line of errorFor's table (never by
// its fallback, an internal error) with a code of the catalogue, or is one that no request
// meets.
func TestOutcomes_EveryClusterErrorIsAnswered(t *testing.T) {
	declared := map[string]bool{}
	for _, name := range clusterErrorNames(t) {
		declared[name] = true
		err, ok := clusterErrors[name]
		switch {
		case notAnswers[name]:
			continue
		case !ok:
			t.Errorf("cluster declares %s: add it to clusterErrors (answered by a line of errorFor's table, with a code of the catalogue) or to notAnswers", name)
			continue
		}
		ae, known := apiError(err)
		if !known {
			t.Errorf("cluster.%s (%v) is answered by errorFor's fallback (%s: %s), not by a line of its own", name, err, ae.Code, ae.Message)
		}
		if _, ok := api.Lookup(ae.Code); !ok {
			t.Errorf("cluster.%s is answered %q, which is not in the catalogue", name, ae.Code)
		}
		if f := errorFor(err); f.status != api.Status(ae.Code) {
			t.Errorf("cluster.%s: status %d, the catalogue says %d", name, f.status, api.Status(ae.Code))
		}
	}
	for name := range clusterErrors {
		if !declared[name] {
			t.Errorf("clusterErrors names %s, which cluster does not declare", name)
		}
	}
	for name := range notAnswers {
		if !declared[name] {
			t.Errorf("notAnswers names %s, which cluster does not declare", name)
		}
	}
}

// The hold repeats a call only after an answer whose retry class allows it (the
// catalogue's), and, for those, only when a new leader is what the call waits for
// (other_node) or a repeatable call may have been applied (ambiguous).
func TestHold_ReadsTheCatalogue(t *testing.T) {
	reached := forwardError{leader: "n2", addr: "127.0.0.1:1", why: errors.New("reset"), reached: true}
	unreached := forwardError{leader: "n2", addr: "127.0.0.1:1", why: errors.New("refused")}
	cases := []struct {
		name       string
		err        error
		class      api.Retry
		leaderless bool
		ambiguous  bool
	}{
		{"no leader", cluster.ErrNoLeader, api.RetryOtherNode, true, false},
		{"not leader", cluster.ErrNotLeader, api.RetryOtherNode, true, false},
		{"hop limit", hopLimitError{hops: 3}, api.RetryOtherNode, true, false},
		{"leader unreachable", unreached, api.RetryOtherNode, true, false},
		{"relayed no leader", relayedHoldable{status: 503}, api.RetryOtherNode, true, false},
		{"shutting down", cluster.ErrShutdown, api.RetryOtherNode, false, false},
		{"disk", cluster.ErrStorage, api.RetryOtherNode, false, false},
		{"version 2 inactive", &cluster.InactiveError{Need: 2}, api.RetryOtherNode, false, false},
		{"not ready", errNotReady, api.RetryOtherNode, false, false},
		{"in flight", fmt.Errorf("%w (%v)", cluster.ErrUnknownOutcome, cluster.ErrNotLeader), api.RetryAmbiguous, false, true},
		{"forward may have reached", reached, api.RetryAmbiguous, false, true},
		{"caller gone", context.Canceled, api.RetryAmbiguous, false, false},
		{"held limit", heldLimitError{max: 2}, api.RetryAfterDelay, false, false},
		{"lock held", cluster.ErrLockHeld, api.RetryNever, false, false},
		{"quota", &cluster.QuotaError{Limit: "max_leases"}, api.RetryNever, false, false},
		{"repeat denied", relayedDenial{code: api.CodeNotHolder}, api.RetryNever, false, false},
	}
	for _, c := range cases {
		if got := retryOf(c.err); got != c.class {
			t.Errorf("%s: retry class %s, want %s", c.name, got, c.class)
		}
		if leaderless(c.err) != c.leaderless || ambiguous(c.err) != c.ambiguous {
			t.Errorf("%s: leaderless %v, ambiguous %v; want %v, %v", c.name, leaderless(c.err), ambiguous(c.err), c.leaderless, c.ambiguous)
		}
	}
}
