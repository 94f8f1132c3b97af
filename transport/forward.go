package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// hopHeader counts how many times a request has been forwarded.
const hopHeader = "X-Raftlock-Hops"

// relayed are the response headers copied back from the leader.
var relayed = []string{"Content-Type", "Retry-After", "Allow"}

// Why a forwarded request was abandoned (context causes).
var (
	errLeaderChanged = errors.New("leadership moved away from the node the request was forwarded to")
	errForwardBound  = errors.New("the leader did not answer within the forwarding bound")
)

// parseHops reads the hop counter of a forwarded request: a small unsigned integer.
func parseHops(h string) (uint64, error) {
	if h == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(h, 10, 8)
	if err != nil {
		return 0, api.Errorf(api.CodeInvalidArgument, "%s must be a small non-negative integer", hopHeader)
	}
	return v, nil
}

// errCallerGone ends a forward whose caller went away: nobody reads an answer.
var errCallerGone = errors.New("transport: the caller went away")

// forward sends the request to the leader's HTTP address and relays its answer; it
// returns nil once the answer is relayed, or the error to answer (or to hold on) when
// none was.
//
// A forward never waits longer than the leader can keep its office: it is abandoned as
// soon as this node sees leadership move to another node (or to nobody), and in any case
// after the election timeout plus ForwardMargin (plus the request's own wait). The caller
// then gets (unless the request is held and tried again, see hold.go) 503 no_leader when
// the request certainly never left this node, or 503 unknown_outcome when it may have
// reached the leader; both are safe to retry. The
// forwarded request also carries the caller's context, so a caller that goes away cancels
// the leader's work too (a waiting acquire then leaves the queue).
//
// until, when not zero, ends the forward then at the latest: a held request answers
// within its hold. repeat marks a call repeated after an ambiguous outcome: a denial from
// the leader (not_holder, lease_not_found) is then returned as relayedDenial, not relayed.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, body []byte, wait time.Duration, until time.Time, repeat bool) error {
	hops, err := parseHops(r.Header.Get(hopHeader))
	if err != nil {
		return err
	}
	if hops >= uint64(s.cfg.MaxHops) {
		return hopLimitError{hops}
	}
	leaderID, changed := s.svc.Routing.LeaderWatch()
	addr := s.svc.Routing.LeaderHTTPAddr()
	if leaderID == "" || addr == "" || addr == s.svc.Routing.HTTPAddr() {
		return cluster.ErrNoLeader
	}
	bound := s.svc.Routing.ElectionTimeout() + s.cfg.ForwardMargin + wait
	if !until.IsZero() {
		bound = max(min(bound, time.Until(until)), time.Millisecond)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	timer := time.AfterFunc(bound, func() { cancel(errForwardBound) })
	defer timer.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				var id string
				if id, changed = s.svc.Routing.LeaderWatch(); id != leaderID {
					cancel(errLeaderChanged)
					return
				}
			}
		}
	}()

	// Once a connection is in hand the request may reach the leader (a paused leader's
	// kernel buffers it and the process reads it when it resumes).
	var mayHaveReached atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { mayHaveReached.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), r.Method, s.scheme()+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set(hopHeader, strconv.FormatUint(hops+1, 10))
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a) // the leader checks the caller's token again
	}
	// Always say who the caller is: the connection this node forwards over carries this
	// node's certificate, which must not stand in for a caller that is not a node.
	caller := callerNode(r, s.svc.Members)
	if caller == "" {
		caller = notANode
	}
	req.Header.Set(nodeHeader, caller)
	if s.cfg.Budget != nil {
		traceForward(req, r)
	}
	s.met.forwarded.Inc()
	start := time.Now()
	resp, err := s.fwd.Do(req)
	if err != nil {
		why := err
		if cause := context.Cause(ctx); cause != nil {
			why = cause
		}
		s.log.Debug("forwarding to the leader failed", "leader", leaderID, "after", time.Since(start).Round(time.Millisecond), "error", why)
		if r.Context().Err() != nil {
			return errCallerGone
		}
		return forwardError{leader: leaderID, addr: addr, why: why, reached: mayHaveReached.Load()}
	}
	defer resp.Body.Close()
	if repeat && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusConflict) {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var eb api.ErrorBody
		if json.Unmarshal(b, &eb) == nil && (eb.Error.Code == api.CodeNotHolder || eb.Error.Code == api.CodeLeaseNotFound) {
			return relayedDenial{code: eb.Error.Code}
		}
		resp.Body = io.NopCloser(bytes.NewReader(b)) // relayed as it was, below
	}
	if resp.Header.Get(holdableHeader) != "" {
		// Nothing was applied there either: the caller's node may hold and retry.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		h := http.Header{}
		for _, k := range relayed {
			if v := resp.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
		h.Set("X-Raftlock-Leader", addr)
		return relayedHoldable{status: resp.StatusCode, header: h, body: b}
	}
	for _, h := range relayed {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.Header().Set("X-Raftlock-Leader", addr)
	w.WriteHeader(resp.StatusCode)
	buf := relayBufs.Get().(*[]byte)
	_, err = io.CopyBuffer(w, resp.Body, *buf)
	relayBufs.Put(buf)
	if err != nil {
		s.log.Debug("relaying the leader's answer was cut off", "leader", leaderID, "error", fmt.Sprint(context.Cause(ctx)))
	}
	return nil
}

// relayBufs holds the buffers leaders' answers are relayed through. io.Copy would make a
// new 32 KiB buffer for every forwarded request (neither the response writer nor the
// client's body offers ReadFrom or WriteTo): two thirds of the bytes a forward allocated.
// Most answers are far below 4 KiB; a larger one (a long lock list) takes a few writes.
var relayBufs = sync.Pool{New: func() any {
	b := make([]byte, 4<<10)
	return &b
}}
