package transport

import (
	"net/http"
	"strconv"

	"github.com/raftlock/raftlock/internal/budget"
)

// Headers of the latency budget (Config.Budget); a server without a recorder ignores
// them.
const (
	// traceHeader carries a follower's trace ID to the leader with a forwarded request, so
	// that the budget can take the leader's part out of the forward.
	traceHeader = "X-Raftlock-Trace"
	// budgetTagHeader is the client's label of a request, kept in its trace so that the
	// client can match its own timing to the server's.
	budgetTagHeader = "X-Raftlock-Budget-Tag"
)

// traced opens a budget trace for every request and closes it once the answer is written.
// It is installed only when Config.Budget is set.
func (s *Server) traced(next http.Handler) http.Handler {
	id := s.svc.Routing.ID()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr := s.cfg.Budget.Start(id)
		tr.Tag = r.Header.Get(budgetTagHeader)
		if p := r.Header.Get(traceHeader); p != "" {
			tr.Parent, _ = strconv.ParseUint(p, 10, 64)
		}
		r = r.WithContext(budget.WithTrace(r.Context(), tr))
		next.ServeHTTP(w, r)
		tr.Finish(r.Pattern)
	})
}

// markDecoded stamps r's trace: the request has been read and decoded.
func markDecoded(r *http.Request) { budget.FromContext(r.Context()).MarkDecoded() }

// traceForward tells the leader which trace of this node the forwarded request out
// continues.
func traceForward(out, in *http.Request) {
	if tr := budget.FromContext(in.Context()); tr != nil {
		out.Header.Set(traceHeader, strconv.FormatUint(tr.ID, 10))
	}
}
