package transport

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/raftlock/raftlock/api"
)

// BrowserPolicy keeps web pages out of a listener (docs/SECURITY.md, "Browsers"): a page
// in any browser on a machine that reaches the node can send it requests, and, through
// DNS rebinding, read the answers. Three checks, in this order, before anything else:
//
//   - Host must be an IP literal, localhost, one of Names (the node's own names), or one
//     of AllowedHosts: a rebinding page's requests carry the attacker's name, which none
//     of these is (421 misdirected_request, naming --allowed-hosts);
//   - a request with an Origin header must come from the listener's own origin (the
//     dashboard, same scheme and Host) or one of AllowedOrigins (403 permission_denied);
//   - with RequireJSON, a POST, PUT, DELETE or PATCH that has a body or names a content
//     type must say application/json (or application/*+json): the three content types a
//     cross-site form may send without asking (text/plain, form-urlencoded, multipart)
//     are refused with 415 unsupported_media_type.
//
// No check sends a CORS header, so a browser never lets a page of another origin read an
// answer, and no preflight is ever granted.
type BrowserPolicy struct {
	// AllowedHosts are further names clients may use in Host (a load balancer's, a
	// Kubernetes Service's): exact, case-insensitive, without port. Empty: none.
	AllowedHosts []string
	// AllowedOrigins are the origins (scheme://host[:port]) whose pages may call the
	// listener besides its own. Empty: none.
	AllowedOrigins []string
	// Names, when set, returns the names the node itself goes by (its advertised HTTP
	// host, the DNS names of its certificate); read at each request, so a certificate
	// reload or an advertised address learnt later counts at once.
	Names func() []string
	// RequireJSON refuses mutating requests whose body is not declared JSON.
	RequireJSON bool
}

// Wrap returns next behind the policy's checks.
func (p *BrowserPolicy) Wrap(next http.Handler) http.Handler {
	hosts := make(map[string]bool, len(p.AllowedHosts))
	for _, h := range p.AllowedHosts {
		if h = normalHost(h); h != "" {
			hosts[h] = true
		}
	}
	origins := make(map[string]bool, len(p.AllowedOrigins))
	for _, o := range p.AllowedOrigins {
		if o = normalOrigin(o); o != "" {
			origins[o] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.check(r, hosts, origins); err != nil {
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *BrowserPolicy) check(r *http.Request, hosts, origins map[string]bool) error {
	if !p.hostAllowed(r.Host, hosts) {
		return api.Errorf(api.CodeMisdirectedRequest, "this node does not answer for the host %s; use its IP address, localhost or a name it advertises or holds in its certificate, or add the name to the node's --allowed-hosts (RAFTLOCK_ALLOWED_HOSTS)", quoteName(r.Host))
	}
	if o, ok := r.Header["Origin"]; ok {
		origin := ""
		if len(o) == 1 {
			origin = normalOrigin(o[0])
		}
		if origin == "" || !(origins[origin] || origin == ownOrigin(r)) {
			return api.Errorf(api.CodePermissionDenied, "requests from web pages of another origin are refused; to allow one, add it to the node's --allowed-origins (RAFTLOCK_ALLOWED_ORIGINS)")
		}
	}
	if p.RequireJSON && mutating(r.Method) {
		ct := r.Header.Get("Content-Type")
		if (ct != "" || r.ContentLength != 0) && !isJSON(ct) {
			return api.Errorf(api.CodeUnsupportedMediaType, "a %s with a body must say Content-Type: application/json (curl: --json '{...}' or -H 'Content-Type: application/json'); a request without a body needs no content type", r.Method)
		}
	}
	return nil
}

// hostAllowed reports whether the Host a request names is one this listener answers for.
// An empty Host (HTTP/1.0) is not a browser's and is allowed.
func (p *BrowserPolicy) hostAllowed(hostport string, hosts map[string]bool) bool {
	h := normalHost(hostport)
	if hostport == "" {
		return true
	}
	if h == "" {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "localhost" || hosts[h] {
		return true
	}
	if p.Names != nil {
		for _, n := range p.Names() {
			if normalHost(n) == h {
				return true
			}
		}
	}
	return false
}

// normalHost returns the host of a Host value or name (lower case, without port,
// brackets or a final dot); "" when there is none.
func normalHost(hostport string) string {
	h := strings.TrimSpace(hostport)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// normalOrigin returns an origin as scheme://host[:port] in lower case, without the
// scheme's default port; "" for anything else (including "null").
func normalOrigin(o string) string {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + withoutDefaultPort(u.Scheme, strings.ToLower(u.Host))
}

// ownOrigin is the origin of the listener as the request addresses it: the dashboard's.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + withoutDefaultPort(scheme, strings.ToLower(r.Host))
}

func withoutDefaultPort(scheme, host string) string {
	if (scheme == "http" && strings.HasSuffix(host, ":80")) || (scheme == "https" && strings.HasSuffix(host, ":443")) {
		return host[:strings.LastIndexByte(host, ':')]
	}
	return host
}

func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	}
	return false
}

// isJSON reports whether a Content-Type value declares JSON: application/json or
// application/*+json, with any parameters.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// ownNames returns the names this node goes by: the host of its advertised HTTP address
// and of its listen address, and the DNS names of its TLS certificate.
func (s *Server) ownNames() []string {
	var out []string
	if s.cfg.Addr != "" {
		out = append(out, s.cfg.Addr)
	}
	if a := s.svc.Routing.HTTPAddr(); a != "" {
		out = append(out, a)
	}
	if s.cfg.TLS != nil {
		if c := s.cfg.TLS.Certificate(); c != nil {
			out = append(out, c.DNSNames...)
		}
	}
	return out
}
