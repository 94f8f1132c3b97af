package transport

import (
	"context"
	"embed"
	"net/http"
	"path"
	"strings"

	"github.com/raftlock/raftlock/api"
)

// uiFiles is the dashboard: plain HTML, CSS and JavaScript written for raftlock, with no
// library and no build step, embedded in the binary so that every node serves it and
// nothing is fetched from elsewhere.
//
//go:embed ui
var uiFiles embed.FS

// uiTypes are the content types of the dashboard's files, by extension; a file with any
// other extension is not served.
var uiTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// uiCSP lets the dashboard load scripts, styles and images, and connect, only to the node
// that served it; no inline script or style, no frames, no forms.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// UIFile returns the embedded dashboard file at name (e.g. "index.html"), for tests.
func UIFile(name string) ([]byte, error) { return uiFiles.ReadFile("ui/" + name) }

// redirectToUI answers GET / and HEAD / (ServeMux's GET pattern takes HEAD too) with 302
// Found to /ui/: the dashboard, which needs no token to load. 302 rather than a permanent
// redirect, so that a later release may serve something else at the root without
// browsers having cached the move.
func redirectToUI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Location", "/ui/")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusFound)
}

// uiFile serves GET /ui/ and the dashboard's files under it. The files hold nothing
// secret and need no token; the page asks for one when the API answers 401 or 403.
func uiFile(w http.ResponseWriter, r *http.Request) (call, error) {
	name := strings.TrimPrefix(r.URL.Path, "/ui/")
	if name == "" {
		name = "index.html"
	}
	ctype, ok := uiTypes[path.Ext(name)]
	var body []byte
	var err error
	if ok && !strings.Contains(name, "/") {
		body, err = uiFiles.ReadFile("ui/" + name)
	}
	if !ok || strings.Contains(name, "/") || err != nil {
		return call{}, api.Errorf(api.CodeNotFound, "the dashboard has no file %q; open /ui/", name)
	}
	return call{do: func(context.Context) (any, error) {
		return rawAnswer(func(w http.ResponseWriter) {
			h := w.Header()
			h.Set("Content-Type", ctype)
			h.Set("Content-Security-Policy", uiCSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "no-referrer")
			// The files change with the binary: always revalidate, so an upgraded node
			// serves its own page.
			h.Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body) // the client may be gone; nothing useful to do
		}), nil
	}}, nil
}
