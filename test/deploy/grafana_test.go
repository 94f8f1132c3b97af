package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/raftlock/raftlock/test/testcluster"
)

// promSelector is one vector selector of a PromQL expression: a metric name and its label
// matchers.
type promSelector struct {
	metric   string
	matchers []promMatcher
}

type promMatcher struct {
	label, op, value string
}

// promNonMetrics are the PromQL words that look like metric names but are not: aggregation
// operators, keywords and binary set operators (functions are told apart by their "(").
var promNonMetrics = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true, "atan2": true,
}

// promGroupingWords are followed by a parenthesized list of label names, not an expression.
var promGroupingWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// parsePromQL returns the vector selectors of expr. It reads just enough PromQL for the
// dashboard's expressions: identifiers, function calls, label-name lists, label matchers
// with quoted values, range and subquery brackets, numbers and operators; anything else is
// an error, so that an expression it does not understand cannot pass unchecked.
func parsePromQL(expr string) ([]promSelector, error) {
	var out []promSelector
	isIdentStart := func(r byte) bool { return r == '_' || r == ':' || unicode.IsLetter(rune(r)) }
	isIdent := func(r byte) bool { return isIdentStart(r) || unicode.IsDigit(rune(r)) }
	skipSpace := func(i int) int {
		for i < len(expr) && unicode.IsSpace(rune(expr[i])) {
			i++
		}
		return i
	}
	// quoted reads a "..." or '...' string at i and returns its value and the index after it.
	quoted := func(i int) (string, int, error) {
		q := expr[i]
		for j := i + 1; j < len(expr); j++ {
			switch expr[j] {
			case '\\':
				j++
			case q:
				raw := expr[i : j+1]
				if q == '\'' {
					raw = `"` + strings.ReplaceAll(raw[1:len(raw)-1], `"`, `\"`) + `"`
				}
				v, err := strconv.Unquote(raw)
				return v, j + 1, err
			}
		}
		return "", 0, fmt.Errorf("unterminated string at %d", i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case unicode.IsSpace(rune(c)) || strings.IndexByte("()+-*/%^,=!<>", c) >= 0:
			i++
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed [ at %d", i)
			}
			i += j + 1
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '"' || c == '\'':
			_, next, err := quoted(i)
			if err != nil {
				return nil, err
			}
			i = next
		case c == '{':
			return nil, fmt.Errorf("a selector without a metric name at %d", i)
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := skipSpace(j)
			switch {
			case promGroupingWords[word]:
				if k >= len(expr) || expr[k] != '(' {
					return nil, fmt.Errorf("%s without a label list at %d", word, i)
				}
				end := strings.IndexByte(expr[k:], ')')
				if end < 0 {
					return nil, fmt.Errorf("unclosed label list after %s", word)
				}
				i = k + end + 1
				continue
			case promNonMetrics[word]:
				i = j
				continue
			case k < len(expr) && expr[k] == '(':
				i = j // a function call
				continue
			}
			sel := promSelector{metric: word}
			i = j
			if k < len(expr) && expr[k] == '{' {
				i = k + 1
				for {
					i = skipSpace(i)
					if i < len(expr) && expr[i] == ',' {
						i++
						continue
					}
					if i < len(expr) && expr[i] == '}' {
						i++
						break
					}
					l := i
					for i < len(expr) && isIdent(expr[i]) {
						i++
					}
					label := expr[l:i]
					i = skipSpace(i)
					o := i
					for i < len(expr) && strings.IndexByte("=!~", expr[i]) >= 0 {
						i++
					}
					op := expr[o:i]
					i = skipSpace(i)
					if label == "" || (op != "=" && op != "!=" && op != "=~" && op != "!~") || i >= len(expr) || (expr[i] != '"' && expr[i] != '\'') {
						return nil, fmt.Errorf("bad label matcher in %s at %d", word, l)
					}
					v, next, err := quoted(i)
					if err != nil {
						return nil, err
					}
					sel.matchers = append(sel.matchers, promMatcher{label, op, v})
					i = next
				}
			}
			out = append(out, sel)
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	return out, nil
}

// dashboardExprs returns every PromQL expression of a Grafana dashboard: each target of
// each panel (rows' nested panels included) and each query variable, by where it is.
func dashboardExprs(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	out := map[string]string{}
	var walk func(panels []json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, pr := range panels {
			var p struct {
				Title   string            `json:"title"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					RefID string `json:"refId"`
					Expr  string `json:"expr"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(pr, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				out[fmt.Sprintf("panel %q target %s", p.Title, tg.RefID)] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	// label_values(metric, label) in a query variable names a metric too.
	labelValues := regexp.MustCompile(`label_values\(\s*([^,]+?)\s*,`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := fmt.Sprint(v.Query)
		if m, ok := v.Query.(map[string]any); ok {
			q = fmt.Sprint(m["query"])
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			out[fmt.Sprintf("variable %q", v.Name)] = m[1]
		}
	}
	return out
}

// exposition is a node's /metrics: the label sets of every sample, by sample name.
type exposition map[string][]map[string]string

func parseExposition(t *testing.T, text string) exposition {
	t.Helper()
	out := exposition{}
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+`)
	pair := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	for _, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unreadable /metrics line %q", l)
		}
		labels := map[string]string{}
		for _, p := range pair.FindAllStringSubmatch(m[2], -1) {
			v, err := strconv.Unquote(`"` + p[2] + `"`)
			if err != nil {
				t.Fatalf("label value in %q: %v", l, err)
			}
			labels[p[1]] = v
		}
		out[m[1]] = append(out[m[1]], labels)
	}
	return out
}

// targetLabels are added by Prometheus when it scrapes, so no node exports them.
var targetLabels = map[string]bool{"job": true, "instance": true}

// checkDashboard returns what is wrong with the dashboard's queries against a node's
// metrics: an expression it cannot read, a metric no node exports, or a label matcher
// (= or =~ on an exported label, without a dashboard variable) that no sample matches.
func checkDashboard(t *testing.T, raw []byte, exp exposition) (problems []string, metrics int) {
	t.Helper()
	seen := map[string]bool{}
	exprs := dashboardExprs(t, raw)
	where := make([]string, 0, len(exprs))
	for w := range exprs {
		where = append(where, w)
	}
	sort.Strings(where)
	for _, w := range where {
		sels, err := parsePromQL(exprs[w])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: cannot read %q: %v", w, exprs[w], err))
			continue
		}
		if len(sels) == 0 {
			problems = append(problems, fmt.Sprintf("%s: %q queries no metric", w, exprs[w]))
		}
		for _, s := range sels {
			seen[s.metric] = true
			samples, ok := exp[s.metric]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: metric %s is not exported by a raftlock node", w, s.metric))
				continue
			}
			for _, m := range s.matchers {
				if targetLabels[m.label] || strings.Contains(m.value, "$") || (m.op != "=" && m.op != "=~") {
					continue
				}
				re, err := regexp.Compile("^(?:" + m.value + ")$")
				if m.op == "=" {
					re, err = regexp.Compile("^" + regexp.QuoteMeta(m.value) + "$")
				}
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: bad regular expression %q: %v", w, m.value, err))
					continue
				}
				found := false
				for _, labels := range samples {
					found = found || re.MatchString(labels[m.label])
				}
				if !found {
					problems = append(problems, fmt.Sprintf("%s: no %s sample has %s%s%q", w, s.metric, m.label, m.op, m.value))
				}
			}
		}
	}
	return problems, len(seen)
}

// liveExposition starts one `raftlock serve` process, sends it the requests whose series
// the dashboard shows (an acquire, a refused acquire, a keepalive, an unknown route), and
// returns its /metrics.
func liveExposition(t *testing.T) exposition {
	t.Helper()
	p := testcluster.StartProcesses(t, 1)
	base := p.URL(0)
	do := func(method, path, body string, want int) []byte {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
		return raw
	}
	var g struct {
		LeaseID string `json:"lease_id"`
	}
	if err := json.Unmarshal(do("PUT", "/v1/locks/grafana/a", `{"owner":"t"}`, 200), &g); err != nil {
		t.Fatal(err)
	}
	do("PUT", "/v1/locks/grafana/a", `{"owner":"u"}`, 409)
	do("POST", "/v1/leases/keepalive", `{"lease_id":"`+g.LeaseID+`"}`, 200)
	do("GET", "/v1/no-such-route", "", 404)
	return parseExposition(t, string(do("GET", "/metrics", "", 200)))
}

// TestGrafanaDashboard_QueriesExportedMetrics checks deploy/grafana/raftlock.json against a
// real node: every metric any panel or variable queries is in its /metrics, and every
// fixed label matcher selects a series. A dashboard edited to query a metric that does not
// exist (or a renamed route) fails here; the test shows that on a copy with one metric
// misspelled.
func TestGrafanaDashboard_QueriesExportedMetrics(t *testing.T) {
	raw := []byte(read(t, deployFile("grafana", "raftlock.json")))
	exp := liveExposition(t)
	problems, n := checkDashboard(t, raw, exp)
	for _, p := range problems {
		t.Error(p)
	}
	if n < 10 {
		t.Fatalf("the dashboard queries only %d metrics; did its form change?", n)
	}
	t.Logf("the dashboard's %d queries use %d metrics, all exported", len(dashboardExprs(t, raw)), n)

	// The negative control: the same check on a copy with a misspelled metric and a
	// renamed route must complain about both.
	broken := strings.Replace(string(raw), "raftlock_handovers_total", "raftlock_handover_total", 1)
	broken = strings.Replace(broken, `PUT /v1/locks/{name...}`, `PUT /v1/lock/{name...}`, 1)
	problems, _ = checkDashboard(t, []byte(broken), exp)
	joined := strings.Join(problems, "\n")
	if !strings.Contains(joined, "raftlock_handover_total is not exported") || !strings.Contains(joined, `route="PUT /v1/lock/{name...}"`) {
		t.Fatalf("the broken copy was not caught; problems:\n%s", joined)
	}
}

func TestParsePromQL(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`sum by (code) (rate(a_total{job=~"$job",route="PUT /v1/locks/{name...}"}[$__rate_interval]))`, `a_total{job=~"$job" route="PUT /v1/locks/{name...}"}`},
		{`histogram_quantile(0.99, sum by (route, le) (rate(b_bucket[5m])))`, `b_bucket{}`},
		{`scalar(max(c)) - d{x!="y"} / on(instance) group_left(z) e offset 5m`, `c{} d{x!="y"} e{}`},
		{`rate(f{r=~"POST /v1/leases/(\\{id\\}/)?keepalive"}[1m:10s]) > bool 0.5`, `f{r=~"POST /v1/leases/(\\{id\\}/)?keepalive"}`},
	} {
		sels, err := parsePromQL(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		var got []string
		for _, s := range sels {
			var ms []string
			for _, m := range s.matchers {
				ms = append(ms, m.label+m.op+strconv.Quote(m.value))
			}
			got = append(got, s.metric+"{"+strings.Join(ms, " ")+"}")
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.expr, strings.Join(got, " "), c.want)
		}
	}
	for _, bad := range []string{`{job="x"}`, `a{b=c}`, `a{b="c"`, `rate(a[5m)`} {
		if _, err := parsePromQL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
