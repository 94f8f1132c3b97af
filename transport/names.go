package transport

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/raftlock/raftlock/api"
)

// namedRoutes are the path prefixes whose rest is a name, and the kind of that name.
var namedRoutes = []struct{ prefix, kind string }{
	{"/v1/locks/", "lock"},
	{"/v1/semaphores/", "semaphore"},
	{"/v1/elections/", "election"},
	{"/v1/history/", "lock"},
}

// checkNames refuses a request whose raw path holds an invalid name, or is not in the
// canonical form the router serves, before the router sees it: ServeMux answers a path
// with an empty, "." or ".." segment with a redirect to its cleaned form, so that "a//b",
// "/abs" or "a/./b" would become another name (or another route) instead of an error.
// The name is checked as the route will read it, each segment percent-decoded, so "%2e"
// counts as ".".
func (s *Server) checkNames(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := checkRawPath(r.URL.EscapedPath()); e != nil {
			writeError(w, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkRawPath checks an escaped request path: the name of a named route against
// api.ValidateNameOf, and every other path for empty (but a trailing one), "." and ".."
// segments. The message never repeats the path, which may hold a lease ID.
func checkRawPath(p string) *api.Error {
	for _, nr := range namedRoutes {
		if rest, ok := strings.CutPrefix(p, nr.prefix); ok {
			name, err := url.PathUnescape(rest)
			if err != nil {
				return api.Errorf(api.CodeInvalidName, "invalid %s name: %s", nr.kind, api.NameRule)
			}
			return api.ValidateNameOf(nr.kind, name)
		}
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, seg := range segs {
		if seg == "" && i < len(segs)-1 || isDotSegment(seg) {
			return api.Errorf(api.CodeInvalidArgument, `the request path has an empty, "." or ".." segment; the server does not clean or redirect paths`)
		}
	}
	return nil
}

// isDotSegment reports whether the escaped segment seg decodes to "." or "..".
func isDotSegment(seg string) bool {
	if d, err := url.PathUnescape(seg); err == nil {
		seg = d
	}
	return seg == "." || seg == ".."
}
