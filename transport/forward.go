package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// relayed are the response headers copied back from the leader.
var relayed = []string{"Content-Type", "Retry-After", "Allow"}

// forwarded handles err from the node: when it is ErrNotLeader the request is forwarded
// to the leader and the answer relayed, and forwarded returns true.
func (s *Server) forwarded(w http.ResponseWriter, r *http.Request, body []byte, err error) bool {
	if !errors.Is(err, cluster.ErrNotLeader) {
		return false
	}
	s.forward(w, r, body)
	return true
}

// forward sends the request to the leader's HTTP address and relays its answer. The
// forwarded request carries the caller's context, so a caller that goes away cancels the
// leader's work too (a waiting acquire then leaves the queue).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	hops, _ := strconv.Atoi(r.Header.Get(hopHeader))
	if hops >= s.cfg.MaxHops {
		writeError(w, api.Errorf(api.CodeNoLeader, "request forwarded %d times without reaching the leader; an election is settling, retry", hops))
		return
	}
	addr := s.node.LeaderHTTPAddr()
	if addr == "" || addr == s.node.SelfInfo().HTTPAddr {
		writeError(w, cluster.ErrNoLeader)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		writeError(w, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set(hopHeader, strconv.Itoa(hops+1))
	s.met.forwarded.Inc()
	resp, err := s.fwd.Do(req)
	if err != nil {
		s.log.Debug("forwarding to the leader failed", "leader", addr, "error", err)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			// Nothing reached the leader: the request was certainly not applied.
			writeError(w, api.Errorf(api.CodeNoLeader, "the leader at %s could not be reached (%v); retry", addr, err))
			return
		}
		writeError(w, api.Errorf(api.CodeUnknownOutcome, "the connection to the leader at %s failed mid-request (%v); the request may or may not have been applied, and is safe to retry", addr, err))
		return
	}
	defer resp.Body.Close()
	for _, h := range relayed {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.Header().Set("X-Raftlock-Leader", addr)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
