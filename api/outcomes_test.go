package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite outcomes.json from the catalogue (go generate ./api)")

// retryClasses are the catalogue's retry classes, in the order outcomes.json lists them.
var retryClasses = []Retry{RetryNever, RetryOtherNode, RetryAfterDelay, RetryAmbiguous}

// outcomesJSON is outcomes.json as the catalogue makes it: one outcome a line, so that a
// change to one shows as one line of a diff.
func outcomesJSON(t *testing.T) []byte {
	t.Helper()
	enc := func(v any) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	type entry struct {
		Code    string `json:"code"`
		Status  int    `json:"status"`
		Retry   Retry  `json:"retry"`
		Message string `json:"message"`
	}
	var b strings.Builder
	b.WriteString("{\n")
	b.WriteString(`  "comment": ` + enc("The API's error outcomes, generated from api/outcomes.go (the catalogue; the meaning of each retry class is there) by `go generate ./api`; do not edit. The clients' tests check their error maps against it.") + ",\n")
	b.WriteString(`  "retry_classes": ` + enc(retryClasses) + ",\n")
	b.WriteString(`  "outcomes": [` + "\n")
	for i, o := range Outcomes() {
		b.WriteString("    " + enc(entry{o.Code, o.Status, o.Retry, o.Message}))
		if i < len(outcomes)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  ]\n}\n")
	return []byte(b.String())
}

// outcomes.json is the catalogue, for the clients in other languages: it fails when the
// file drifts from outcomes.go (rewrite it with `go generate ./api`).
func TestOutcomes_JSONIsTheCatalogue(t *testing.T) {
	want := outcomesJSON(t)
	if *update {
		if err := os.WriteFile("outcomes.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("outcomes.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("api/outcomes.json is not the catalogue of api/outcomes.go; run `go generate ./api` (go test ./api -run TestOutcomes_JSONIsTheCatalogue -update)\n--- have\n%s\n--- want\n%s", got, want)
	}
	var parsed struct {
		Outcomes []struct{ Code, Retry string } `json:"outcomes"`
	}
	if err := json.Unmarshal(got, &parsed); err != nil || len(parsed.Outcomes) != len(outcomes) {
		t.Fatalf("outcomes.json does not parse back: %v, %d outcomes", err, len(parsed.Outcomes))
	}
}

// codeConstants returns every Code* string constant of the package's source, by name.
func codeConstants(t *testing.T) map[string]string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, f := range pkgs["api"].Files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	if len(consts) < 20 {
		t.Fatalf("found only %d Code constants: %v", len(consts), consts)
	}
	return consts
}

// Every Code constant is an entry of the catalogue and every entry has its constant, so
// that no code exists in api without its status, retry class and message.
func TestOutcomes_EveryCodeConstantIsCatalogued(t *testing.T) {
	consts := codeConstants(t)
	named := map[string]bool{}
	for name, code := range consts {
		named[code] = true
		if _, ok := Lookup(code); !ok {
			t.Errorf("api.%s = %q is not in the catalogue (api/outcomes.go)", name, code)
		}
	}
	for _, o := range outcomes {
		if !named[o.Code] {
			t.Errorf("catalogued code %q has no Code constant", o.Code)
		}
	}
}

// The catalogue's entries are well formed: one entry per code, an error status, a known
// retry class, a message. A class that allows a repeat goes with 429 or 503, the statuses
// whose answers carry Retry-After; unknown_outcome is the ambiguous one.
func TestOutcomes_EntriesAreWellFormed(t *testing.T) {
	if len(byCode) != len(outcomes) {
		t.Errorf("%d entries for %d codes: a code is listed twice", len(outcomes), len(byCode))
	}
	known := map[Retry]bool{}
	for _, r := range retryClasses {
		known[r] = true
	}
	for _, o := range outcomes {
		if o.Code == "" || o.Message == "" || o.Status < 400 || o.Status > 599 || !known[o.Retry] {
			t.Errorf("malformed entry %+v", o)
		}
		if o.Retry != RetryNever && o.Status != 429 && o.Status != 503 {
			t.Errorf("%s: retry class %s with status %d, whose answers carry no Retry-After", o.Code, o.Retry, o.Status)
		}
		if Status(o.Code) != o.Status {
			t.Errorf("Status(%s) = %d, want %d", o.Code, Status(o.Code), o.Status)
		}
		if e := NewError(o.Code); e.Code != o.Code || e.Message != o.Message {
			t.Errorf("NewError(%s) = %+v", o.Code, e)
		}
	}
	if o, _ := Lookup(CodeUnknownOutcome); o.Retry != RetryAmbiguous {
		t.Errorf("unknown_outcome is %s, want ambiguous", o.Retry)
	}
	if _, ok := Lookup("a_code_of_a_newer_server"); ok || Status("a_code_of_a_newer_server") != 500 {
		t.Error("an unknown code is not catalogued and has status 500")
	}
	o := Outcomes()
	o[0].Code = "changed"
	if outcomes[0].Code == "changed" {
		t.Error("Outcomes returns the catalogue itself, not a copy")
	}
}
