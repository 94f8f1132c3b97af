package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/transport"
)

// routesOnly satisfies transport.Routing for building a Server whose route table is read
// but whose handlers, apart from the OpenAPI document, are never called.
type routesOnly struct{ transport.Routing }

// oaServer builds a Server over a node that must not be called.
func oaServer(t *testing.T) *transport.Server {
	t.Helper()
	s, err := transport.NewServer(transport.Config{Services: transport.StubRoles(transport.Services{Routing: routesOnly{}}), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// oaDoc loads the embedded document with kin-openapi and validates it as OpenAPI 3.1.
func oaDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(transport.OpenAPI())
	if err != nil {
		t.Fatalf("loading the OpenAPI document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	return doc
}

// oaPath turns a ServeMux pattern ("PUT /v1/locks/{name...}") into the method and the
// OpenAPI path template ("/v1/locks/{name}").
func oaPath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	return method, strings.ReplaceAll(path, "...}", "}")
}

// oaRouter matches requests the way the server does, by registering every pattern of
// Routes on a ServeMux of its own, so a lock name with slashes finds /v1/locks/{name}.
type oaRouter struct {
	doc *openapi3.T
	mux *http.ServeMux
}

func newOARouter(t *testing.T, doc *openapi3.T) *oaRouter {
	t.Helper()
	r := &oaRouter{doc: doc, mux: http.NewServeMux()}
	for _, p := range oaServer(t).Routes() {
		r.mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	return r
}

// operation returns the documented operation a request reaches, or an error.
func (r *oaRouter) operation(method, target string) (*openapi3.Operation, string, error) {
	req := transport.APIRequest(method, target, nil)
	_, pattern := r.mux.Handler(req)
	if pattern == "" {
		return nil, "", fmt.Errorf("%s %s matches no route", method, target)
	}
	m, path := oaPath(pattern)
	item := r.doc.Paths.Value(path)
	if item == nil || item.GetOperation(m) == nil {
		return nil, "", fmt.Errorf("%s %s (route %s) is not described", method, target, pattern)
	}
	return item.GetOperation(m), pattern, nil
}

// oaValidate checks a JSON text against a schema with JSON Schema 2020-12 semantics (the
// dialect of OpenAPI 3.1).
func oaValidate(schema *openapi3.SchemaRef, raw []byte) error {
	if schema == nil || schema.Value == nil {
		return fmt.Errorf("no schema")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// jsonSchemaOf returns the application/json schema of a body or answer.
func jsonSchemaOf(c openapi3.Content) *openapi3.SchemaRef {
	if mt := c.Get("application/json"); mt != nil {
		return mt.Schema
	}
	return nil
}

// successSchema returns the schema of the operation's 2xx answer.
func successSchema(op *openapi3.Operation) (int, *openapi3.SchemaRef) {
	for code := 200; code < 300; code++ {
		if r := op.Responses.Status(code); r != nil && r.Value != nil {
			return code, jsonSchemaOf(r.Value.Content)
		}
	}
	return 0, nil
}

func TestOpenAPI_DocumentIsValid31(t *testing.T) {
	doc := oaDoc(t)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	// Every operation has an ID, a summary and at least one 2xx answer.
	seen := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" || op.Summary == "" {
				t.Errorf("%s %s: missing operationId or summary", method, path)
			}
			if seen[op.OperationID] {
				t.Errorf("operationId %s is used twice", op.OperationID)
			}
			seen[op.OperationID] = true
			if code, _ := successSchema(op); code == 0 {
				t.Errorf("%s %s: no 2xx answer", method, path)
			}
		}
	}
	bearer := doc.Components.SecuritySchemes["bearerAuth"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" {
		t.Errorf("no http bearer security scheme: %+v", bearer)
	}
	// Tokens are optional: the empty requirement must be one of the alternatives.
	optional := false
	for _, req := range doc.Security {
		optional = optional || len(req) == 0
	}
	if !optional {
		t.Errorf("security %v does not make the token optional", doc.Security)
	}
}

// TestOpenAPI_DescribesEveryRoute checks the document against Routes in both directions.
func TestOpenAPI_DescribesEveryRoute(t *testing.T) {
	doc := oaDoc(t)
	routes := map[string]bool{}
	for _, p := range oaServer(t).Routes() {
		m, path := oaPath(p)
		routes[m+" "+path] = true
		item := doc.Paths.Value(path)
		if item == nil || item.GetOperation(m) == nil {
			t.Errorf("route %s is not in the OpenAPI document (as %s %s)", p, m, path)
		}
	}
	var described []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
			if !routes[method+" "+path] {
				t.Errorf("the OpenAPI document describes %s %s, which the server does not route", method, path)
			}
		}
	}
	sort.Strings(described)
	t.Logf("%d operations described: %s", len(described), strings.Join(described, ", "))
}

func TestOpenAPI_ServedAtV1OpenAPIJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	oaServer(t).Handler().ServeHTTP(rec, transport.APIRequest("GET", "/v1/openapi.json", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET /v1/openapi.json: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if !bytes.Equal(rec.Body.Bytes(), transport.OpenAPI()) {
		t.Fatal("GET /v1/openapi.json does not serve the embedded document")
	}
}

// enumOf returns the error.code enum of an error answer's schema (allOf members included).
func enumOf(s *openapi3.Schema) []string {
	var out []string
	if e := s.Properties["error"]; e != nil && e.Value != nil {
		if c := e.Value.Properties["code"]; c != nil && c.Value != nil {
			for _, v := range c.Value.Enum {
				out = append(out, fmt.Sprint(v))
			}
		}
	}
	return out
}

// TestOpenAPI_ErrorCodesAndStatuses checks the document's error codes against the API's
// catalogue of outcomes (api/outcomes.go): ErrorDetail.code lists exactly the catalogue's
// codes, and each Error<status> answer exactly those with that status; every 429 and 503
// answer documents Retry-After.
func TestOpenAPI_ErrorCodesAndStatuses(t *testing.T) {
	doc := oaDoc(t)
	detail := doc.Components.Schemas["ErrorDetail"].Value.Properties["code"].Value
	var enum []string
	for _, v := range detail.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	byStatus := map[string]string{}
	for name, r := range doc.Components.Responses {
		st, ok := strings.CutPrefix(name, "Error")
		if !ok {
			continue
		}
		status, err := strconv.Atoi(st)
		if err != nil {
			t.Fatalf("response %s: name is not Error<status>", name)
		}
		codes := enumOf(r.Value.Content.Get("application/json").Schema.Value)
		if len(codes) == 0 {
			t.Errorf("response %s narrows no codes", name)
		}
		for _, c := range codes {
			if api.Status(c) != status {
				t.Errorf("response %s lists %s, whose status is %d", name, c, api.Status(c))
			}
			byStatus[c] = name
		}
	}
	catalogued := map[string]bool{}
	for _, o := range api.Outcomes() {
		c := o.Code
		catalogued[c] = true
		if !slices.Contains(enum, c) {
			t.Errorf("error code %s (api/outcomes.go) is not in ErrorDetail.code", c)
		}
		if byStatus[c] == "" {
			t.Errorf("error code %s has no documented answer with status %d", c, o.Status)
		}
	}
	for _, c := range enum {
		if !catalogued[c] {
			t.Errorf("ErrorDetail.code lists %s, which is not in the catalogue (api/outcomes.go)", c)
		}
	}
	for c, name := range byStatus {
		if !catalogued[c] {
			t.Errorf("response %s lists %s, which is not in the catalogue (api/outcomes.go)", name, c)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, status := range []int{429, 503} {
				r := op.Responses.Status(status)
				if r != nil && (r.Value.Headers["Retry-After"] == nil) {
					t.Errorf("%s %s: %d without Retry-After", method, path, status)
				}
			}
		}
	}
}

// readmeExchange is one curl command of README's "Try it" section.
type readmeExchange struct {
	line       int
	method     string
	target     string // path and query
	body       string
	background bool // ends with &: its answer is printed later
}

// shellWords splits a command line the way sh would for the simple lines README uses:
// single and double quotes, and a # comment outside quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote, inWord := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == quote:
			in = false
		case in:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			in, quote, inWord = true, c, true
		case c == '#' && !inWord:
			i = len(s)
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// parseCurl reads a curl line: -X METHOD, -d BODY and the URL (host:port/path, with or
// without a scheme). Like curl, -d without -X means POST.
func parseCurl(t *testing.T, n int, line string) readmeExchange {
	t.Helper()
	words := shellWords(line)
	ex := readmeExchange{line: n}
	if len(words) > 0 && words[len(words)-1] == "&" {
		ex.background = true
		words = words[:len(words)-1]
	}
	for i := 1; i < len(words); i++ {
		switch w := words[i]; {
		case w == "-X" && i+1 < len(words):
			ex.method = words[i+1]
			i++
		case (w == "-d" || w == "--data") && i+1 < len(words):
			ex.body = words[i+1]
			i++
		case strings.HasPrefix(w, "-"):
		default:
			u := strings.TrimPrefix(strings.TrimPrefix(w, "http://"), "https://")
			if j := strings.Index(u, "/"); j >= 0 {
				ex.target = u[j:]
			}
		}
	}
	if ex.method == "" {
		ex.method = "GET"
		if ex.body != "" {
			ex.method = "POST"
		}
	}
	if ex.target == "" {
		t.Fatalf("README line %d: no URL in %q", n, line)
	}
	return ex
}

// abbreviated matches README's shortened lease IDs ("af98..."), which stand for 32 hex
// characters.
var abbreviated = regexp.MustCompile(`"([0-9a-f]+)\.\.\."`)

// expand replaces each abbreviated ID with a full-length one that starts the same way.
func expand(s string) string {
	return abbreviated.ReplaceAllStringFunc(s, func(m string) string {
		hex := abbreviated.FindStringSubmatch(m)[1]
		return `"` + hex + strings.Repeat("0", api.LeaseIDLen-len(hex)) + `"`
	})
}

// readmeTryIt returns the lines of the first sh block of README's "Try it" section.
func readmeTryIt(t *testing.T) ([]string, int) {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "## Try it") {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatal(`README has no "## Try it" section`)
	}
	var block []string
	first := 0
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			break
		}
		if strings.HasPrefix(l, "```") {
			if first > 0 {
				return block, first
			}
			first = i + 2 // 1-based number of the block's first line
			continue
		}
		if first > 0 {
			block = append(block, l)
		}
	}
	t.Fatal(`README's "Try it" section has no closed code block`)
	return nil, 0
}

// TestOpenAPI_ReadmeExamplesValidate checks README's curl walkthrough against the
// document: every request reaches a described operation, every body validates against its
// request schema, and every "# {...}" answer against the 200 schema of the request that
// printed it: the command just before it, or a backgrounded (&) one still pending, whose
// output a terminal shows when it arrives.
func TestOpenAPI_ReadmeExamplesValidate(t *testing.T) {
	doc := oaDoc(t)
	router := newOARouter(t, doc)
	lines, first := readmeTryIt(t)
	var last *readmeExchange
	var pending []readmeExchange
	requests, answers := 0, 0
	for i, l := range lines {
		n := first + i
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "curl "):
			ex := parseCurl(t, n, l)
			requests++
			op, pattern, err := router.operation(ex.method, ex.target)
			if err != nil {
				t.Errorf("README line %d: %v", n, err)
				continue
			}
			if ex.body != "" {
				if op.RequestBody == nil {
					t.Errorf("README line %d: %s takes no body, README sends %s", n, pattern, ex.body)
				} else if err := oaValidate(jsonSchemaOf(op.RequestBody.Value.Content), []byte(expand(ex.body))); err != nil {
					t.Errorf("README line %d: body %s does not match the %s request schema: %v", n, ex.body, pattern, err)
				}
			}
			if ex.background {
				pending = append(pending, ex)
			}
			last = &ex
		case strings.HasPrefix(l, "# {"):
			answers++
			answer := []byte(expand(strings.TrimPrefix(l, "# ")))
			candidates := append([]readmeExchange{}, pending...)
			if last != nil && !last.background {
				candidates = append([]readmeExchange{*last}, candidates...)
			}
			var errs []string
			matched := -1
			for j, c := range candidates {
				op, pattern, err := router.operation(c.method, c.target)
				if err != nil {
					continue
				}
				code, schema := successSchema(op)
				if err := oaValidate(schema, answer); err != nil {
					errs = append(errs, fmt.Sprintf("as the %d answer of %s (line %d): %v", code, pattern, c.line, err))
					continue
				}
				matched = j
				break
			}
			if matched < 0 {
				t.Errorf("README line %d: answer %s matches no request before it:\n%s", n, l, strings.Join(errs, "\n"))
				continue
			}
			if c := candidates[matched]; c.background {
				pending = slices.DeleteFunc(pending, func(p readmeExchange) bool { return p.line == c.line })
			}
		}
	}
	if requests < 5 || answers < 2 {
		t.Fatalf("found %d curl requests and %d answers in README's Try it section; has its form changed?", requests, answers)
	}
	t.Logf("%d README requests and %d answers checked", requests, answers)
}

// readmeTableRoute matches a backticked "METHOD /path" in README's API table.
var readmeTableRoute = regexp.MustCompile("^\\| `(GET|PUT|POST|DELETE) (/[^`]*)`(.*?)\\|")

// TestOpenAPI_ReadmeTableDescribed checks that every route of README's API table, and
// every query parameter it shows, is in the document.
func TestOpenAPI_ReadmeTableDescribed(t *testing.T) {
	doc := oaDoc(t)
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, l := range strings.Split(string(raw), "\n") {
		m := readmeTableRoute.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		method := m[1]
		targets := []string{m[2]}
		// "`GET /healthz`, `/readyz`, `/metrics`": more paths with the same method.
		for _, more := range regexp.MustCompile("`(/[^`]*)`").FindAllStringSubmatch(m[3], -1) {
			targets = append(targets, more[1])
		}
		for _, target := range targets {
			rows++
			path, query, _ := strings.Cut(strings.ReplaceAll(target, "...}", "}"), "?")
			item := doc.Paths.Value(path)
			if item == nil || item.GetOperation(method) == nil {
				t.Errorf("README's table lists %s %s, which the document does not describe", method, path)
				continue
			}
			op := item.GetOperation(method)
			for _, kv := range strings.Split(query, "&") {
				name, _, _ := strings.Cut(kv, "=")
				if name == "" {
					continue
				}
				if op.Parameters.GetByInAndName("query", name) == nil && item.Parameters.GetByInAndName("query", name) == nil {
					t.Errorf("README's table shows ?%s on %s %s, which the document does not describe", name, method, path)
				}
			}
		}
	}
	if rows < 10 {
		t.Fatalf("found only %d routes in README's API table; has its form changed?", rows)
	}
}

// TestOpenAPI_LiveAnswersValidate sends requests to a one-node cluster and checks every
// answer, success or error, against the response the document gives for its status.
func TestOpenAPI_LiveAnswersValidate(t *testing.T) {
	doc := oaDoc(t)
	router := newOARouter(t, doc)
	c := testcluster.StartInProcess(t, 1, nil)
	base := c.URL(0)

	do := func(method, target, body string, want int) []byte {
		t.Helper()
		req, err := http.NewRequest(method, base+target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, target, resp.StatusCode, raw, want)
		}
		var r *openapi3.ResponseRef
		op, pattern, err := router.operation(method, target)
		if err != nil {
			// A method the path does not take: the document's 405 answer.
			r = doc.Components.Responses[fmt.Sprintf("Error%d", resp.StatusCode)]
			pattern = "(no route)"
		} else {
			r = op.Responses.Status(resp.StatusCode)
		}
		if r == nil {
			t.Errorf("%s %s answered %d, which the document does not list for %s: %s", method, target, resp.StatusCode, pattern, raw)
			return raw
		}
		for h := range r.Value.Headers {
			if resp.Header.Get(h) == "" {
				t.Errorf("%s %s: %d without the documented %s header", method, target, resp.StatusCode, h)
			}
		}
		if schema := jsonSchemaOf(r.Value.Content); schema != nil {
			if err := oaValidate(schema, raw); err != nil {
				t.Errorf("%s %s: the %d answer does not match the document: %v\n%s", method, target, resp.StatusCode, err, raw)
			}
		}
		return raw
	}
	field := func(raw []byte, name string) string {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return fmt.Sprint(m[name])
	}

	do("GET", "/healthz", "", 200)
	do("GET", "/readyz", "", 200)
	do("GET", "/v1/cluster", "", 200)
	do("GET", "/v1/openapi.json", "", 200)
	do("GET", "/metrics", "", 200)

	lease := field(do("POST", "/v1/leases", `{"ttl_ms":60000}`, 201), "lease_id")
	do("POST", "/v1/leases", ``, 201)
	do("POST", "/v1/leases/"+lease+"/keepalive", ``, 200)
	do("POST", "/v1/leases/keepalive", `{"lease_id":"`+lease+`"}`, 200)
	do("GET", "/v1/leases/"+lease, ``, 200)
	do("POST", "/v1/leases/lookup?stale", `{"lease_id":"`+lease+`"}`, 200)

	grant := do("PUT", "/v1/locks/accounts/A", `{"lease_id":"`+lease+`","owner":"w1"}`, 200)
	tok := field(grant, "token")
	do("PUT", "/v1/locks/accounts/A", `{"owner":"w2"}`, 409)
	do("PUT", "/v1/locks/accounts/A", `{"owner":"w2","wait_ms":50}`, 409)
	do("GET", "/v1/locks/accounts/A", ``, 200)
	do("GET", "/v1/locks/accounts/A?stale&wait_index=1&wait_ms=20", ``, 200)
	do("GET", "/v1/locks?prefix=accounts/&limit=1", ``, 200)
	do("GET", "/v1/leases/"+lease, ``, 200)
	do("DELETE", "/v1/locks/accounts/A", `{"lease_id":"`+lease+`","token":`+tok+`9}`, 409)
	do("DELETE", "/v1/locks/accounts/A", `{"lease_id":"`+lease+`","token":`+tok+`}`, 200)

	do("PUT", "/v1/locks/x", `{"bogus":1}`, 400)
	do("PUT", "/v1/locks/x", `{"ttl_ms":1}`, 400)
	do("PUT", "/v1/locks/x", `{"request_id":"short"}`, 400)
	do("PUT", "/v1/locks/x", strings.Repeat(" ", api.MaxBodyBytes+1), 413)
	do("GET", "/v1/locks/x?wait_ms=999999", ``, 400)
	do("GET", "/v1/leases/"+strings.Repeat("0", api.LeaseIDLen), ``, 404)
	do("PATCH", "/v1/locks/x", ``, 405)

	do("POST", "/v1/leases/revoke", `{"lease_id":"`+lease+`"}`, 200)
	do("DELETE", "/v1/leases/"+lease, ``, 404)
	lease2 := field(do("POST", "/v1/leases", `{}`, 201), "lease_id")
	do("DELETE", "/v1/leases/"+lease2, ``, 200)

	do("POST", "/v1/cluster/nodes", `{"id":"n9"}`, 400)
	do("PUT", "/v1/cluster/nodes/n1/version", `{"max_version":0}`, 400)

	// The primitives of protocol version 2.
	c.WaitFor(30e9, "protocol version 2", func() bool { return c.Nodes[0].FSM().Version() >= 2 })
	r1 := do("PUT", "/v1/locks/db", `{"mode":"shared","owner":"r1"}`, 200)
	do("PUT", "/v1/locks/db", `{"mode":"shared"}`, 200)
	do("PUT", "/v1/locks/db", `{"lease_id":"`+field(r1, "lease_id")+`"}`, 409)
	do("PUT", "/v1/locks/db", `{"mode":"read"}`, 400)
	do("GET", "/v1/locks/db", ``, 200)
	do("GET", "/v1/locks?prefix=d", ``, 200)
	do("DELETE", "/v1/locks/db", `{"lease_id":"`+field(r1, "lease_id")+`","token":`+field(r1, "token")+`}`, 200)
	p1 := do("PUT", "/v1/semaphores/pool", `{"limit":1,"owner":"p"}`, 200)
	do("PUT", "/v1/semaphores/pool", `{"limit":1}`, 409)
	do("PUT", "/v1/semaphores/pool", `{"limit":2}`, 409)
	do("PUT", "/v1/semaphores/pool", `{}`, 400)
	do("GET", "/v1/semaphores/pool?wait_index=1&wait_ms=20", ``, 200)
	do("GET", "/v1/semaphores/unused", ``, 200)
	do("DELETE", "/v1/semaphores/pool", `{"lease_id":"`+field(p1, "lease_id")+`","token":`+field(p1, "token")+`9}`, 409)
	do("DELETE", "/v1/semaphores/pool", `{"lease_id":"`+field(p1, "lease_id")+`","token":`+field(p1, "token")+`}`, 200)
	e1 := do("PUT", "/v1/elections/svc", `{"value":"10.0.0.1","owner":"n1"}`, 200)
	do("PUT", "/v1/elections/svc", `{"value":"x"}`, 409)
	do("PUT", "/v1/elections/svc", `{"value":"10.0.0.2","lease_id":"`+field(e1, "lease_id")+`","token":`+field(e1, "token")+`}`, 200)
	do("GET", "/v1/elections/svc?stale", ``, 200)
	do("GET", "/v1/elections/nobody", ``, 200)
	do("DELETE", "/v1/elections/svc", `{"lease_id":"`+field(e1, "lease_id")+`","token":`+field(e1, "token")+`}`, 200)
	do("DELETE", "/v1/elections/svc", `{"lease_id":"`+strings.Repeat("0", api.LeaseIDLen)+`","token":1}`, 404)
}
