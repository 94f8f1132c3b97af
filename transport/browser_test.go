package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/raftlock/raftlock/api"
)

// TestBrowserPolicy: what a web page can make a browser send (another site's Origin, a
// form's content types, a rebinding name in Host) is refused before the handler runs,
// with the API's JSON error and no CORS header; what raftlock's clients, curl --json,
// the dashboard and a bodiless DELETE send goes through.
func TestBrowserPolicy(t *testing.T) {
	p := &BrowserPolicy{
		AllowedHosts:   []string{"raftlock.prod.svc", "LB.Example.com"},
		AllowedOrigins: []string{"https://ops.example.com"},
		Names:          func() []string { return []string{"n1.example.internal:7001", "lock1.internal"} },
		RequireJSON:    true,
	}
	reached := false
	h := p.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true }))
	cases := []struct {
		name, method, host, origin, ct, body string
		want                                 int
		code                                 string
	}{
		{"curl --json", "PUT", "127.0.0.1:7001", "", "application/json", `{}`, 200, ""},
		{"charset", "PUT", "localhost:7001", "", "application/json; charset=utf-8", `{}`, 200, ""},
		{"+json", "POST", "[::1]:7001", "", "application/merge-patch+json", `{}`, 200, ""},
		{"DELETE without body", "DELETE", "127.0.0.1:7001", "", "", "", 200, ""},
		{"GET any content type", "GET", "127.0.0.1:7001", "", "text/plain", "", 200, ""},
		{"curl -d", "PUT", "127.0.0.1:7001", "", "application/x-www-form-urlencoded", `{}`, 415, api.CodeUnsupportedMediaType},
		{"text/plain form", "POST", "127.0.0.1:7001", "", "text/plain", `{"id":"x"}`, 415, api.CodeUnsupportedMediaType},
		{"multipart form", "POST", "127.0.0.1:7001", "", "multipart/form-data; boundary=x", "--x--", 415, api.CodeUnsupportedMediaType},
		{"empty form", "POST", "127.0.0.1:7001", "", "application/x-www-form-urlencoded", "", 415, api.CodeUnsupportedMediaType},
		{"body without type", "POST", "127.0.0.1:7001", "", "", `{}`, 415, api.CodeUnsupportedMediaType},
		{"bad type", "POST", "127.0.0.1:7001", "", "application/jsonx", `{}`, 415, api.CodeUnsupportedMediaType},
		{"rebinding", "GET", "rebind.attacker.example:7001", "", "", "", 421, api.CodeMisdirectedRequest},
		{"rebinding, same origin", "POST", "rebind.attacker.example:7001", "http://rebind.attacker.example:7001", "application/json", `{}`, 421, api.CodeMisdirectedRequest},
		{"localhost subdomain", "GET", "evil.localhost:7001", "", "", "", 421, api.CodeMisdirectedRequest},
		{"advertised name", "GET", "n1.example.internal:7001", "", "", "", 200, ""},
		{"advertised name, another port", "GET", "N1.example.internal.:9999", "", "", "", 200, ""},
		{"certificate name", "GET", "lock1.internal", "", "", "", 200, ""},
		{"allowed host", "GET", "lb.example.com:443", "", "", "", 200, ""},
		{"Kubernetes service", "GET", "raftlock.prod.svc:7001", "", "", "", 200, ""},
		{"IPv6 literal", "GET", "[fe80::1%25eth0]:7001", "", "", "", 200, ""},
		{"other origin", "POST", "127.0.0.1:7001", "https://evil.example", "application/json", `{}`, 403, api.CodePermissionDenied},
		{"other origin GET", "GET", "127.0.0.1:7001", "https://evil.example", "", "", 403, api.CodePermissionDenied},
		{"null origin", "POST", "127.0.0.1:7001", "null", "application/json", `{}`, 403, api.CodePermissionDenied},
		{"same host, other scheme", "POST", "127.0.0.1:7001", "https://127.0.0.1:7001", "application/json", `{}`, 403, api.CodePermissionDenied},
		{"same host, other port", "POST", "127.0.0.1:7001", "http://127.0.0.1:7002", "application/json", `{}`, 403, api.CodePermissionDenied},
		{"dashboard", "POST", "127.0.0.1:7001", "http://127.0.0.1:7001", "application/json", `{}`, 200, ""},
		{"dashboard by name", "GET", "localhost:7001", "http://LOCALHOST:7001", "", "", 200, ""},
		{"allowed origin", "PUT", "127.0.0.1:7001", "https://ops.example.com:443", "application/json", `{}`, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reached = false
			var body *strings.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			r := httptest.NewRequest(c.method, "/v1/locks/a", nil)
			if body != nil {
				r = httptest.NewRequest(c.method, "/v1/locks/a", body)
			}
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.ct != "" {
				r.Header.Set("Content-Type", c.ct)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want || reached != (c.want == 200) {
				t.Fatalf("%d (handler reached: %v), want %d: %s", w.Code, reached, c.want, w.Body)
			}
			for k := range w.Header() {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("answer carries %s", k)
				}
			}
			if c.code != "" && !strings.Contains(w.Body.String(), `"code":"`+c.code+`"`) {
				t.Errorf("body %s, want code %s", w.Body, c.code)
			}
			if c.want == 421 && !strings.Contains(w.Body.String(), "--allowed-hosts") {
				t.Errorf("421 without a hint naming --allowed-hosts: %s", w.Body)
			}
			if c.want == 415 && !strings.Contains(w.Body.String(), "application/json") {
				t.Errorf("415 without a hint: %s", w.Body)
			}
		})
	}
}
