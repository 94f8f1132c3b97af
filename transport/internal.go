package transport

import (
	"net/http"

	"github.com/raftlock/raftlock/tlsconf"
)

// internalHeaders are the request headers only a node of the cluster sends, on a request
// it forwards: how often it was forwarded (which also exempts it from the per-identity
// caps and from holding, since the first node counted and holds it), who the original
// caller was, and the forwarding node's latency trace.
var internalHeaders = []string{hopHeader, nodeHeader, traceHeader, holdableHeader}

// onlyNodesSpeakForNodes removes the internal headers from every request that a member
// of the cluster did not send, before anything reads them: a client that sets
// X-Raftlock-Hops must not pass for a forwarded request. A member proves itself by the
// node certificate on the connection, so with TLS off nothing is stripped: no request is
// then proven to come from a node, and callerKey believes the hop count for no cap
// (docs/SECURITY.md, "Internal headers").
func (s *Server) onlyNodesSpeakForNodes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.TLS != nil && hasInternal(r.Header) && !s.fromMember(r) {
			for _, h := range internalHeaders {
				r.Header.Del(h)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// fromMember reports whether the connection r came on carries the verified node
// certificate of a current member.
func (s *Server) fromMember(r *http.Request) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return false
	}
	id, ok := tlsconf.NodeIDFromCert(r.TLS.PeerCertificates[0])
	return ok && s.svc.Members.Has(id)
}

func hasInternal(h http.Header) bool {
	for _, k := range internalHeaders {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}
